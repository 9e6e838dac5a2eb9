package view

import (
	"strconv"

	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/render"
)

// RestoreItem is one record of restore as it comes: a JSON object or a
// raw line each; a table shows the summary alone. A restore sets one
// RestoreItem for each record and shows it again.
type RestoreItem struct{ keyspace.RestoreItem }

func (v *RestoreItem) JSON() any {
	return map[string]any{"key": render.Text(v.Key), "line": v.Line, "outcome": string(v.Outcome)}
}

func (v *RestoreItem) Table(*render.Printer) error { return nil }

func (v *RestoreItem) Raw(p *render.Printer) error {
	p.Line("%s\t%s", v.Outcome, render.Field(v.Key))
	return nil
}

// Restore is restore's summary: a view (-o table), the summary object (-o
// json), or a line on stderr (raw). Replace is --replace: what it
// replaced is counted apart.
type Restore struct {
	Summary keyspace.RestoreSummary
	File    string
	Replace bool
}

// words are what the summary calls restoring and replacing (a dry run's
// "would").
func (v Restore) words() (restored, replaced string) {
	if v.Summary.DryRun {
		return "would restore", "would replace"
	}
	return "restored", "replaced"
}

func (v Restore) JSON() any {
	return struct {
		Type    string                  `json:"type"` // "summary"
		Summary keyspace.RestoreSummary `json:"summary"`
	}{"summary", v.Summary}
}

func (v Restore) Table(p *render.Printer) error {
	s := v.Summary
	restored, replaced := v.words()
	pairs := []render.Pair{
		{"records", strconv.FormatInt(s.Records, 10)},
		{restored, p.Good(strconv.FormatInt(s.Restored, 10))},
	}
	pairs = addIf(pairs, v.Replace, render.Pair{replaced + " (existed)", strconv.FormatInt(s.Replaced, 10)})
	pairs = append(pairs, []render.Pair{
		{"skipped, existing", strconv.FormatInt(s.Existing, 10)},
		{"skipped, expired meanwhile", strconv.FormatInt(s.Expired, 10)},
		{"skipped, kept by purge", strconv.FormatInt(s.Kept, 10)},
	}...)
	pairs = addIf(pairs, s.Failed > 0, render.Pair{"failed", p.Bad(strconv.FormatInt(s.Failed, 10))})
	p.KV("restore "+render.Field(v.File), pairs)
	return nil
}

func (v Restore) Raw(p *render.Printer) error {
	s := v.Summary
	restored, replaced := v.words()
	failed := ""
	if s.Failed > 0 {
		failed = ", " + render.Count(s.Failed) + " failed"
	}
	counts := restored + " " + render.Count(s.Restored)
	if v.Replace {
		counts += ", " + replaced + " " + render.Count(s.Replaced)
	}
	p.Status("restore: %s: %s, skipped %s existing, %s expired meanwhile, %s kept by purge%s",
		render.N(s.Records, "record"), counts, render.Count(s.Existing), render.Count(s.Expired), render.Count(s.Kept), failed)
	return nil
}
