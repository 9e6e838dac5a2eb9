package view

import (
	"slices"
	"strconv"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/render"
)

// Migrate is migrate's result for one stream: what moved, what stays
// emulated (each kept iid) and why.
type Migrate struct{ stream.MigrateResult }

func (m Migrate) JSON() any { return m.MigrateResult }

func (m Migrate) Table(p *render.Printer) error {
	r := m.MigrateResult
	status := map[string]string{
		"none":    "no emulated IDMP state: nothing to do",
		"foreign": "the emulated state under this name belongs to another stream (\"s\" and \"{s}\" share it): migrate that one",
		"stale":   "the emulated state was a deleted stream's: dropped",
		"done":    p.Good("migrated: no emulated state is left"),
		"kept":    p.Warn("migrated in part: " + render.N(int64(len(r.Kept)), "iid") + " stay emulated (below)"),
	}[r.Status]
	if r.DryRun {
		status = "dry run, nothing changed: " + map[string]string{
			"none":    "no emulated IDMP state: nothing to do",
			"foreign": "the emulated state under this name belongs to another stream: migrate that one",
			"stale":   "the emulated state was a deleted stream's: it would be dropped",
			"done":    "everything would move: no emulated state would be left",
			"kept":    "would move in part: " + render.N(int64(len(r.Kept)), "iid") + " would stay emulated (below)",
		}[r.Status]
	}
	settings := map[string]string{
		"equal":   "equal",
		"set":     "set to the emulated ones where wider than the server's defaults (XCFGSET, native tracking was empty)",
		"native":  "the native ones stay (at least as wide as the emulated ones)",
		"blocked": p.Warn("not moved: native tracking holds iids that XCFGSET would clear, or the stream's own native ones are narrower; 'idmpctl cfgset' applies the emulated ones when you accept that"),
	}[r.Settings]
	pairs := []render.Pair{{"result", status}}
	if r.Settings != "" { // none were compared: no state, or another stream's
		pairs = append(pairs, render.Pair{"settings", settings + " (emulated " + strconv.FormatInt(r.Duration, 10) + "s/" + strconv.FormatInt(r.MaxSize, 10) +
			", native " + strconv.FormatInt(r.Native.Duration, 10) + "s/" + strconv.FormatInt(r.Native.MaxSize, 10) + ")"})
	}
	p.KV("migrate "+render.Field(r.Stream), append(pairs,
		render.Pair{"recorded", render.N(r.Recorded, "iid") + " (XIDMPRECORD; native iids-added counts them)"},
		render.Pair{"dropped", render.N(r.Dropped, "expired iid")}))
	if len(r.Kept) > 0 {
		rows := make([][]string, 0, len(r.Kept))
		var why []render.Row
		for _, k := range r.Kept {
			// The local clock time, as ls -l shows one: the result has
			// no server time to count "in 4m" from.
			at := time.UnixMilli(k.ExpiresMS).Local().Format("Jan _2 15:04:05")
			rows = append(rows, []string{render.Field(k.PID), render.Field(k.IID), k.ID, at, k.Why})
			if !slices.ContainsFunc(why, func(w render.Row) bool { return w.Label == k.Why }) {
				why = append(why, render.Row{Label: k.Why, Value: k.Describe()})
			}
		}
		// An iid is its pid and iid, and why it stays (the lines below
		// say more): never left out.
		cols := []render.Column{{Head: "PID"}, {Head: "IID"}, {Head: "ENTRY", Drop: 2}, {Head: "EXPIRES", Drop: 1}, {Head: "WHY"}}
		if err := p.Table(cols, rows); err != nil {
			return err
		}
		p.View("", why)
	}
	return nil
}

func (m Migrate) Raw(p *render.Printer) error {
	r := m.MigrateResult
	dry := ""
	if r.DryRun {
		// A dry run's line must not read as the real run's.
		dry = "\tdry-run"
	}
	p.Line("%s\t%s\t%s\t%d\t%d\t%d%s", r.Stream, r.Status, r.Settings, r.Recorded, len(r.Kept), r.Dropped, dry)
	for _, k := range r.Kept {
		p.Line("kept\t%s\t%s\t%s\t%s\t%s\t%s", r.Stream, k.PID, k.IID, k.ID,
			time.UnixMilli(k.ExpiresMS).UTC().Format(time.RFC3339), k.Why)
	}
	return nil
}
