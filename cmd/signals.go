package cmd

// Signals: the commands that loop stop cleanly on SIGINT and SIGTERM and
// exit 128 + the signal's number; the one-call commands keep the default
// action, bounded by --timeout instead.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// untilInterrupted is ctx cancelled by SIGINT or SIGTERM, for the commands
// that loop (batches, scans, watches): they stop cleanly and say what they
// did, and a command that stops with an error for it exits 128 + the
// signal's number (130, 143), as a shell reports a process the signal
// ended. A command of one round trip keeps the default action of those
// signals, and its start does without the signal machinery.
func untilInterrupted(f *Factory, ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	note := func(s os.Signal) {
		if sig, ok := s.(syscall.Signal); ok {
			f.caught.CompareAndSwap(nil, sig)
		}
	}
	go func() {
		select {
		case s := <-ch:
			note(s)
			cancel()
			// A reply being read does not end with the context: closing
			// the connection ends it now rather than at --timeout.
			if c := f.opened.Load(); c != nil {
				_ = c.Close()
			}
		case <-ctx.Done():
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

// interruptedBy is err as the exit of a command stopped by sig: the code
// 128 + sig, what it was doing and its hint (a batch says how far it got);
// the network errors the cancellation caused say nothing.
func interruptedBy(err error, sig syscall.Signal) error {
	var e *exit.Error
	if errors.As(err, &e) && e.Silent {
		return err
	}
	out := &exit.Error{Code: 128 + int(sig), Err: fmt.Errorf("interrupted (%s)", signalName(sig))}
	if e != nil {
		out.What = e.What
		if e.Code == exit.Interrupted {
			out.Hint = e.Hint // what the command says of its stop (a batch: how far it got)
		}
	}
	return out
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}
