package render

import (
	"bytes"
	"testing"
	"time"
)

// TestValues: raw output keeps raw values, a view shows human ones.
func TestValues(t *testing.T) {
	raw := &Printer{Format: Raw}
	view := &Printer{Format: Table}
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC).UnixMilli()
	for _, c := range []struct{ got, want string }{
		{raw.CountText(1234567), "1234567"},
		{view.CountText(1234567), "1,234,567"},
		{raw.MsDuration(299_900), "299900"},
		{view.MsDuration(299_900), "4m59s"},
		{view.MsDuration(-3000), "expired 3s ago"},
		{raw.MsTime(now-180_000, now), "2026-11-23T09:57:00Z"},
		{view.MsTime(now-180_000, now), "3m ago"},
		{view.MsTime(now+300_000, now), "in 5m"},
		{view.MsTime(0, now), ""},
		{raw.TTLText(-1), "-1"},
		{view.TTLText(-1), "none"},
		{view.TTLText(-2), ""},
		{view.TTLText(86_400_000), "24h"},
		{raw.ResultText("charged", 7), "7 bytes"},
		{view.ResultText("charged", 7), "charged"},
		{view.ResultText("", 0), "(empty)"},
		{view.ResultText("", 9), "9 bytes"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}

// TestBufferStream: raw and JSON into a pipe are buffered until the flush,
// which restores Out; a terminal and tables are not.
func TestBufferStream(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out, Format: Raw}
	flush := p.BufferStream()
	p.Line("a")
	if out.Len() != 0 {
		t.Errorf("written before the flush: %q", out.String())
	}
	flush()
	if out.String() != "a\n" || p.Out != &out {
		t.Errorf("after the flush: %q, Out restored %v", out.String(), p.Out == &out)
	}
	for _, p := range []*Printer{{Out: &out, Format: Table}, {Out: &out, Format: JSON, TTY: true}} {
		p.BufferStream()()
		if p.Out != &out {
			t.Errorf("%s on a terminal %v: buffered", p.Format, p.TTY)
		}
	}
}
