// Package render holds all of idmpctl's output: tables, styles, JSON and raw
// lines. It never talks to Redis. Data goes to Out, status to Err.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/charmbracelet/x/ansi"
)

// Format is an output mode of -o.
type Format string

const (
	Table Format = "table"
	JSON  Format = "json"
	Raw   Format = "raw"
	// Prometheus is the Prometheus text format (WriteMetrics); only the
	// commands that have metrics accept it.
	Prometheus Format = "prometheus"
)

// ParseFormat checks an -o value; "" picks table on a terminal, raw otherwise.
func ParseFormat(s string, tty bool) (Format, error) {
	switch Format(s) {
	case Table, JSON, Raw, Prometheus:
		return Format(s), nil
	case "":
		if tty {
			return Table, nil
		}
		return Raw, nil
	}
	return "", fmt.Errorf("-o %q: want table, json, raw or prometheus", s)
}

// Printer is where a command's output goes, and how it looks.
type Printer struct {
	Out, Err io.Writer
	Format   Format
	TTY      bool // stdout is a terminal (or IDMPCTL_FORCE_TTY)
	ErrTTY   bool // stderr is a terminal: progress may be drawn
	Color    bool
	Width    int  // the terminal's columns, which views wrap to; 0: no limit
	Quiet    bool // -q: no warnings (a loop running idmpctl per message repeats them)

	stOnce sync.Once // builds st on first use
	st     *styles
}

// Human says whether values are shown for a person (-o table: "3m ago")
// rather than raw (RFC 3339 times, milliseconds).
func (p *Printer) Human() bool { return p.Format == Table }

// JSON writes v as one JSON object: indented on a terminal, one line
// otherwise (so a stream of results is NDJSON).
func (p *Printer) JSON(v any) error {
	enc := json.NewEncoder(p.Out)
	enc.SetEscapeHTML(false)
	if p.TTY {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// Line writes one raw line.
func (p *Printer) Line(format string, args ...any) {
	fmt.Fprintf(p.Out, format+"\n", args...)
}

// Status writes a line of status to stderr.
func (p *Printer) Status(format string, args ...any) {
	fmt.Fprintf(p.Err, format+"\n", args...)
}

// Warnf writes "idmpctl: warning: ..." to stderr, unless Quiet.
func (p *Printer) Warnf(format string, args ...any) {
	if p.Quiet {
		return
	}
	fmt.Fprintf(p.Err, "%s %s\n", p.Warn("idmpctl: warning:"), fmt.Sprintf(format, args...))
}

// Pair is one label/value row of a key-value view: {label, value}.
type Pair [2]string

// KV writes a titled key-value view: with -o table aligned labels, each
// value wrapped to Width (View); otherwise "label<TAB>value" lines.
func (p *Printer) KV(title string, pairs []Pair) { p.View(title, Rows(pairs)) }

// Fit is how a view's value meets the terminal's width. No value is cut
// ("0.625 msg/ms pe…" says nothing): a view is fitted in View alone.
type Fit int

const (
	Wrap  Fit = iota // wrapped at spaces under the value column, each word whole (a flag, a path)
	Whole            // not wrapped: the line runs long, for what a user copies (a command)
)

// Row is one row of a view: its label, its value, and how the value fits.
type Row struct {
	Label, Value string
	Fit          Fit
}

// Rows are pairs as rows of a view, each value wrapped.
func Rows(pairs []Pair) []Row {
	rows := make([]Row, len(pairs))
	for i, kv := range pairs {
		rows[i] = Row{Label: kv[0], Value: kv[1]}
	}
	return rows
}

// View writes a titled view of rows: with -o table aligned labels, the
// title and each value wrapped to Width at spaces (the value under its
// column), never cut, a word wider than the room running long (a key or a
// fingerprint is whole or useless); a Whole row is not wrapped. Otherwise
// "label<TAB>value" lines.
func (p *Printer) View(title string, rows []Row) {
	if p.Format != Table {
		for _, r := range rows {
			fmt.Fprintf(p.Out, "%s\t%s\n", r.Label, r.Value)
		}
		return
	}
	if title != "" {
		for _, line := range p.wrap(title, p.Width) {
			fmt.Fprintln(p.Out, p.Head(line))
		}
	}
	w := 0
	for _, r := range rows {
		w = max(w, DisplayWidth(r.Label))
	}
	const indent, gap = 2, 2
	under := "\n" + strings.Repeat(" ", indent+w+gap)
	for _, r := range rows {
		label := r.Label + strings.Repeat(" ", w-DisplayWidth(r.Label))
		value := r.Value
		if r.Fit != Whole {
			value = strings.Join(p.wrap(value, p.Width-indent-w-gap), under)
		}
		fmt.Fprintf(p.Out, "%*s%s%*s%s\n", indent, "", p.Bold(label), gap, "", value)
	}
}

// ClearScreen clears a terminal and puts the cursor at its top left, for a
// view redrawn in place (inspect --watch).
func (p *Printer) ClearScreen() {
	_, _ = io.WriteString(p.Out, ansi.CursorHomePosition+ansi.EraseEntireScreen)
}

// Parts joins parts by two spaces into lines of at most Width columns,
// never cutting one: a part that does not fit goes to the next line,
// indented, and one wider than the room is wrapped at its spaces. Without
// a width it is one line.
func (p *Printer) Parts(indent int, parts ...string) string {
	lines := []string{""}
	w := 0
	for _, part := range parts {
		pw := DisplayWidth(part)
		switch {
		case w == 0:
		case p.Width <= 0 || w+2+pw <= p.Width:
			lines[len(lines)-1] += "  "
			w += 2
		default:
			lines = append(lines, strings.Repeat(" ", indent))
			w = indent
		}
		if p.Width > 0 && w+pw > p.Width {
			wrapped := p.wrap(part, p.Width-w)
			part = strings.Join(wrapped, "\n"+strings.Repeat(" ", w))
			pw = DisplayWidth(wrapped[len(wrapped)-1])
		}
		lines[len(lines)-1] += part
		w += pw
	}
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

// wrap breaks s into lines of at most width columns (never below a few,
// minColumn; no width, one line) at spaces only: ansi's word wrap breaks
// --maxmemory at its hyphens, and a wider word has a line of its own.
func (p *Printer) wrap(s string, width int) []string {
	if p.Width <= 0 {
		return []string{s}
	}
	width = max(width, minColumn)
	var lines []string
	line, w := "", 0
	for _, word := range strings.Split(s, " ") {
		ww := DisplayWidth(word)
		switch {
		case line == "":
			line, w = word, ww
		case w+1+ww <= width:
			line, w = line+" "+word, w+1+ww
		default:
			lines = append(lines, line)
			line, w = word, ww
		}
	}
	return append(lines, line)
}

// View is one result in each form -o picks: a JSON value (-o json), a
// drawing for a person (-o table), and lines for scripts (-o raw, the
// default into a pipe). internal/view holds one per result.
type View interface {
	JSON() any
	Table(p *Printer) error
	Raw(p *Printer) error
}

// Show prints v in the Printer's format: the one place a result's form is
// chosen by -o.
func (p *Printer) Show(v View) error {
	switch p.Format {
	case JSON:
		return p.JSON(v.JSON())
	case Table:
		return v.Table(p)
	}
	return v.Raw(p)
}
