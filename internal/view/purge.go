package view

// purge: each record as it comes (PurgeItem), the summary of purge --match
// (Purge), and purge --stream's result (PurgeStream).

import (
	"fmt"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/render"
)

// PurgeItem is one record of a purge and its outcome, as they come: a JSON
// object or a raw line, or a key in Keys for the table's summary. One is
// set for each record and shown again.
type PurgeItem struct {
	Record  records.Record
	Outcome keyspace.PurgeOutcome
	Keys    *KeyList
}

type purgeItemJSON struct {
	Record  RecordJSON            `json:"record"`
	Outcome keyspace.PurgeOutcome `json:"outcome"`
}

func (v *PurgeItem) JSON() any { return purgeItemJSON{Record: WithTimes(v.Record), Outcome: v.Outcome} }

func (v *PurgeItem) Table(*render.Printer) error {
	if v.Outcome != keyspace.PurgeChanged {
		v.Keys.Add(v.Record.Key)
	}
	return nil
}

func (v *PurgeItem) Raw(p *render.Printer) error {
	p.Line("%s\t%s", v.Outcome, render.Field(v.Record.Key))
	return nil
}

// Purge is purge --match's summary: a view naming the first keys (-o
// table), the summary object (-o json), or lines on stderr (raw, whose
// stdout named every key). Backup is what --backup saved (nil: none).
type Purge struct {
	Summary keyspace.PurgeSummary
	Match   string
	DryRun  bool
	Keys    KeyList
	Backup  *PurgeBackup
	Limit   int64 // --limit (0: none)
}

// limited says where --limit stopped the purge, and what it left: the
// records read past it were not acted on, and the rest never read.
func (v Purge) limited() string {
	left := ""
	if n := v.Summary.PastLimit; n > 0 {
		left = "left " + render.N(n, "more matching record") + " as they are, and "
	}
	return fmt.Sprintf("stopped at --limit %d: %sdid not look at the keys not yet scanned", v.Limit, left)
}

// PurgeBackup is what --backup saved.
type PurgeBackup struct {
	File  string `json:"file"`
	Saved int64  `json:"saved"` // records written before their delete was sent
	Kept  int64  `json:"kept"`  // of them, kept by the re-check (changed, or live)
}

// deleted is what the purge did to the records it matched, and how many.
func (v Purge) deleted() (string, int64) {
	if v.DryRun {
		return "would delete", v.Summary.Matched
	}
	return "deleted", v.Summary.Deleted
}

// JSON is purge --match's last -o json object.
func (v Purge) JSON() any {
	return struct {
		Type    string                `json:"type"` // "summary"
		Summary keyspace.PurgeSummary `json:"summary"`
		DryRun  bool                  `json:"dry_run"`
		Backup  *PurgeBackup          `json:"backup,omitempty"`
	}{"summary", v.Summary, v.DryRun, v.Backup}
}

func (v Purge) Table(p *render.Printer) error {
	s, saved := v.Summary, v.Backup
	what, n := v.deleted()
	title := "purge --match " + strconv.Quote(v.Match)
	if v.DryRun {
		title += " (dry run: nothing deleted)"
	}
	// What a user acts on is never cut: the reasons, which name the
	// flag that would change them, wrap; the undo command and the keys
	// run long rather.
	rows := []render.Row{
		{Label: "scanned", Value: render.N(s.Scanned, "key")}, {Label: "matched", Value: render.N(s.Matched, "record")},
		{Label: what, Value: render.N(n, "record")}, {Label: "kept", Value: render.N(s.Kept, "key")},
	}
	wrapped := func(on bool, label, value string) {
		if on {
			rows = append(rows, render.Row{Label: label, Value: value, Fit: render.Wrap})
		}
	}
	wrapped(s.Changed > 0, "changed (kept)", render.N(s.Changed, "record"))
	wrapped(s.Limited, "limited", v.limited())
	wrapped(s.Unknown > 0, "unknown", render.N(s.Unknown, "record")+" (re-check sent, never answered: deleted or not)")
	wrapped(s.LocksKept > 0, "locks kept", fmt.Sprintf("%s (%s)", render.N(s.LocksKept, "lock"), s.LockReason))
	wrapped(s.LiveKept > 0, "live kept", fmt.Sprintf("%s (%s)", render.N(s.LiveKept, "record"), s.LiveReason))
	if saved != nil {
		rows = append(rows,
			render.Row{Label: "backup", Value: fmt.Sprintf("%s saved to %s, each before its delete was sent (%s then kept)",
				render.N(saved.Saved, "record"), render.Field(saved.File), render.Count(saved.Kept)), Fit: render.Wrap},
			render.Row{Label: "undo", Value: "idmpctl restore " + render.ShellWord(saved.File), Fit: render.Whole})
	}
	label := "keys"
	for _, l := range v.Keys.Lines() {
		rows = append(rows, render.Row{Label: label, Value: l, Fit: render.Whole})
		label = ""
	}
	p.View(title, rows)
	return nil
}

func (v Purge) Raw(p *render.Printer) error {
	s, saved := v.Summary, v.Backup
	what, n := v.deleted()
	p.Status("purge: scanned %s, matched %s, %s %s, kept %s, changed %s", render.Count(s.Scanned), render.Count(s.Matched), what,
		render.Count(n), render.Count(s.Kept), render.Count(s.Changed))
	status := func(on bool, format string, args ...any) {
		if on {
			p.Status("purge: "+format, args...)
		}
	}
	status(s.Limited, "%s", v.limited())
	status(s.Unknown > 0, "%s unknown: the re-check was sent but never answered (a timeout or an interrupt), so deleted or not; inspect --match says which are left", render.N(s.Unknown, "record"))
	status(s.LocksKept > 0, "%s kept (%s)", render.N(s.LocksKept, "lock"), s.LockReason)
	status(s.LiveKept > 0, "%s kept (%s)", render.N(s.LiveKept, "live record"), s.LiveReason)
	if saved != nil {
		p.Status("purge: backup %s holds %s, each saved before its delete was sent (%s then kept); put back with: idmpctl restore %s",
			render.Field(saved.File), render.N(saved.Saved, "record"), render.Count(saved.Kept), render.ShellWord(saved.File))
	}
	return nil
}

// PurgeStream is purge --stream's result: the tracked iids it cleared (or
// would clear).
type PurgeStream struct {
	Stream      render.Text `json:"stream"`
	Mode        string      `json:"mode"`
	PID         render.Text `json:"pid"`
	Status      string      `json:"status"` // cleared or dry-run
	ClearedIIDs int64       `json:"cleared_iids"`
	DryRun      bool        `json:"dry_run"`
}

func (v PurgeStream) JSON() any { return v }

func (v PurgeStream) Table(p *render.Printer) error {
	result := render.N(v.ClearedIIDs, "tracked iid") + " cleared; settings, counters and entries kept"
	if v.DryRun {
		result = "dry run: would clear " + render.N(v.ClearedIIDs, "tracked iid")
	}
	p.KV("purge --stream "+render.Field(string(v.Stream))+" ("+v.Mode+")", []render.Pair{{"result", result}})
	return nil
}

func (v PurgeStream) Raw(p *render.Printer) error {
	p.Line("status\t%s", v.Status)
	p.Line("cleared-iids\t%d", v.ClearedIIDs)
	return nil
}
