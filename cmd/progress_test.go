package cmd

import (
	"bytes"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/progress"
	"github.com/idmpctl/idmpctl/internal/render"
)

// TestProgressRule is startProgress's rule: stderr a terminal, not -o json,
// and not while results stream line by line to stdout on a terminal.
func TestProgressRule(t *testing.T) {
	for _, c := range []struct {
		errTTY, tty bool
		format      render.Format
		linesOut    bool
		want        bool
	}{
		{errTTY: true, tty: false, format: render.Raw, linesOut: true, want: true},   // xadd --batch > results
		{errTTY: true, tty: true, format: render.Raw, linesOut: true, want: false},   // xadd --batch on a terminal
		{errTTY: true, tty: true, format: render.Table, linesOut: false, want: true}, // inspect --match: a table at the end
		{errTTY: true, tty: false, format: render.JSON, linesOut: true, want: false},
		{errTTY: true, tty: true, format: render.JSON, linesOut: false, want: false},
		{errTTY: false, tty: false, format: render.Raw, linesOut: true, want: false}, // cron, CI
		{errTTY: false, tty: true, format: render.Table, linesOut: false, want: false},
	} {
		var errOut bytes.Buffer
		p := &render.Printer{Out: &bytes.Buffer{}, Err: &errOut, Format: c.format, TTY: c.tty, ErrTTY: c.errTTY}
		bar, stop := startProgress(p, c.linesOut, progress.Options{Unit: "keys"})
		if got := bar != nil; got != c.want {
			t.Errorf("%+v: progress shown %v, want %v", c, got, c.want)
		}
		stop()
		stop()
		if p.Err != &errOut {
			t.Errorf("%+v: stderr not restored", c)
		}
	}
}

// TestProgressClearedBeforeStderr: a warning during the work erases the
// line first, and the line comes back on the next update.
func TestProgressClearedBeforeStderr(t *testing.T) {
	var errOut bytes.Buffer
	p := &render.Printer{Out: &bytes.Buffer{}, Err: &errOut, Format: render.Raw, ErrTTY: true}
	bar, stop := startProgress(p, false, progress.Options{Label: "xadd --batch", Unit: "lines"})
	defer stop()
	time.Sleep(300 * time.Millisecond) // past the first-draw delay
	bar.Set(5, 0)
	drawn := errOut.String()
	if want := "\rxadd --batch: 5 lines"; len(drawn) < len(want) || drawn[:len(want)] != want {
		t.Fatalf("not drawn: %q", drawn)
	}
	p.Warnf("retrying")
	after := errOut.String()[len(drawn):]
	if want := "\r" + spaces(len(drawn)-1) + "\ridmpctl: warning: retrying\n"; after != want {
		t.Errorf("a warning over the line: %q, want %q", after, want)
	}
	stop()
	n := errOut.Len()
	p.Status("xadd --batch: 5 lines")
	if got := errOut.String()[n:]; got != "xadd --batch: 5 lines\n" {
		t.Errorf("after stop: %q", got)
	}
}

func spaces(n int) string { return string(bytes.Repeat([]byte{' '}, n)) }
