package view

import "github.com/idmpctl/idmpctl/internal/render"

// CfgSet is cfgset's result (and calc-maxsize --apply's): the settings
// before and after, and the iids the change cleared.
type CfgSet struct {
	Stream      render.Text    `json:"stream"`
	Mode        string         `json:"mode"`
	Status      string         `json:"status"`
	Before      map[string]int `json:"before"`
	After       map[string]int `json:"after"`
	ClearedIIDs int64          `json:"cleared_iids"`
}

func (r CfgSet) JSON() any { return r }

func (r CfgSet) Table(p *render.Printer) error {
	texts := func(m map[string]int) [2]string {
		d, s := settings(p, int64(m["idmp-duration"]), int64(m["idmp-maxsize"]))
		return [2]string{d, s}
	}
	before, after := texts(r.Before), texts(r.After)
	arrow := func(i int) string {
		if before[i] == after[i] {
			return after[i] + " (unchanged)"
		}
		return before[i] + " -> " + p.Good(after[i])
	}
	status := r.Status
	switch r.Status {
	case "changed":
		status = p.Warn("changed: " + render.N(r.ClearedIIDs, "tracked iid") + " cleared")
	case "dry-run":
		status = p.Warn("dry run: nothing changed; the change would clear " + render.N(r.ClearedIIDs, "tracked iid"))
	case "unchanged":
		status = "unchanged: same values, nothing cleared"
	}
	// The result is a sentence to read to its end (what a change clears):
	// it wraps rather than being cut.
	p.View("cfgset "+render.Field(string(r.Stream))+" ("+r.Mode+")", []render.Row{
		{Label: "idmp-duration", Value: arrow(0)}, {Label: "idmp-maxsize", Value: arrow(1)},
		{Label: "result", Value: status, Fit: render.Wrap},
	})
	return nil
}

func (r CfgSet) Raw(p *render.Printer) error {
	p.Line("status\t%s", r.Status)
	p.Line("idmp-duration\t%d\t%d", r.Before["idmp-duration"], r.After["idmp-duration"])
	p.Line("idmp-maxsize\t%d\t%d", r.Before["idmp-maxsize"], r.After["idmp-maxsize"])
	p.Line("cleared-iids\t%d", r.ClearedIIDs)
	return nil
}
