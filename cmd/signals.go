package cmd

// Signals: the commands that loop stop cleanly on SIGINT and SIGTERM and
// exit 128 + the signal's number; the one-call commands keep the default
// action, bounded by --timeout instead.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// untilInterrupted is ctx cancelled by SIGINT or SIGTERM, for the commands
// that loop (batches, scans, watches): they stop cleanly, say what they did,
// and an error exits 128 + the signal's number, as a shell reports it. With
// onStop (a batch, which reads the replies of what it sent) it takes two
// steps: the first signal calls onStop, a second cancels ctx.
func untilInterrupted(f *Factory, ctx context.Context, onStop func(os.Signal)) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	note := func(s os.Signal) {
		if sig, ok := s.(syscall.Signal); ok {
			f.caught.CompareAndSwap(nil, sig)
		}
	}
	go func() {
		for {
			select {
			case s := <-ch:
				note(s)
				if onStop != nil {
					onStop(s)
					onStop = nil
					continue
				}
				cancel()
				// A reply being read does not end with the context: closing
				// the connection ends it now rather than at --timeout.
				if c := f.opened.Load(); c != nil {
					_ = c.Close()
				}
			case <-ctx.Done():
			}
			return
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		select {
		case s := <-ch: // arrived as the command ended
			note(s)
		default:
		}
		cancel()
	}
}

// interruptedBy is err as the exit of a command stopped by sig (128 + sig);
// the network errors the cancellation caused say nothing.
func interruptedBy(err error, sig syscall.Signal) error {
	var e *exit.Error
	if errors.As(err, &e) && e.Silent {
		return err
	}
	out := &exit.Error{Code: 128 + int(sig), Err: fmt.Errorf("interrupted (%s)", sigName(sig))}
	if e != nil {
		out.What = e.What
		if e.Code == exit.Interrupted {
			out.Hint = e.Hint // what the command says of its stop (a batch: how far it got)
		}
	}
	return out
}

// sigNames are the signals' names as errors give them.
var sigNames = map[os.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"}

func sigName(s os.Signal) string { return cmp.Or(sigNames[s], s.String()) }

// surviveClosedStdout keeps a reader gone (| head -1) from killing
// idmpctl with SIGPIPE: a write to stdout fails (EPIPE, not lost output:
// IOStreams.OutputLost) and the work goes on. Caught, not ignored, so a
// command started afterwards starts with the default action.
func surviveClosedStdout() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) }
