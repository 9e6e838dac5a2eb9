package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/backup"
	"github.com/idmpctl/idmpctl/internal/capacity"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/progress"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
	"github.com/spf13/cobra"
)

// PurgeOptions are purge's inputs.
type PurgeOptions struct {
	Factory *Factory

	Match, Stream, PID, StatusFlag     string
	OlderThanFlag, MaxRateFlag, Mode   string
	Backup                             string // --backup FILE
	Stale, NoTTL, AnyType, OrphanState bool
	Literal, Force, DryRun, Yes        bool
	Limit                              int64
	LimitSet                           bool // --limit given: 0 is then an error, not "no limit"
	ShowSecrets                        bool
	PowertoolsAttrs                    string

	Ops keyspace.PurgeOptions // parsed --match options
}

// Validate checks flag combinations and values without a server.
func (o *PurgeOptions) Validate() error {
	switch {
	case o.Match == "" && o.Stream == "":
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("purge needs --match PATTERN or --stream STREAM"),
			Hint: "see 'idmpctl purge --help'"}
	case o.Match != "" && o.Stream != "":
		return exit.Usagef("give --match or --stream, not both")
	case o.Stream != "" && (o.StatusFlag != "" || o.Stale || o.NoTTL || o.AnyType || o.Force || o.Literal || o.OlderThanFlag != "" || o.MaxRateFlag != "" || o.LimitSet || o.OrphanState):
		return exit.Usagef("--stream takes only --pid, --dry-run and --yes")
	case o.Match != "" && o.PID != "":
		return exit.Usagef("--pid goes with --stream")
	case o.OrphanState && (o.StatusFlag != "" || o.Stale || o.NoTTL || o.AnyType || o.Force || o.OlderThanFlag != "" || o.MaxRateFlag != "" || o.LimitSet || o.Backup != ""):
		return exit.Usagef("--orphan-state selects the emulated IDMP state of deleted streams: it takes only --match, --literal, --dry-run and --yes")
	case o.Backup != "" && o.Stream != "":
		return exit.Usagef("--backup goes with --match: purge --stream deletes no records")
	case o.Backup != "" && o.DryRun:
		return exit.Usagef("--backup with --dry-run: a dry run deletes nothing to back up")
	case o.Stream != "":
		return nil
	case o.LimitSet && o.Limit == 0:
		return &exit.Error{Code: exit.Usage, Err: errors.New("--limit 0: give a number of candidates above 0, or leave --limit out for no limit"),
			Hint: `an explicit 0 is never "no limit" (an unset variable in --limit "${N:-0}" would purge everything); nothing was deleted`}
	}
	if o.Backup != "" {
		if _, err := os.Lstat(o.Backup); err == nil {
			return exit.Usagef("--backup %s: %v", o.Backup, backup.ErrExists)
		}
	}
	statuses, err := parseStatuses(o.StatusFlag)
	if err != nil {
		return err
	}
	decode, err := parseDecodeOptions(o.PowertoolsAttrs)
	if err != nil {
		return err
	}
	o.Ops = keyspace.PurgeOptions{Pattern: o.Match, Literal: o.Literal, Statuses: statuses, Stale: o.Stale,
		NoTTL: o.NoTTL, AnyType: o.AnyType, Force: o.Force, DryRun: o.DryRun, Limit: o.Limit, Decode: decode}
	if o.OlderThanFlag != "" {
		if o.Ops.OlderThan, err = capacity.ParseDuration("older-than", o.OlderThanFlag, "24h or 90m"); err != nil {
			return usageErr(err)
		}
	}
	if o.MaxRateFlag != "" {
		r, err := capacity.ParseRate("max-rate", o.MaxRateFlag)
		if err != nil {
			return usageErr(err)
		}
		o.Ops.MaxRate, _ = r.Float64()
	}
	return o.Ops.Validate()
}

// NewCmdPurge builds purge; runF replaces the run step in tests.
func NewCmdPurge(f *Factory, runF func(*PurgeOptions) error) *cobra.Command {
	o := &PurgeOptions{Factory: f}
	c := &cobra.Command{
		Annotations: map[string]string{writesAnnotation: writesUnlessDryRun},
		Use:         "purge --match PATTERN [filters] | --stream STREAM [--pid P]",
		Short:       "Delete idempotency records, or clear a stream's IDMP tracking",
		Long: `Delete idempotency records matching a pattern, on every primary of a cluster.
Each deletion is re-checked on the server: a record that changed since it was
scanned is kept and counted as "changed". Only recognised records are deleted
unless --any-type. FLUSHDB/FLUSHALL are never used.

Live work is never purged without --force: a PROCESSING record whose lease or
deadline is still ahead (an idmpctl claim's lease_until, Powertools'
in_progress_expiration, any format's) stays, also on the server's clock at the
re-check; a PROCESSING record with no deadline at all goes only with
--older-than or --force. Records kept as live are counted in the summary.

With --stream, forget a stream's tracked iids (keeping its settings, counters
and entries): retries of earlier messages will no longer dedupe.

Deleting needs --yes unless on a terminal, where it asks; --dry-run shows what
would go. Raw output: "deleted|changed|would-delete<TAB>KEY" per record, and a
summary on stderr ("kept-live" for a record the re-check found live).

` + statusHelp(),
		Example: `  idmpctl purge --match 'idem:*' --status FAILED --older-than 24h --dry-run
  idmpctl purge --match 'idem:*' --stale --yes --max-rate 5k/s
  idmpctl purge --stream orders --yes`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.LimitSet = c.Flags().Changed("limit")
			return runValidated(c, o, runF, purgeRun, o.Validate)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.Match, "match", "", "glob pattern of the keys to purge")
	fl.BoolVar(&o.Literal, "literal", false, "match --match literally (no glob metacharacters)")
	fl.StringVar(&o.StatusFlag, "status", "", statusFlagUsage+"; locks only when LOCKED is named")
	fl.BoolVar(&o.Stale, "stale", false, "only PROCESSING records past their lease or deadline")
	fl.StringVar(&o.OlderThanFlag, "older-than", "", "only records last updated at least this long ago (24h)")
	fl.BoolVar(&o.NoTTL, "no-ttl", false, "only keys without a TTL")
	fl.BoolVar(&o.AnyType, "any-type", false, "also delete keys that are not recognised records")
	fl.BoolVar(&o.OrphanState, "orphan-state", false, "instead: drop the emulated IDMP state of deleted streams (flagged orphan-state) that matches, each state whole")
	fl.BoolVar(&o.Force, "force", false, "also delete live PROCESSING records (under a lease or deadline, or without one) and, with --status LOCKED, locks whose TTL still runs")
	fl.Int64Var(&o.Limit, "limit", 0, "stop after N candidates, N above 0 (default: no limit)")
	fl.StringVar(&o.MaxRateFlag, "max-rate", "", "at most this many deletions per second (5000, 5k/s)")
	fl.StringVar(&o.Stream, "stream", "", "clear this stream's tracked iids instead")
	fl.StringVar(&o.PID, "pid", "", "with --stream: only this producer's iids (emulated mode)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "delete nothing; show what would be deleted")
	fl.BoolVar(&o.Yes, "yes", false, "confirm the deletion")
	fl.StringVar(&o.Backup, "backup", "", "save every record (DUMP, TTL) to this new file before it is deleted; idmpctl restore FILE puts them back")
	addModeFlag(c, &o.Mode)
	addRecordFlags(c, &o.ShowSecrets, &o.PowertoolsAttrs)
	return c
}

func purgeRun(ctx context.Context, o *PurgeOptions) error {
	if o.Stream != "" {
		return purgeStreamRun(ctx, o)
	}
	ctx, stop := untilInterrupted(o.Factory, ctx, nil)
	defer stop()
	conn, err := o.Factory.Conn(ctx)
	if err != nil {
		return err
	}
	if o.OrphanState {
		return purgeOrphanRun(ctx, o, conn)
	}
	return purgeMatchRun(ctx, o, conn)
}

func purgeMatchRun(ctx context.Context, o *PurgeOptions, conn *redisconn.Conn) (err error) {
	f, p := o.Factory, o.Factory.Printer
	defer bulkGC(f.Getenv, 40<<20)()
	if !o.DryRun && !o.Yes {
		// Count first, so the question can say how many and name them.
		count := o.Ops
		count.DryRun = true
		bar, stopProgress := startProgress(p, false, progress.Options{Label: "purge --match (counting)", Unit: "keys"})
		count.Progress = purgeProgress(bar, true)
		var keys view.KeyList
		sum, err := keyspace.Purge(ctx, conn, count, func(it keyspace.PurgeItem) { keys.Add(it.Record.Key) })
		stopProgress()
		if err != nil {
			return exit.Wrap(err, "purge")
		}
		if sum.Matched == 0 {
			return printPurge(p, sum, o, view.KeyList{}, nil)
		}
		what := fmt.Sprintf("delete %s matching %s (%s scanned)", render.N(sum.Matched, "record"), strconv.Quote(o.Match), render.N(sum.Scanned, "key"))
		if err := confirm(f, false, what, "Delete them?", keys); err != nil {
			return exit.Wrap(err, "purge")
		}
	}
	var bw *backup.Writer
	if o.Backup != "" {
		var cerr error
		if bw, cerr = backup.Create(o.Backup, backup.Header{Source: conn.Display, Pattern: o.Match}); cerr != nil {
			return &exit.Error{Code: exit.Config, What: "purge --backup " + o.Backup, Err: cerr, Hint: "nothing was deleted"}
		}
		o.Ops.Backup = bw
		defer func() {
			if cerr := bw.Close(); cerr != nil && err == nil {
				err = &exit.Error{Code: exit.Config, What: "purge --backup " + o.Backup, Err: cerr}
			}
		}()
	}
	bar, stopProgress := startProgress(p, p.Format == render.Raw, progress.Options{Label: "purge --match", Unit: "keys"})
	defer stopProgress()
	o.Ops.Progress = purgeProgress(bar, o.DryRun)
	flush := p.BufferStream()
	var keys view.KeyList                // the keys a view names
	item := &view.PurgeItem{Keys: &keys} // one, shown again for each record
	sum, err := keyspace.Purge(ctx, conn, o.Ops, func(it keyspace.PurgeItem) {
		item.Record, item.Outcome = view.Shown(it.Record, o.ShowSecrets), it.Outcome
		_ = p.Show(item)
	})
	flush()
	stopProgress()
	if err != nil && sum.Scanned == 0 {
		return exit.Wrap(err, "purge") // nothing was looked at: a summary of zeros says nothing
	}
	if perr := printPurge(p, sum, o, keys, bw); err == nil {
		err = perr
	}
	return exit.Wrap(err, "purge")
}

// purgeProgress feeds the progress line: keys scanned, records matched or deleted.
func purgeProgress(bar *progress.Bar, dryRun bool) func(keyspace.PurgeSummary) {
	if bar == nil {
		return nil
	}
	return func(s keyspace.PurgeSummary) {
		switch {
		case dryRun:
			bar.Detail(render.Count(s.Matched) + " matched")
		case s.Changed > 0:
			bar.Detail(render.Count(s.Deleted) + " deleted, " + render.Count(s.Changed) + " changed")
		default:
			bar.Detail(render.Count(s.Deleted) + " deleted")
		}
		bar.Set(s.Scanned, 0)
	}
}

// printPurge prints purge --match's summary, with what --backup saved.
func printPurge(p *render.Printer, s keyspace.PurgeSummary, o *PurgeOptions, keys view.KeyList, bw *backup.Writer) error {
	v := view.Purge{Summary: s, Match: o.Match, DryRun: o.DryRun, Keys: keys, Limit: o.Limit}
	if bw != nil {
		v.Backup = &view.PurgeBackup{File: o.Backup}
		v.Backup.Saved, v.Backup.Kept = bw.Counts()
	}
	return p.Show(v)
}

func purgeStreamRun(ctx context.Context, o *PurgeOptions) error {
	f := o.Factory
	what := "purge --stream " + strconv.Quote(o.Stream)
	rctx, cancel := f.callBound(ctx, 0)
	defer cancel()
	streams, err := openStreams(rctx, f, o.Mode)
	if err != nil {
		return err
	}
	tracked, err := streams.TrackedIIDs(rctx, o.Stream, o.PID)
	if exit.Code(err) == exit.NotFound && streams.HasLeftover(rctx, o.Stream) {
		return purgeLeftoverRun(ctx, o, streams, err)
	}
	if err != nil {
		return err
	}
	status, cleared := "dry-run", tracked
	if !o.DryRun {
		if tracked > 0 {
			change := fmt.Sprintf("forget %s of %s (retries of earlier messages will add again)", render.N(tracked, "tracked iid"), render.Field(o.Stream))
			if err := confirm(f, o.Yes, change, "Forget them?", view.KeyList{}); err != nil {
				return exit.Wrap(err, what)
			}
		}
		wctx, cancel := f.callBound(ctx, 0) // the question took its own time
		defer cancel()
		if cleared, err = streams.ClearTracking(wctx, o.Stream, o.PID); err != nil {
			return exit.Wrap(err, what)
		}
		status = "cleared"
	}
	return f.Printer.Show(view.PurgeStream{Stream: render.Text(o.Stream), Mode: streams.Mode().String(), PID: render.Text(o.PID),
		Status: status, ClearedIIDs: cleared, DryRun: o.DryRun})
}

// purgeLeftoverRun is purge --stream S on a stream that is gone but left
// emulated state (R13): it goes whole, once confirmed, and the command
// exits 66 (missing) either way. --pid, which would leave part of it, and
// --dry-run only say so.
func purgeLeftoverRun(ctx context.Context, o *PurgeOptions, streams *stream.Streams, missing error) error {
	f, what := o.Factory, "purge --stream "+strconv.Quote(o.Stream)
	switch {
	case o.PID != "":
		return exit.WithHint(missing, "the stream does not exist: its leftover emulated IDMP state goes only whole, without --pid; nothing was dropped")
	case o.DryRun:
		return exit.WithHint(missing, "the stream does not exist: with --yes, its leftover emulated IDMP state would be dropped")
	}
	change := fmt.Sprintf("drop the leftover emulated IDMP state of %s, a stream that no longer exists", render.Field(o.Stream))
	if err := confirm(f, o.Yes, change, "Drop it?", view.KeyList{}); err != nil {
		return exit.Wrap(err, what)
	}
	wctx, cancel := f.callBound(ctx, 0)
	defer cancel()
	return streams.DropLeftover(wctx, o.Stream)
}

// purgeOrphanRun is purge --orphan-state: the matching emulated IDMP state
// of deleted streams goes, each state whole, once confirmed.
func purgeOrphanRun(ctx context.Context, o *PurgeOptions, conn *redisconn.Conn) error {
	f, p := o.Factory, o.Factory.Printer
	plan, err := keyspace.FindOrphanState(ctx, conn, keyspace.OrphanOptions{Pattern: o.Match, Literal: o.Literal, Decode: o.Ops.Decode})
	if err != nil {
		return exit.Wrap(err, "purge")
	}
	if plan.Summary.Matched > 0 && !o.DryRun && !o.Yes {
		var listed view.KeyList
		for _, k := range plan.Keys() {
			listed.Add(k)
		}
		what := fmt.Sprintf("drop the emulated IDMP state of %s whose stream is gone (%s matching %s)",
			render.N(int64(plan.States()), "deleted stream"), render.N(plan.Summary.Matched, "key"), strconv.Quote(o.Match))
		if err := confirm(f, false, what, "Drop it?", listed); err != nil {
			return exit.Wrap(err, "purge")
		}
	}
	flush := p.BufferStream()
	var shown view.KeyList
	item := &view.PurgeItem{Keys: &shown}
	sum, err := plan.Drop(ctx, conn, o.DryRun, func(it keyspace.PurgeItem) {
		item.Record, item.Outcome = it.Record, it.Outcome
		_ = p.Show(item)
	})
	flush()
	if err != nil {
		return err
	}
	return printPurge(p, sum, o, shown, nil)
}
