package iostreams

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// NewOutWriter is w keeping its first write error.
func NewOutWriter(w io.Writer) *OutWriter { return &OutWriter{w: w} }

// fake is streams whose terminals are those named in ttys, in env.
func fake(env map[string]string, ttys ...any) (*IOStreams, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	isTTY := func(f any) bool {
		for _, t := range ttys {
			if t == f {
				return true
			}
		}
		return false
	}
	return New(strings.NewReader(""), out, errOut, func(k string) string { return env[k] }, isTTY, nil), out, errOut
}

func TestTerminalFacts(t *testing.T) {
	s, _, _ := fake(nil)
	if s.IsStdoutTTY() || s.IsStderrTTY() || s.CanPrompt() || s.PromptWanted() || s.TerminalWidth() != 0 {
		t.Errorf("pipes: a terminal somewhere")
	}
	s, _, _ = fake(map[string]string{ForceTTY: "1"})
	if !s.IsStdoutTTY() || !s.IsStderrTTY() || !s.CanPrompt() || s.RealTerminals() || s.PromptWanted() || s.TerminalWidth() != 80 {
		t.Errorf("forced: stdout %v stderr %v prompt %v real terminals %v exec prompt %v width %d",
			s.IsStdoutTTY(), s.IsStderrTTY(), s.CanPrompt(), s.RealTerminals(), s.PromptWanted(), s.TerminalWidth())
	}
	s, _, _ = fake(map[string]string{ForceTTY: "1", ForceTTYIn: "1", "COLUMNS": "132"})
	if !s.PromptWanted() || s.TerminalWidth() != 132 {
		t.Errorf("forced with stdin and COLUMNS: prompt %v, width %d", s.PromptWanted(), s.TerminalWidth())
	}
	out := &bytes.Buffer{}
	s = New(strings.NewReader(""), out, out, nil, func(f any) bool { return f == out }, func(any) int { return 100 })
	if !s.IsStdoutTTY() || s.CanPrompt() || s.TerminalWidth() != 100 {
		t.Errorf("a real terminal on stdout: tty %v, prompt %v, width %d", s.IsStdoutTTY(), s.CanPrompt(), s.TerminalWidth())
	}
}

// TestColorEnabled is the one colour decision.
func TestColorEnabled(t *testing.T) {
	for _, c := range []struct {
		env            map[string]string
		tty            bool
		noColor, human bool
		want           bool
	}{
		{nil, true, false, true, true},
		{nil, false, false, true, false},
		{map[string]string{"CLICOLOR_FORCE": "1"}, false, false, true, true},
		{map[string]string{"CLICOLOR_FORCE": "0"}, false, false, true, false},
		{map[string]string{"NO_COLOR": "1", "CLICOLOR_FORCE": "1"}, true, false, true, false},
		{nil, true, true, true, false},                                        // --no-color
		{map[string]string{"CLICOLOR_FORCE": "1"}, true, false, false, false}, // -o raw or json
	} {
		s, out, _ := fake(c.env)
		if c.tty {
			s.isTTY = func(f any) bool { return f == out }
		}
		if got := s.ColorEnabled(c.noColor, c.human); got != c.want {
			t.Errorf("%+v: colour %v", c, got)
		}
	}
}

type failing struct{ err error }

func (f failing) Write([]byte) (int, error) { return 0, f.err }

// TestOutputLost: stdout's first write error is kept and reported; a
// reader that went away (EPIPE) is not lost output.
func TestOutputLost(t *testing.T) {
	full := NewOutWriter(failing{fmt.Errorf("write /dev/full: %w", syscall.ENOSPC)})
	s := New(nil, full, &bytes.Buffer{}, nil, nil, nil)
	if s.OutputLost() != nil {
		t.Fatal("lost before any write")
	}
	_, werr := full.Write([]byte("17\n"))
	if _, again := full.Write([]byte("x")); !errors.Is(again, syscall.ENOSPC) {
		t.Errorf("a write after the first error: %v", again)
	}
	lost := s.OutputLost()
	if exit.Code(lost) != exit.Internal || !strings.Contains(lost.Error(), "cannot write the output") || !s.IsOutputError(werr) {
		t.Errorf("lost: %v", lost)
	}
	gone := NewOutWriter(failing{syscall.EPIPE})
	s = New(nil, gone, &bytes.Buffer{}, nil, nil, nil)
	_, _ = gone.Write([]byte("x"))
	if s.OutputLost() != nil {
		t.Errorf("a reader that went away counts as lost output")
	}
}
