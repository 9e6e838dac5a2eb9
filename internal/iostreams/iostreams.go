// Package iostreams owns the terminal facts of a run, as cli/cli's
// pkg/iostreams (read at v2.60.0) does: the three streams, whether each is a terminal, the
// terminal's width, the colour decision, whether a person can be asked a
// question, and stdout's first write error. Every such decision is made
// here, once; commands ask, and tests fake it through the seams New takes
// and the environment (IDMPCTL_FORCE_TTY, IDMPCTL_FORCE_TTY_IN, COLUMNS,
// NO_COLOR, CLICOLOR_FORCE). It never talks to Redis.
package iostreams

import (
	"errors"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/mattn/go-isatty"
	"golang.org/x/term"
)

// The environment that forces terminal behaviour, for tests (and for a
// person who pipes through a pager that understands it).
const (
	// ForceTTY makes stdout, stderr and stdin count as terminals: tables,
	// progress lines and questions (width COLUMNS, else 80).
	ForceTTY = "IDMPCTL_FORCE_TTY"
	// ForceTTYIn makes stdin a terminal for exec's prompt: the prompt with
	// each line echoed after it, without line editing (it needs a real
	// terminal).
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

// New is streams whose terminal facts come from the seams: getenv for the
// environment, isTTY for whether a stream is a terminal, termWidth for a
// terminal's width in columns (0: unknown). A nil seam answers no.
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

// System is the process's streams: stdout kept in an OutWriter (its first
// write error is the run's business, OutputLost), terminals as isatty
// tells them, widths as the terminal reports them.
func System() *IOStreams {
	return New(os.Stdin, &OutWriter{w: os.Stdout}, os.Stderr, os.Getenv, IsTerminal, TerminalWidth)
}

// IsTerminal says whether f (an *os.File, or an OutWriter around one) is a
// terminal.
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

// IsStderrTTY says whether stderr is a terminal (or forced): progress
// lines may be drawn.
func (s *IOStreams) IsStderrTTY() bool { return s.isTTY(s.ErrOut) || s.forced() }

// IsStdinTTY says whether stdin is a real terminal (never forced): line
// editing needs one.
func (s *IOStreams) IsStdinTTY() bool { return s.isTTY(s.In) }

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

// ColorEnabled is the one colour decision: on for a terminal, or when
// CLICOLOR_FORCE is set (not "0"); off with NO_COLOR (any value) or
// noColor (--no-color), and whenever the output is not drawn for a person
// (human false: raw and JSON are read by programs, and a forced colour
// must not put escape codes into their fields).
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

// TerminalWidth is stdout's width in columns, for tables and views: the
// real terminal's; for a terminal forced with ForceTTY, COLUMNS or 80; 0
// (no limit) when stdout is no terminal.
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

// OutputLost is the error for stdout's first write error, if any: output
// nobody got. A reader that went away (| head) took what it wanted: that
// is its choice, not lost output (and every verb but claim run, which
// must survive it, dies of SIGPIPE there as any filter does).
func (s *IOStreams) OutputLost() error {
	if s.stdout == nil || s.stdout.err == nil || errors.Is(s.stdout.err, syscall.EPIPE) {
		return nil
	}
	return &exit.Error{Code: exit.Internal, Err: lostOutput{s.stdout.err},
		Hint: "the output was lost: free the disk, or send stdout where it can be written"}
}

// IsOutputError says whether err is stdout's own first write error.
func (s *IOStreams) IsOutputError(err error) bool {
	return s.stdout != nil && s.stdout.err != nil && errors.Is(err, s.stdout.err)
}

// lostOutput says that stdout could not be written.
type lostOutput struct{ err error }

func (e lostOutput) Error() string { return "cannot write the output: " + e.err.Error() }
func (e lostOutput) Unwrap() error { return e.err }

// OutWriter is stdout as the commands write it: it keeps the first write
// error (a full disk, an I/O error), and refuses the writes after it.
// Output that was lost is an error at exit (OutputLost): a caller reading
// TOKEN=$(...) or "> token" must never take an exit 0 with nothing written
// for a success.
type OutWriter struct {
	w   io.Writer
	err error
}

// NewOutWriter is w keeping its first write error.
func NewOutWriter(w io.Writer) *OutWriter { return &OutWriter{w: w} }

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
