package render

import (
	"bytes"
	"testing"
)

// TestStyles: the styles are the SGR sequences of the colour decision
// (256 colours), nothing without colour, and building them writes nothing
// anywhere: no query reaches the terminal.
func TestStyles(t *testing.T) {
	var out, errb bytes.Buffer
	p := &Printer{Out: &out, Err: &errb, Format: Table, TTY: true, Color: true}
	for _, c := range []struct{ got, want string }{
		{p.Bold("b"), "\x1b[1mb\x1b[0m"},
		{p.Dim("d"), "\x1b[38;5;245md\x1b[0m"},
		{p.Good("g"), "\x1b[32mg\x1b[0m"},
		{p.Warn("w"), "\x1b[33mw\x1b[0m"},
		{p.Bad("x"), "\x1b[1;31mx\x1b[0m"},
		{p.Head("h"), "\x1b[1;36mh\x1b[0m"},
		{p.Good("a\tb"), "\x1b[32ma\tb\x1b[0m"}, // tabs stay tabs
		{p.Good(""), ""},
	} {
		if c.got != c.want {
			t.Errorf("styled %q, want %q", c.got, c.want)
		}
	}
	if out.Len() != 0 || errb.Len() != 0 {
		t.Errorf("styles wrote %q to stdout, %q to stderr", out.String(), errb.String())
	}
	plain := &Printer{Out: &out, Format: Table, TTY: true}
	if got := plain.Bad("x") + plain.Head("h"); got != "xh" {
		t.Errorf("no colour: %q", got)
	}
}
