package render

import (
	"io"
	"sync"

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

func newStyles(color bool) *styles {
	// 256 colours when colour is on (dim is grey 245), none when off.
	p := termenv.Ascii
	if color {
		p = termenv.ANSI256
	}
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

// styleOnce builds a Printer's styles once, on first use.
type styleOnce struct {
	once sync.Once
	s    *styles
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
	p.st.once.Do(func() { p.st.s = newStyles(p.Color) })
	return p.st.s[id].Render(s)
}
