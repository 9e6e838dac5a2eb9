package render

import (
	"sync"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// styles are the few lipgloss styles idmpctl's views use. They are built
// on first use, on a renderer whose colour profile is set from the one
// colour decision (Printer.Color): lipgloss never detects a profile,
// never asks the terminal for its background (no AdaptiveColor, no
// HasDarkBackground query), and a run that styles nothing builds nothing.
type styles struct {
	bold, dim, good, warn, bad, head lipgloss.Style
}

// profile is the colour profile of the styles: 256 colours when colour is
// on (dim is grey 245), none when it is off.
func profile(color bool) termenv.Profile {
	if color {
		return termenv.ANSI256
	}
	return termenv.Ascii
}

func newStyles(color bool) *styles {
	p := profile(color)
	// The renderer's output is never written to: it only carries the
	// profile (a nil writer would make termenv look at os.Stdout).
	r := lipgloss.NewRenderer(discard{}, termenv.WithProfile(p))
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

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// styleOnce builds a Printer's styles once, on first use.
type styleOnce struct {
	once sync.Once
	s    *styles
}

func (p *Printer) styles() *styles {
	p.st.once.Do(func() { p.st.s = newStyles(p.Color) })
	return p.st.s
}

// Bold, Dim, Good, Warn, Bad and Head style text when colour is on.
func (p *Printer) Bold(s string) string {
	return p.style(func(st *styles) lipgloss.Style { return st.bold }, s)
}
func (p *Printer) Dim(s string) string {
	return p.style(func(st *styles) lipgloss.Style { return st.dim }, s)
}
func (p *Printer) Good(s string) string {
	return p.style(func(st *styles) lipgloss.Style { return st.good }, s)
}
func (p *Printer) Warn(s string) string {
	return p.style(func(st *styles) lipgloss.Style { return st.warn }, s)
}
func (p *Printer) Bad(s string) string {
	return p.style(func(st *styles) lipgloss.Style { return st.bad }, s)
}
func (p *Printer) Head(s string) string {
	return p.style(func(st *styles) lipgloss.Style { return st.head }, s)
}

func (p *Printer) style(pick func(*styles) lipgloss.Style, s string) string {
	if !p.Color || s == "" {
		return s
	}
	return pick(p.styles()).Render(s)
}
