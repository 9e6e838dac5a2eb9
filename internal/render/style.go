package render

import (
	"io"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// The few lipgloss styles of idmpctl's views, built on first use on a
// renderer whose profile is the one colour decision (Printer.Color):
// lipgloss never detects a profile nor asks the terminal for its
// background (no AdaptiveColor), and a run that styles nothing builds none.
const (
	bold = iota
	dim
	good
	warn
	bad
	head
)

type styles [head + 1]lipgloss.Style

// newStyles builds them in 256 colours (dim is grey 245): only a Printer
// with Color on uses them.
func newStyles() *styles {
	p := termenv.ANSI256
	// The renderer only carries the profile: a nil writer would make
	// termenv look at os.Stdout.
	r := lipgloss.NewRenderer(io.Discard, termenv.WithProfile(p))
	r.SetColorProfile(p)
	r.SetHasDarkBackground(true)
	base := r.NewStyle().TabWidth(lipgloss.NoTabConversion)
	return &styles{
		bold: base.Bold(true),
		dim:  base.Foreground(lipgloss.Color("245")),
		good: base.Foreground(lipgloss.Color("2")),
		warn: base.Foreground(lipgloss.Color("3")),
		bad:  base.Bold(true).Foreground(lipgloss.Color("1")),
		head: base.Bold(true).Foreground(lipgloss.Color("6")),
	}
}

// Bold, Dim, Good, Warn, Bad and Head style text when colour is on.
func (p *Printer) Bold(s string) string { return p.style(bold, s) }
func (p *Printer) Dim(s string) string  { return p.style(dim, s) }
func (p *Printer) Good(s string) string { return p.style(good, s) }
func (p *Printer) Warn(s string) string { return p.style(warn, s) }
func (p *Printer) Bad(s string) string  { return p.style(bad, s) }
func (p *Printer) Head(s string) string { return p.style(head, s) }

func (p *Printer) style(id int, s string) string {
	if !p.Color || s == "" {
		return s
	}
	p.stOnce.Do(func() { p.st = newStyles() })
	return p.st[id].Render(s)
}
