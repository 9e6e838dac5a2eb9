// Package render holds all of idmpctl's output: tables, styles, JSON and raw
// lines. It never talks to Redis. Data goes to Out, status to Err.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Format is an output mode of -o.
type Format string

const (
	Table Format = "table"
	JSON  Format = "json"
	Raw   Format = "raw"
)

// ParseFormat checks an -o value; "" picks table on a terminal, raw otherwise.
func ParseFormat(s string, tty bool) (Format, error) {
	switch Format(s) {
	case Table, JSON, Raw:
		return Format(s), nil
	case "":
		if tty {
			return Table, nil
		}
		return Raw, nil
	}
	return "", fmt.Errorf("-o %q: want table, json or raw", s)
}

// Printer is where a command's output goes, and how it looks.
type Printer struct {
	Out, Err io.Writer
	Format   Format
	TTY      bool // stdout is a terminal (or IDMPCTL_FORCE_TTY)
	ErrTTY   bool // stderr is a terminal: progress may be drawn
	Color    bool

	styles *styles
}

type styles struct {
	bold, dim, good, warn, bad, head lipgloss.Style
}

func (p *Printer) st() *styles {
	if p.styles == nil {
		r := lipgloss.NewRenderer(p.Out)
		if p.Color {
			r.SetColorProfile(termenv.ANSI256)
		} else {
			r.SetColorProfile(termenv.Ascii)
		}
		p.styles = &styles{
			bold: r.NewStyle().Bold(true),
			dim:  r.NewStyle().Foreground(lipgloss.Color("245")),
			good: r.NewStyle().Foreground(lipgloss.Color("2")),
			warn: r.NewStyle().Foreground(lipgloss.Color("3")),
			bad:  r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
			head: r.NewStyle().Bold(true).Foreground(lipgloss.Color("6")),
		}
	}
	return p.styles
}

// Bold, Dim, Good, Warn and Bad style text when colour is on.
func (p *Printer) Bold(s string) string { return p.style(p.st().bold, s) }
func (p *Printer) Dim(s string) string  { return p.style(p.st().dim, s) }
func (p *Printer) Good(s string) string { return p.style(p.st().good, s) }
func (p *Printer) Warn(s string) string { return p.style(p.st().warn, s) }
func (p *Printer) Bad(s string) string  { return p.style(p.st().bad, s) }
func (p *Printer) Head(s string) string { return p.style(p.st().head, s) }

func (p *Printer) style(st lipgloss.Style, s string) string {
	if !p.Color || s == "" {
		return s
	}
	return st.Render(s)
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
	t := tablewriter.NewTable(p.Out,
		tablewriter.WithEastAsian(tw.Off),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleRounded)})),
	)
	h := make([]any, len(header))
	for i, s := range header {
		h[i] = p.Head(s)
	}
	t.Header(h...)
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	return t.Render()
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
