package cmd

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/backup"
	"github.com/idmpctl/idmpctl/internal/capacity"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/progress"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
	"github.com/spf13/cobra"
)

// PurgeOptions are purge's inputs.
type PurgeOptions struct {
	Factory *Factory

	Match, Stream, PID    string
	StatusFlag            string
	Stale, NoTTL, AnyType bool
	OrphanState           bool
	Literal               bool
	OlderThanFlag         string
	MaxRateFlag           string
	Limit                 int64
	DryRun, Yes           bool
	Force                 bool
	Mode                  string
	Backup                string // --backup FILE

	ShowSecrets     bool
	PowertoolsAttrs string

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
	case o.Stream != "" && (o.StatusFlag != "" || o.Stale || o.NoTTL || o.AnyType || o.Force || o.Literal || o.OlderThanFlag != "" || o.MaxRateFlag != "" || o.Limit != 0 || o.OrphanState):
		return exit.Usagef("--stream takes only --pid, --dry-run and --yes")
	case o.Match != "" && o.PID != "":
		return exit.Usagef("--pid goes with --stream")
	case o.OrphanState && (o.StatusFlag != "" || o.Stale || o.NoTTL || o.AnyType || o.Force || o.OlderThanFlag != "" || o.MaxRateFlag != "" || o.Limit != 0 || o.Backup != ""):
		return exit.Usagef("--orphan-state selects the emulated IDMP state of deleted streams: it takes only --match, --literal, --dry-run and --yes")
	case o.Backup != "" && o.Stream != "":
		return exit.Usagef("--backup goes with --match: purge --stream deletes no records")
	case o.Backup != "" && o.DryRun:
		return exit.Usagef("--backup with --dry-run: a dry run deletes nothing to back up")
	case o.Stream != "":
		return nil
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
		d, err := capacity.ParseDuration("older-than", o.OlderThanFlag, "24h or 90m")
		if err != nil {
			return &exit.Error{Code: exit.Usage, Err: err}
		}
		o.Ops.OlderThan = d
	}
	if o.MaxRateFlag != "" {
		r, err := capacity.ParseRate("max-rate", o.MaxRateFlag)
		if err != nil {
			return &exit.Error{Code: exit.Usage, Err: err}
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
		Short:       "Delete idempotency records safely, or clear a stream's IDMP tracking",
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
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			if o.Stream != "" {
				return purgeStreamRun(c.Context(), o)
			}
			if o.OrphanState {
				return purgeOrphanRun(c.Context(), o)
			}
			return purgeMatchRun(c.Context(), o)
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
	fl.Int64Var(&o.Limit, "limit", 0, "stop after N candidates (0: no limit)")
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

func purgeMatchRun(ctx context.Context, o *PurgeOptions) (err error) {
	ctx, stop := untilInterrupted(o.Factory, ctx)
	defer stop()
	f := o.Factory
	p := f.Printer
	conn, err := f.Conn(ctx)
	if err != nil {
		return err
	}
	defer bulkGC(f.Getenv)()
	if !o.DryRun && !o.Yes {
		// Count first, so the question can say how many and name them.
		count := o.Ops
		count.DryRun = true
		bar, stopProgress := startProgress(p, false, progress.Options{Label: "purge --match (counting)", Unit: "keys"})
		count.Progress = purgeProgress(bar, true)
		var keys keyList
		sum, err := keyspace.Purge(ctx, conn, count, func(it keyspace.PurgeItem) { keys.add(it.Record.Key) })
		stopProgress()
		if err != nil {
			return exit.Wrap(err, "purge")
		}
		if sum.Matched == 0 {
			return printPurge(p, sum, o, keyList{}, nil)
		}
		what := fmt.Sprintf("delete %s matching %s (%s scanned)", render.N(sum.Matched, "record"), strconv.Quote(o.Match), render.N(sum.Scanned, "key"))
		if err := confirm(f, false, change{What: what, Question: "Delete them?", Keys: keys.Keys, More: keys.More}); err != nil {
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
	var keys keyList // the keys a view names
	report := purgeItems(p, &keys)
	sum, err := keyspace.Purge(ctx, conn, o.Ops, func(it keyspace.PurgeItem) {
		report(view.Shown(it.Record, o.ShowSecrets), it.Outcome)
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

// purgeItems is the view of a purge's records as they come: a JSON object
// or a raw line each, or, for a table, the keys its summary names (those
// not kept as changed).
func purgeItems(p *render.Printer, keys *keyList) func(records.Record, keyspace.PurgeOutcome) {
	return func(r records.Record, outcome keyspace.PurgeOutcome) {
		switch p.Format {
		case render.JSON:
			_ = p.JSON(purgeItemJSON{Record: view.WithTimes(r), Outcome: outcome})
		case render.Raw:
			p.Line("%s\t%s", outcome, render.Field(r.Key))
		default:
			if outcome != keyspace.PurgeChanged {
				keys.add(r.Key)
			}
		}
	}
}

// purgeItemJSON is one record of purge -o json and its outcome.
type purgeItemJSON struct {
	Record  view.RecordJSON       `json:"record"`
	Outcome keyspace.PurgeOutcome `json:"outcome"`
}

// purgeProgress feeds the progress line: keys scanned, and the records
// matched (a dry run) or deleted so far.
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

// purgeSummaryJSON is purge --match's last -o json object.
type purgeSummaryJSON struct {
	Type    string                `json:"type"` // "summary"
	Summary keyspace.PurgeSummary `json:"summary"`
	DryRun  bool                  `json:"dry_run"`
	Backup  *purgeBackupJSON      `json:"backup,omitempty"`
}

// purgeBackupJSON is what --backup saved.
type purgeBackupJSON struct {
	File  string `json:"file"`
	Saved int64  `json:"saved"` // records written before their delete was sent
	Kept  int64  `json:"kept"`  // of them, kept by the re-check (changed, or live)
}

// printPurge prints purge --match's summary: a view naming the first keys
// (-o table), the summary object (-o json), or a line on stderr (raw,
// whose stdout named every key).
func printPurge(p *render.Printer, s keyspace.PurgeSummary, o *PurgeOptions, keys keyList, bw *backup.Writer) error {
	what, n := "deleted", s.Deleted
	if o.DryRun {
		what, n = "would delete", s.Matched
	}
	var saved *purgeBackupJSON
	if bw != nil {
		saved = &purgeBackupJSON{File: o.Backup}
		saved.Saved, saved.Kept = bw.Counts()
	}
	switch p.Format {
	case render.JSON:
		return p.JSON(purgeSummaryJSON{Type: "summary", Summary: s, DryRun: o.DryRun, Backup: saved})
	case render.Table:
		title := "purge --match " + strconv.Quote(o.Match)
		if o.DryRun {
			title += " (dry run: nothing deleted)"
		}
		// What a user acts on is never cut: the reasons, which name the
		// flag that would change them, wrap; the undo command and the keys
		// run long rather.
		rows := []render.Row{
			{Label: "scanned", Value: render.N(s.Scanned, "key")}, {Label: "matched", Value: render.N(s.Matched, "record")},
			{Label: what, Value: render.N(n, "record")}, {Label: "kept", Value: render.N(s.Kept, "key")},
		}
		if s.Changed > 0 {
			rows = append(rows, render.Row{Label: "changed (kept)", Value: render.N(s.Changed, "record")})
		}
		if s.Unknown > 0 {
			rows = append(rows, render.Row{Label: "unknown", Value: render.N(s.Unknown, "record") + " (re-check sent, never answered: deleted or not)", Fit: render.Wrap})
		}
		if s.LocksKept > 0 {
			rows = append(rows, render.Row{Label: "locks kept", Value: fmt.Sprintf("%s (%s)", render.N(s.LocksKept, "lock"), s.LockReason), Fit: render.Wrap})
		}
		if s.LiveKept > 0 {
			rows = append(rows, render.Row{Label: "live kept", Value: fmt.Sprintf("%s (%s)", render.N(s.LiveKept, "record"), s.LiveReason), Fit: render.Wrap})
		}
		if saved != nil {
			rows = append(rows,
				render.Row{Label: "backup", Value: fmt.Sprintf("%s saved to %s, each before its delete was sent (%s then kept)",
					render.N(saved.Saved, "record"), render.Field(o.Backup), render.Count(saved.Kept)), Fit: render.Wrap},
				render.Row{Label: "undo", Value: "idmpctl restore " + render.ShellWord(o.Backup), Fit: render.Whole})
		}
		for i, l := range keys.lines() {
			label := ""
			if i == 0 {
				label = "keys"
			}
			rows = append(rows, render.Row{Label: label, Value: l, Fit: render.Whole})
		}
		p.View(title, rows)
		return nil
	}
	p.Status("purge: scanned %s, matched %s, %s %s, kept %s, changed %s", render.Count(s.Scanned), render.Count(s.Matched), what,
		render.Count(n), render.Count(s.Kept), render.Count(s.Changed))
	if s.Unknown > 0 {
		p.Status("purge: %s unknown: the re-check was sent but never answered (a timeout or an interrupt), so deleted or not; inspect --match says which are left", render.N(s.Unknown, "record"))
	}
	if s.LocksKept > 0 {
		p.Status("purge: %s kept (%s)", render.N(s.LocksKept, "lock"), s.LockReason)
	}
	if s.LiveKept > 0 {
		p.Status("purge: %s kept (%s)", render.N(s.LiveKept, "live record"), s.LiveReason)
	}
	if saved != nil {
		p.Status("purge: backup %s holds %s, each saved before its delete was sent (%s then kept); put back with: idmpctl restore %s",
			render.Field(o.Backup), render.N(saved.Saved, "record"), render.Count(saved.Kept), render.ShellWord(o.Backup))
	}
	return nil
}

// purgeStreamJSON is purge --stream's -o json.
type purgeStreamJSON struct {
	Stream      string `json:"stream"`
	Mode        string `json:"mode"`
	PID         string `json:"pid"`
	Status      string `json:"status"` // cleared or dry-run
	ClearedIIDs int64  `json:"cleared_iids"`
	DryRun      bool   `json:"dry_run"`
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
	tracked, err := streams.TrackedIIDs(rctx, o.Stream, o.PID, o.DryRun)
	if err != nil {
		return err
	}
	status, cleared := "dry-run", tracked
	if !o.DryRun {
		if tracked > 0 {
			c := change{What: fmt.Sprintf("forget %s of %s (retries of earlier messages will add again)", render.N(tracked, "tracked iid"), render.Field(o.Stream)),
				Question: "Forget them?"}
			if err := confirm(f, o.Yes, c); err != nil {
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
	p := f.Printer
	switch p.Format {
	case render.JSON:
		return p.JSON(purgeStreamJSON{Stream: o.Stream, Mode: streams.Mode.String(), PID: o.PID,
			Status: status, ClearedIIDs: cleared, DryRun: o.DryRun})
	case render.Table:
		v := render.N(cleared, "tracked iid") + " cleared; settings, counters and entries kept"
		if o.DryRun {
			v = "dry run: would clear " + render.N(cleared, "tracked iid")
		}
		p.KV("purge --stream "+render.Field(o.Stream)+" ("+streams.Mode.String()+")", []render.Pair{{"result", v}})
	default:
		p.Line("status\t%s", status)
		p.Line("cleared-iids\t%d", cleared)
	}
	return nil
}
