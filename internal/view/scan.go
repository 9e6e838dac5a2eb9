package view

// inspect --match: a scan's records as they come (ScanRecord), then its
// table and summary (Scan).

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/idmpctl/idmpctl/internal/bytesize"
	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/render"
)

// tableRowCap bounds the rows a terminal table holds in memory; past it,
// the table says how many more there are (use -o raw or json for all).
const tableRowCap = 1000

// scanColumns are a scan's table. KEY and STATUS are what an operator acts
// on: never left out. The others are left out on a narrow terminal, the
// least needed first; LEASE LEFT and TTL, which say when a record frees
// its key, last.
var scanColumns = []render.Column{{Head: "KEY"}, {Head: "FORMAT", Drop: 6}, {Head: "STATUS"}, {Head: "OWNER", Drop: 4},
	{Head: "AGE", Drop: 5}, {Head: "LEASE LEFT", Drop: 1}, {Head: "TTL", Drop: 2}, {Head: "FLAGS", Drop: 3}}

// ScanRows gathers a scan's table as its records come: the first
// tableRowCap rows, and how many records there were.
type ScanRows struct {
	rows  [][]string
	shown int64
}

// ScanRecord is one record of a scan as it comes: a JSON object, a raw
// line, or a row of the table Scan draws at the end. A scan of millions
// sets one ScanRecord for each record and shows it again.
type ScanRecord struct {
	Record      records.Record
	ShowSecrets bool
	Rows        *ScanRows
}

func (v *ScanRecord) JSON() any { return WithTimes(Shown(v.Record, v.ShowSecrets)) }

func (v *ScanRecord) Table(p *render.Printer) error {
	if len(v.Rows.rows) < tableRowCap {
		v.Rows.rows = append(v.Rows.rows, scanRow(p, v.Record))
	}
	v.Rows.shown++
	return nil
}

func (v *ScanRecord) Raw(p *render.Printer) error {
	p.Line("%s", strings.Join(scanRow(p, v.Record), "\t"))
	return nil
}

func scanRow(p *render.Printer, r records.Record) []string {
	j := WithTimes(r)
	lease := ""
	if j.LeaseLeftMs != nil {
		lease = p.MsDuration(*j.LeaseLeftMs)
	}
	return []string{render.Field(r.Key), string(r.Format), StatusText(p, r), render.Field(r.Owner), AgeText(p, j), lease, p.TTLText(r.TTLms), FlagsText(r.Flags)}
}

// Scan is the end of inspect --match: the table of its records and with
// --memory the memory table, a last "summary" object (-o json), or (raw)
// the summary and memory lines on stderr.
type Scan struct {
	Match   string
	Limit   int64
	Summary keyspace.Summary
	Memory  *keyspace.MemoryReport
	Rows    *ScanRows
}

// JSON is a scan's last -o json object: type "summary", which no record
// has (theirs is a Redis type). Memory's "estimated" and each group's
// "exact" say what was measured.
func (v Scan) JSON() any {
	return struct {
		Type    string                 `json:"type"`
		Summary keyspace.Summary       `json:"summary"`
		Memory  *keyspace.MemoryReport `json:"memory,omitempty"`
	}{"summary", v.Summary, v.Memory}
}

func (v Scan) Table(p *render.Printer) error {
	if err := v.table(p); err != nil {
		return err
	}
	if v.Memory != nil {
		if err := memoryTable(p, *v.Memory); err != nil {
			return err
		}
	}
	p.Status("%s", summaryText(v.Summary))
	return nil
}

func (v Scan) Raw(p *render.Printer) error {
	p.Status("%s", summaryText(v.Summary))
	if m := v.Memory; m != nil {
		kind := map[bool]string{false: "estimate", true: "exact"}
		p.Status("memory: %d bytes (%s: MEMORY USAGE of %s sampled of %s)", m.Bytes, kind[!m.Estimated], render.Count(m.Sampled), render.N(m.Records, "key"))
		for _, g := range m.Groups {
			p.Status("memory: %s %s: %d bytes (%s: %s, %s sampled, mean %.1f)", g.Format, cmp.Or(string(g.Status), "-"), g.Bytes, kind[g.Exact], render.N(g.Records, "key"), render.Count(g.Sampled), g.Mean)
		}
	}
	return nil
}

// memoryTable draws inspect --memory's figures: one row per format and
// status, estimates marked "~" (exact where every record was measured),
// and the total.
func memoryTable(p *render.Printer, m keyspace.MemoryReport) error {
	if m.Records == 0 {
		fmt.Fprintln(p.Out, "Memory: no records matched") // no empty box
		return nil
	}
	rows := make([][]string, 0, len(m.Groups)+1)
	for _, g := range m.Groups {
		rows = append(rows, []string{string(g.Format), string(g.Status), render.Count(g.Records),
			render.Count(g.Sampled), fmt.Sprintf("%.1f", g.Mean), memoryBytes(g.Bytes, g.Exact)})
	}
	rows = append(rows, []string{"total", "", render.Count(m.Records), render.Count(m.Sampled), "", memoryBytes(m.Bytes, !m.Estimated)})
	head := fmt.Sprintf("Memory (MEMORY USAGE of all %s, exact):", render.N(m.Records, "key"))
	if m.Estimated {
		head = fmt.Sprintf("Memory (estimated: MEMORY USAGE of %s sampled of %s; ~ marks estimates):", render.Count(m.Sampled), render.N(m.Records, "key"))
	}
	fmt.Fprintln(p.Out, head)
	return p.Table(memoryColumns, rows)
}

// memoryColumns are memory's table: SAMPLED and MEAN BYTES, which say how
// an estimate was made, go on a narrow terminal.
var memoryColumns = []render.Column{{Head: "FORMAT"}, {Head: "STATUS"}, {Head: "RECORDS"}, {Head: "SAMPLED", Drop: 1},
	{Head: "MEAN BYTES", Drop: 2}, {Head: "BYTES"}}

// memoryBytes is a byte figure in human units, "~" before an estimate.
func memoryBytes(n int64, exact bool) string {
	s := bytesize.Format(n)
	if !exact {
		s = "~" + s
	}
	return s
}

// table draws a scan's table, sorted by key, under a line that
// says what it shows (on a terminal). An empty scan says so in a line.
func (v Scan) table(p *render.Printer) error {
	rows, shown, sum := v.Rows.rows, v.Rows.shown, v.Summary
	if len(rows) == 0 {
		fmt.Fprintf(p.Out, "No keys match %s (%s scanned)\n", render.Field(v.Match), render.N(sum.Scanned, "key"))
		return nil
	}
	// SCAN order says nothing (and differs between the nodes of a
	// cluster, scanned concurrently): a table reads best by key.
	slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	if p.TTY {
		fmt.Fprintln(p.Out, showingText(int64(len(rows)), shown, sum, v.Limit))
	}
	if err := p.Table(scanColumns, rows); err != nil {
		return err
	}
	if more := shown - int64(len(rows)); more > 0 {
		fmt.Fprintf(p.Out, "... %s more: use -o raw or -o json for all\n", render.Count(more))
	}
	return nil
}

// showingText is the line above a scan's table: how many keys it shows of
// how many matched, and how it chose them when it does not show them all.
func showingText(rows, shown int64, sum keyspace.Summary, limit int64) string {
	scanned := render.N(sum.Scanned, "key") + " scanned"
	switch {
	case rows < shown:
		// More matched than a table holds: the rows are the first the scan
		// met (SCAN's order, which is no order), sorted by key.
		return fmt.Sprintf("Showing %s of %s matching keys (%s): a sample, the first %s the scan met, sorted by key",
			render.Count(rows), render.Count(shown), scanned, render.Count(rows))
	case sum.Limited:
		return fmt.Sprintf("Showing the first %s (%s; stopped at --limit %s: more may match)",
			render.N(rows, "matching key"), scanned, render.Count(limit))
	}
	return fmt.Sprintf("Showing %s of %s (%s)", render.Count(rows), render.N(sum.Matched, "matching key"), scanned)
}

// summaryText is a scan's summary line (stderr): what was scanned and
// matched, the records by status, and the keys that are no records.
func summaryText(s keyspace.Summary) string {
	var parts []string
	for _, st := range records.Statuses() {
		if n := s.ByStatus[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", st, render.Count(n)))
		}
	}
	line := fmt.Sprintf("scanned %s, matched %s", render.N(s.Scanned, "key"), render.Count(s.Matched))
	if s.Limited {
		line += " (stopped at --limit)"
	}
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, ", ")
	}
	streams, states := s.ByFormat[records.FormatStream], s.ByFormat[records.FormatIDMPState]
	others := addIf(nil, streams > 0, render.N(streams, "stream"))
	others = addIf(others, states > 0, render.N(states, "idmp state key"))
	others = addIf(others, s.StateHidden > 0, render.N(s.StateHidden, "idmp state key")+" hidden (--all shows them)")
	if len(others) > 0 {
		line += "; " + strings.Join(others, ", ")
	}
	return line
}
