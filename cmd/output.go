package cmd

import (
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// outWriter is stdout as the commands write it: it keeps the first write
// error (a full disk, an I/O error), and refuses the writes after it.
// Output that was lost is an error at exit (see outputLost): a caller
// reading TOKEN=$(...) or "> token" must never take an exit 0 with nothing
// written for a success.
type outWriter struct {
	w   io.Writer
	err error
}

func (o *outWriter) Write(b []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(b)
	if err != nil {
		o.err = err
	}
	return n, err
}

// file is the *os.File under w, if any (for terminal checks).
func file(w any) (*os.File, bool) {
	if o, ok := w.(*outWriter); ok {
		w = o.w
	}
	f, ok := w.(*os.File)
	return f, ok
}

// outputLost is the error for stdout's first write error, if any.
func (f *Factory) outputLost() error {
	// A reader that went away (| head) took what it wanted: that is its
	// choice, not lost output (and every verb but claim run, which must
	// survive it, dies of SIGPIPE there as any filter does).
	if f.stdout == nil || f.stdout.err == nil || errors.Is(f.stdout.err, syscall.EPIPE) {
		return nil
	}
	return &exit.Error{Code: exit.Internal, Err: lostOutput{f.stdout.err},
		Hint: "the output was lost: free the disk, or send stdout where it can be written"}
}

// lostOutput says that stdout could not be written.
type lostOutput struct{ err error }

func (e lostOutput) Error() string { return "cannot write the output: " + e.err.Error() }
func (e lostOutput) Unwrap() error { return e.err }
