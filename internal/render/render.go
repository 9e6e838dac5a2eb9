// Package render holds all of idmpctl's output: tables, styles, JSON and raw
// lines. It never talks to Redis. Data goes to Out, status to Err.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
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
}

// Styles are plain SGR sequences. The output needs five colours and bold,
// and nothing that asks the terminal anything: a styling library's
// renderer, profile detection and width tables would cost every start of
// the process (scripts start idmpctl once per message) for that.
const (
	sgrBold = "\x1b[1m"
	sgrDim  = "\x1b[38;5;245m"
	sgrGood = "\x1b[32m"
	sgrWarn = "\x1b[33m"
	sgrBad  = "\x1b[1;31m"
	sgrHead = "\x1b[1;36m"
	sgrOff  = "\x1b[0m"
)

// Bold, Dim, Good, Warn, Bad and Head style text when colour is on.
func (p *Printer) Bold(s string) string { return p.style(sgrBold, s) }
func (p *Printer) Dim(s string) string  { return p.style(sgrDim, s) }
func (p *Printer) Good(s string) string { return p.style(sgrGood, s) }
func (p *Printer) Warn(s string) string { return p.style(sgrWarn, s) }
func (p *Printer) Bad(s string) string  { return p.style(sgrBad, s) }
func (p *Printer) Head(s string) string { return p.style(sgrHead, s) }

func (p *Printer) style(sgr, s string) string {
	if !p.Color || s == "" {
		return s
	}
	return sgr + s + sgrOff
}

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

// Warnf writes "idmpctl: warning: ..." to stderr.
func (p *Printer) Warnf(format string, args ...any) {
	fmt.Fprintf(p.Err, "%s %s\n", p.Warn("idmpctl: warning:"), fmt.Sprintf(format, args...))
}

// Table writes rows under a header: a drawn table on a terminal, tab-separated
// values with the raw cell text otherwise.
func (p *Printer) Table(header []string, rows [][]string) error {
	if !p.TTY {
		fmt.Fprintln(p.Out, strings.Join(header, "\t"))
		for _, r := range rows {
			fmt.Fprintln(p.Out, strings.Join(r, "\t"))
		}
		return nil
	}
	head := make([]string, len(header))
	for i, h := range header {
		head[i] = p.Head(h)
	}
	return drawTable(p.Out, head, rows)
}

// Pair is one label/value row of a key-value view: {label, value}.
type Pair [2]string

// KV writes a titled key-value view: aligned labels on a terminal,
// "label<TAB>value" lines otherwise.
func (p *Printer) KV(title string, pairs []Pair) {
	if !p.TTY {
		for _, kv := range pairs {
			fmt.Fprintf(p.Out, "%s\t%s\n", kv[0], kv[1])
		}
		return
	}
	if title != "" {
		fmt.Fprintln(p.Out, p.Head(title))
	}
	w := 0
	for _, kv := range pairs {
		w = max(w, len(kv[0]))
	}
	for _, kv := range pairs {
		fmt.Fprintf(p.Out, "  %s  %s\n", p.Bold(fmt.Sprintf("%-*s", w, kv[0])), kv[1])
	}
}
