package keyspace

// restore FILE as a whole: batches of records, one round trip each
// (Restorer.RestoreUnless), by the file's backup.Plan.

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/idmpctl/idmpctl/internal/backup"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// KeptByPurge is the outcome of a record purge kept after saving it.
const KeptByPurge RestoreOutcome = "kept"

// restoreBatch is how many records one round trip restores.
const restoreBatch = 500

// RestoreFileOptions say what to restore and how.
type RestoreFileOptions struct {
	// Name is the file as errors name it; Open opens it again for each
	// pass (Plan was read by a first).
	Name string
	Open func() (io.ReadCloser, error)
	Plan *backup.Plan

	Replace bool
	DryRun  bool
	// Agreed, with Replace: the only keys that may be overwritten (what
	// KeysToReplace found and the user agreed to); nil: no such limit.
	Agreed map[string]bool
}

// RestoreItem is one record of the file and what became of it.
type RestoreItem struct {
	Key     string
	Line    int
	Outcome RestoreOutcome
}

// RestoreSummary counts a restore.
type RestoreSummary struct {
	Records  int64 `json:"records"`  // record lines read (before any bad line)
	Restored int64 `json:"restored"` // where the key was missing
	Replaced int64 `json:"replaced"` // over a key that existed (--replace)
	Existing int64 `json:"skipped_existing"`
	Expired  int64 `json:"expired"`
	Kept     int64 `json:"skipped_kept"`
	Failed   int64 `json:"failed,omitempty"`
	DryRun   bool  `json:"dry_run,omitempty"`
	Complete bool  `json:"complete"` // the file has its end line and no bad line
}

func (s *RestoreSummary) count(o RestoreOutcome) {
	switch o {
	case Restored, WouldRestore:
		s.Restored++
	case Replaced, WouldReplace:
		s.Replaced++
	case Existing:
		s.Existing++
	case Expired:
		s.Expired++
	case Failed:
		s.Failed++
	case KeptByPurge:
		s.Kept++
	}
}

// RestoreFile restores the file's records up to its bad line (see
// RestoreStopped), emitting each with its outcome in file order. The summary
// counts what was done, also when an error stopped it.
func RestoreFile(ctx context.Context, c *redisconn.Conn, opts RestoreFileOptions, emit func(RestoreItem)) (RestoreSummary, error) {
	sum := RestoreSummary{DryRun: opts.DryRun, Complete: opts.Plan.Complete()}
	r, err := NewRestorer(ctx, c, RestoreOptions{Replace: opts.Replace, DryRun: opts.DryRun})
	if err != nil {
		return sum, err
	}
	records, err := walkBackup(ctx, opts, func(key string, line int) {
		sum.count(KeptByPurge)
		emit(RestoreItem{Key: key, Line: line, Outcome: KeptByPurge})
	}, func(batch []backup.Record, lines []int, missingOnly []bool) error {
		for i, rec := range batch {
			if opts.Agreed != nil && !opts.Agreed[rec.Key] {
				missingOnly[i] = true // it did not exist when the user was asked
			}
		}
		outs, err := r.RestoreUnless(ctx, batch, missingOnly)
		for i, out := range outs {
			sum.count(out)
			emit(RestoreItem{Key: batch[i].Key, Line: lines[i], Outcome: out})
		}
		return err
	})
	sum.Records = records
	return sum, err
}

// RestoreStopped is the error (exit.Data) of a restore whose file has a bad
// line, once the records before it were sent; nil without one.
func RestoreStopped(name string, plan *backup.Plan) error {
	bad := plan.BadLine
	if bad == nil {
		return nil
	}
	// Only a cut last line is known to be a record whose delete was never
	// sent; a bad line elsewhere was written whole, and deleted.
	hint := fmt.Sprintf("the summary above counts what was restored; mend or remove line %d and run restore again (what it restored is then skipped as existing)", bad.Line)
	if bad.Truncated {
		hint = "the summary above counts what was restored; a cut last line is what a killed purge leaves, and that record was never deleted"
	}
	return &exit.Error{Code: exit.Data, What: "restore " + name,
		Err:  fmt.Errorf("%s: the records before it were restored, nothing from line %d on", bad.Error(), bad.Line),
		Hint: hint}
}

// KeysToReplace lists, in file order (twice for a key saved twice), the keys
// --replace would overwrite now (EXISTS): what a confirmation names.
func KeysToReplace(ctx context.Context, c *redisconn.Conn, opts RestoreFileOptions) ([]string, error) {
	look, err := NewRestorer(ctx, c, RestoreOptions{Replace: true, DryRun: true})
	if err != nil {
		return nil, err
	}
	var keys []string
	_, err = walkBackup(ctx, opts, func(string, int) {}, func(batch []backup.Record, _ []int, missingOnly []bool) error {
		outs, err := look.RestoreUnless(ctx, batch, missingOnly)
		for i, out := range outs {
			if out == WouldReplace {
				keys = append(keys, batch[i].Key)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return keys, nil
}

// walkBackup reads the file's records up to its bad line: those purge kept
// go to kept, the others to send in batches with their missingOnly. It
// returns how many records it read.
func walkBackup(ctx context.Context, opts RestoreFileOptions, kept func(key string, line int), send func(batch []backup.Record, lines []int, missingOnly []bool) error) (int64, error) {
	f, err := opts.Open()
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var records int64
	var batch []backup.Record
	var lines []int
	var missingOnly []bool
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := send(batch, lines, missingOnly)
		batch, lines, missingOnly = batch[:0], lines[:0], missingOnly[:0]
		return err
	}
	stopAt := 0
	if opts.Plan.BadLine != nil {
		stopAt = opts.Plan.BadLine.Line
	}
	errStop := errors.New("stop")
	err = backup.Read(f, func(e backup.Entry) error {
		if stopAt > 0 && e.Line >= stopAt {
			return errStop
		}
		if e.Record == nil {
			return nil
		}
		records++
		if opts.Plan.KeptByPurge(e.Record.Key) {
			kept(e.Record.Key, e.Line)
			return nil
		}
		batch, lines = append(batch, *e.Record), append(lines, e.Line)
		missingOnly = append(missingOnly, opts.Plan.MissingOnly(e.Record.Key))
		if len(batch) >= restoreBatch {
			if err := flush(); err != nil {
				return err
			}
		}
		return ctx.Err()
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	var le *backup.LineError
	if errors.As(err, &le) && le.Line == stopAt {
		err = nil // the plan's bad line
	}
	switch {
	case err == nil:
		return records, flush()
	case errors.As(err, &le):
		return records, &exit.Error{Code: exit.Data, What: "restore " + opts.Name, Err: fmt.Errorf("%v (the file changed while it was restored)", err)}
	}
	return records, err
}
