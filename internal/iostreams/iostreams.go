// Package iostreams owns the terminal facts of a run, as cli/cli's
// pkg/iostreams does: the three streams, whether each is a terminal, the
// terminal's width, the colour decision, whether a person can be asked a
// question, and stdout's first write error. Each is decided here, once;
// tests fake them through New's seams and the environment.
package iostreams

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/mattn/go-isatty"
	"golang.org/x/term"
)

// The environment that forces terminal behaviour, for tests.
const (
	// ForceTTY makes stdout, stderr and stdin terminals (width COLUMNS, else 80).
	ForceTTY = "IDMPCTL_FORCE_TTY"
	// ForceTTYIn makes stdin a terminal for exec's prompt (each line echoed
	// after it; line editing needs a real terminal).
	ForceTTYIn = "IDMPCTL_FORCE_TTY_IN"
)

// IOStreams are a run's streams and what is known of them.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	getenv    func(string) string
	isTTY     func(f any) bool
	termWidth func(f any) int
	stdout    *OutWriter // Out as System made it: its first write error
}

// New is streams whose terminal facts come from the seams: the environment,
// whether a stream is a terminal, its width (0: unknown). A nil seam says no.
func New(in io.Reader, out, errOut io.Writer, getenv func(string) string, isTTY func(any) bool, termWidth func(any) int) *IOStreams {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if isTTY == nil {
		isTTY = func(any) bool { return false }
	}
	s := &IOStreams{In: in, Out: out, ErrOut: errOut, getenv: getenv, isTTY: isTTY, termWidth: termWidth}
	if w, ok := out.(*OutWriter); ok {
		s.stdout = w
	}
	return s
}

// System is the process's streams, stdout in an OutWriter (OutputLost).
func System() *IOStreams {
	return New(os.Stdin, &OutWriter{w: os.Stdout}, os.Stderr, os.Getenv, IsTerminal, TerminalWidth)
}

// IsTerminal says whether f (an *os.File, or an OutWriter on one) is a terminal.
func IsTerminal(f any) bool {
	if file, ok := File(f); ok {
		return isatty.IsTerminal(file.Fd())
	}
	return false
}

// TerminalWidth is the width in columns of the terminal f is (0: none).
func TerminalWidth(f any) int {
	if file, ok := File(f); ok {
		if cols, _, err := term.GetSize(int(file.Fd())); err == nil {
			return cols
		}
	}
	return 0
}

// File is the *os.File under w, if any (for terminal checks).
func File(w any) (*os.File, bool) {
	if o, ok := w.(*OutWriter); ok {
		w = o.w
	}
	f, ok := w.(*os.File)
	return f, ok
}

// Getenv reads the environment the streams were made with.
func (s *IOStreams) Getenv(key string) string { return s.getenv(key) }

func (s *IOStreams) forced() bool { return s.getenv(ForceTTY) != "" }

// IsStdoutTTY says whether stdout is a terminal (or forced to be one).
func (s *IOStreams) IsStdoutTTY() bool { return s.isTTY(s.Out) || s.forced() }

// IsStderrTTY says whether stderr is a terminal (or forced): progress is drawn.
func (s *IOStreams) IsStderrTTY() bool { return s.isTTY(s.ErrOut) || s.forced() }

// RealTerminals says whether stdin and stdout are both real terminals
// (never forced): a line editor needs them.
func (s *IOStreams) RealTerminals() bool { return s.isTTY(s.In) && s.isTTY(s.Out) }

// CanPrompt says whether a person can answer a question: stdin is a
// terminal (or forced). Elsewhere a change needs --yes.
func (s *IOStreams) CanPrompt() bool { return s.isTTY(s.In) || s.forced() }

// PromptWanted says whether exec with no COMMAND prompts as redis-cli
// does: stdout a terminal, and stdin one (or forced with ForceTTYIn).
func (s *IOStreams) PromptWanted() bool {
	return s.IsStdoutTTY() && (s.isTTY(s.In) || s.getenv(ForceTTYIn) != "")
}

// ColorEnabled is the one colour decision: on for a terminal or with
// CLICOLOR_FORCE (not "0"); off with NO_COLOR or --no-color, and whenever
// the output is not for a person (escape codes in raw or JSON fields).
func (s *IOStreams) ColorEnabled(noColor, human bool) bool {
	color := s.IsStdoutTTY()
	if v := s.getenv("CLICOLOR_FORCE"); v != "" && v != "0" {
		color = true
	}
	if s.getenv("NO_COLOR") != "" || noColor {
		color = false
	}
	return color && human
}

// TerminalWidth is stdout's width in columns: the real terminal's; when
// forced, COLUMNS or 80; 0 (no limit) for no terminal.
func (s *IOStreams) TerminalWidth() int {
	if s.termWidth != nil {
		if n := s.termWidth(s.Out); n > 0 {
			return n
		}
	}
	if !s.forced() {
		return 0
	}
	if n, err := strconv.Atoi(s.getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 80
}

// OutputLost is the error for stdout's first write error, if any. A reader
// that went away (| head) took what it wanted: not lost output (and every
// verb but claim run dies of SIGPIPE there, as any filter does).
func (s *IOStreams) OutputLost() error {
	if s.stdout == nil || s.stdout.err == nil || errors.Is(s.stdout.err, syscall.EPIPE) {
		return nil
	}
	return &exit.Error{Code: exit.Internal, Err: fmt.Errorf("cannot write the output: %w", s.stdout.err),
		Hint: "the output was lost: free the disk, or send stdout where it can be written"}
}

// IsOutputError says whether err is stdout's own first write error.
func (s *IOStreams) IsOutputError(err error) bool {
	return s.stdout != nil && s.stdout.err != nil && errors.Is(err, s.stdout.err)
}

// OutWriter is stdout keeping its first write error (a full disk) and
// refusing writes after it: lost output fails the exit (OutputLost), so
// TOKEN=$(...) never takes an exit 0 with nothing written for a success.
type OutWriter struct {
	w   io.Writer
	err error
}

func (o *OutWriter) Write(b []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(b)
	if err != nil {
		o.err = err
	}
	return n, err
}
