package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/backup"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/spf13/cobra"
)

// RestoreOptions are restore's inputs.
type RestoreOptions struct {
	Factory *Factory

	File    string
	Replace bool
	DryRun  bool
	Yes     bool

	plan restorePlan // what the file holds, read by Validate
}

// restorePlan is the file as read before anything is restored.
type restorePlan struct {
	header  backup.Header
	records int64             // record lines before badLine
	kept    map[string]string // keys purge kept (or whose fate it did not learn), and why
	badLine *backup.LineError // the first line that is not valid; nil: none
	end     *backup.Entry     // the end line, when the file has one
}

// restoreBatch is how many records one round trip restores.
const restoreBatch = 500

// Validate reads the whole file before any server is contacted: its header,
// the keys purge marked kept, the end line, and the first bad line if any.
func (o *RestoreOptions) Validate() error {
	f, err := os.Open(o.File)
	if err != nil {
		return inputError("restore", err) // 66, as --batch FILE and @FILE
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return exit.New(exit.NotFound, "restore", "%s is a directory, not a backup file", o.File)
	}
	plan := restorePlan{kept: map[string]string{}}
	err = backup.Read(f, func(e backup.Entry) error {
		switch {
		case e.Header != nil:
			plan.header = *e.Header
		case e.Record != nil:
			plan.records++
		case e.Kept != "":
			plan.kept[e.KeptOf] = e.Kept
		case e.End:
			end := e
			plan.end = &end
		}
		return nil
	})
	var le *backup.LineError
	switch {
	case errors.As(err, &le) && le.Line == 1:
		return &exit.Error{Code: exit.Data, What: "restore " + o.File, Err: err, Hint: "restore reads the files purge --backup writes"}
	case errors.As(err, &le):
		plan.badLine = le
	case err != nil:
		return &exit.Error{Code: exit.Usage, What: "restore " + o.File, Err: err}
	}
	o.plan = plan
	return nil
}

// NewCmdRestore builds restore; runF replaces the run step in tests.
func NewCmdRestore(f *Factory, runF func(*RestoreOptions) error) *cobra.Command {
	o := &RestoreOptions{Factory: f}
	c := &cobra.Command{
		Use:         "restore FILE",
		Short:       "Put back the records purge --backup saved",
		Annotations: map[string]string{writesAnnotation: writesUnlessDryRun},
		Long: `Put back the records a purge deleted, from the file purge --backup wrote:
each with RESTORE and the expiry it had (RESTORE ... ABSTTL, on the server's
clock), to its node in a cluster.

A key that exists is never overwritten unless --replace, which is as careful
as purge: it first looks which keys exist now and would be overwritten (a
live claim among them, maybe), names them and asks on a terminal, and needs
--yes otherwise; a key that appears after that look is not overwritten.
The summary counts what was replaced apart from what was restored where its
key was missing. A record whose TTL
ran out since the backup is not restored; a record the purge kept (it
changed, or was live) is skipped; a record whose re-check went unanswered
(the purge timed out or was interrupted: deleted or not, it did not learn)
is restored only where its key is missing, even with --replace, as is every
record of a file without its end line (a killed purge). The file is read whole first: a bad or
truncated line is reported with its number, the records before it are
restored and nothing from it on (exit 65).

Raw output: "restored|replaced|existing|expired|kept<TAB>KEY" per record
(a dry run: "would-restore", or "would-replace" for a key --replace would
overwrite), and a summary on stderr.`,
		Example: `  idmpctl purge --match 'idem:*' --status FAILED --backup purge-2026-11-23.ndjson --yes
  idmpctl restore purge-2026-11-23.ndjson --dry-run
  idmpctl restore purge-2026-11-23.ndjson
  idmpctl restore purge-2026-11-23.ndjson --replace --yes`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.File = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return restoreRun(c.Context(), o)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&o.Replace, "replace", false, "overwrite keys that exist (RESTORE ... REPLACE)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "restore nothing; say what would be restored")
	fl.BoolVar(&o.Yes, "yes", false, "with --replace: overwrite the keys that exist without asking (needed when stdin is not a terminal)")
	return c
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

func (s *RestoreSummary) count(o keyspace.RestoreOutcome) {
	switch o {
	case keyspace.Restored, keyspace.WouldRestore:
		s.Restored++
	case keyspace.Replaced, keyspace.WouldReplace:
		s.Replaced++
	case keyspace.Existing:
		s.Existing++
	case keyspace.Expired:
		s.Expired++
	case keyspace.Failed:
		s.Failed++
	}
}

func restoreRun(ctx context.Context, o *RestoreOptions) error {
	ctx, stop := untilInterrupted(o.Factory, ctx)
	defer stop()
	fct := o.Factory
	p := fct.Printer
	conn, err := fct.Conn(ctx)
	if err != nil {
		return err
	}
	// --replace overwrites only what the user agreed to: the keys that
	// exist now, named first, asked about on a terminal (else --yes).
	var agreed map[string]bool
	if o.Replace && !o.DryRun {
		if agreed, err = o.confirmReplace(ctx, conn); err != nil {
			return err
		}
	}
	r, err := keyspace.NewRestorer(ctx, conn, keyspace.RestoreOptions{Replace: o.Replace, DryRun: o.DryRun})
	if err != nil {
		return err
	}
	sum := RestoreSummary{DryRun: o.DryRun, Complete: o.plan.end != nil && o.plan.badLine == nil}
	flush := bufferStream(p)
	report := func(key string, line int, outcome string) {
		switch p.Format {
		case render.JSON:
			_ = p.JSON(map[string]any{"key": key, "line": line, "outcome": outcome})
		case render.Raw:
			p.Line("%s\t%s", outcome, render.Field(key))
		}
	}
	records, runErr := o.walk(ctx, func(key string, line int) {
		sum.Kept++
		report(key, line, "kept")
	}, func(batch []backup.Record, lines []int, missingOnly []bool) error {
		for i, rec := range batch {
			if agreed != nil && !agreed[rec.Key] {
				missingOnly[i] = true // it did not exist when the user was asked
			}
		}
		outs, err := r.RestoreUnless(ctx, batch, missingOnly)
		for i, out := range outs {
			sum.count(out)
			report(batch[i].Key, lines[i], string(out))
		}
		return err
	})
	sum.Records = records
	flush()
	if perr := printRestore(p, sum, o); perr != nil && runErr == nil {
		runErr = perr
	}
	if runErr != nil {
		return runErr
	}
	if bad := o.plan.badLine; bad != nil {
		// Only a cut last line is known to be a record whose delete was
		// never sent; a bad line elsewhere was written whole, and deleted.
		hint := fmt.Sprintf("the summary above counts what was restored; mend or remove line %d and run restore again (what it restored is then skipped as existing)", bad.Line)
		if bad.Truncated {
			hint = "the summary above counts what was restored; a cut last line is what a killed purge leaves, and that record was never deleted"
		}
		return &exit.Error{Code: exit.Data, What: "restore " + o.File,
			Err:  fmt.Errorf("%s: the records before it were restored, nothing from line %d on", bad.Error(), bad.Line),
			Hint: hint}
	}
	if o.plan.end == nil {
		what := "every complete record in it was read"
		if o.Replace {
			what += ", and restored only where its key was missing: --replace does not apply to a cut file, whose last records the purge may have kept"
		}
		p.Warnf("%s has no end line: the purge that wrote it did not close it (it was killed?); %s", o.File, what)
	}
	return nil
}

// confirmReplace looks which keys of the file --replace would overwrite
// (a dry run: EXISTS), and when there are any, names them and asks on a
// terminal, or needs --yes. It returns those keys: the run overwrites no
// other (one that appears after the look is skipped as existing).
func (o *RestoreOptions) confirmReplace(ctx context.Context, conn *redisconn.Conn) (map[string]bool, error) {
	look, err := keyspace.NewRestorer(ctx, conn, keyspace.RestoreOptions{Replace: true, DryRun: true})
	if err != nil {
		return nil, err
	}
	agreed := map[string]bool{}
	var keys keyList
	_, err = o.walk(ctx, func(string, int) {}, func(batch []backup.Record, _ []int, missingOnly []bool) error {
		outs, err := look.RestoreUnless(ctx, batch, missingOnly)
		for i, out := range outs {
			if out == keyspace.WouldReplace {
				agreed[batch[i].Key] = true
				keys.add(batch[i].Key)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(agreed) == 0 {
		return agreed, nil
	}
	what := fmt.Sprintf("restore --replace would overwrite %s that exist now with what %s saved", render.N(int64(len(agreed)), "key"), render.Field(o.File))
	if err := confirm(o.Factory, o.Yes, change{What: what, Question: "Overwrite them?", Keys: keys.Keys, More: keys.More}); err != nil {
		return nil, err
	}
	return agreed, nil
}

// walk reads the file's records up to its bad line (Validate found it):
// a record the purge kept goes to kept; the others to send, in batches of
// restoreBatch, each with missingOnly set where it must not be written
// over an existing key, --replace or not. It returns how many records it
// read.
func (o *RestoreOptions) walk(ctx context.Context, kept func(key string, line int), send func(batch []backup.Record, lines []int, missingOnly []bool) error) (int64, error) {
	f, err := os.Open(o.File)
	if err != nil {
		return 0, inputError("restore", err)
	}
	defer f.Close()
	var records int64
	var batch []backup.Record
	var lines []int
	var missingOnly []bool // the purge did not learn their fate: never over an existing key
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := send(batch, lines, missingOnly)
		batch, lines, missingOnly = batch[:0], lines[:0], missingOnly[:0]
		return err
	}
	stopAt := 0
	if o.plan.badLine != nil {
		stopAt = o.plan.badLine.Line
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
		reason, marked := o.plan.kept[e.Record.Key]
		if marked && reason != backup.KeptUnknown {
			kept(e.Record.Key, e.Line)
			return nil
		}
		batch, lines = append(batch, *e.Record), append(lines, e.Line)
		// A file without its end line was cut by a killed purge: the
		// re-check of its last chunk may have kept records it never got to
		// mark, and chunks of a cluster's nodes interleave, so no record of
		// such a file is written over an existing key, --replace or not.
		missingOnly = append(missingOnly, marked || o.plan.end == nil)
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
		err = nil // the bad line Validate found
	}
	switch {
	case err == nil:
		return records, flush()
	case errors.As(err, &le):
		return records, &exit.Error{Code: exit.Data, What: "restore " + o.File, Err: fmt.Errorf("%v (the file changed while it was restored)", err)}
	}
	return records, err
}

func printRestore(p *render.Printer, s RestoreSummary, o *RestoreOptions) error {
	restored, replaced := "restored", "replaced"
	if s.DryRun {
		restored, replaced = "would restore", "would replace"
	}
	switch p.Format {
	case render.JSON:
		return p.JSON(struct {
			Type    string         `json:"type"` // "summary"
			Summary RestoreSummary `json:"summary"`
		}{"summary", s})
	case render.Table:
		pairs := []render.Pair{
			{"records", strconv.FormatInt(s.Records, 10)},
			{restored, p.Good(strconv.FormatInt(s.Restored, 10))},
		}
		if o.Replace {
			pairs = append(pairs, render.Pair{replaced + " (existed)", strconv.FormatInt(s.Replaced, 10)})
		}
		pairs = append(pairs, []render.Pair{
			{"skipped, existing", strconv.FormatInt(s.Existing, 10)},
			{"skipped, expired meanwhile", strconv.FormatInt(s.Expired, 10)},
			{"skipped, kept by purge", strconv.FormatInt(s.Kept, 10)},
		}...)
		if s.Failed > 0 {
			pairs = append(pairs, render.Pair{"failed", p.Bad(strconv.FormatInt(s.Failed, 10))})
		}
		p.KV("restore "+render.Field(o.File), pairs)
		return nil
	}
	failed := ""
	if s.Failed > 0 {
		failed = ", " + render.Count(s.Failed) + " failed"
	}
	counts := restored + " " + render.Count(s.Restored)
	if o.Replace {
		counts += ", " + replaced + " " + render.Count(s.Replaced)
	}
	p.Status("restore: %s: %s, skipped %s existing, %s expired meanwhile, %s kept by purge%s",
		render.N(s.Records, "record"), counts, render.Count(s.Existing), render.Count(s.Expired), render.Count(s.Kept), failed)
	return nil
}
