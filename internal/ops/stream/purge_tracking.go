package stream

import (
	"context"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// TrackedIIDs counts what purge --stream NAME [--pid PID] would forget,
// read-only: a missing stream is exit.NotFound (its leftover emulated
// state, if any, goes only by DropLeftover, once confirmed).
func (s *Streams) TrackedIIDs(ctx context.Context, name, pid string) (int64, error) {
	what := "purge --stream " + strconv.Quote(name)
	info, err := s.Info(ctx, name)
	if err == nil {
		err = s.be.clearable(pid) // refused in a dry run and before the question too
	}
	if err != nil {
		return 0, exit.Wrap(err, what)
	}
	if pid == "" {
		return info.IIDsTracked, nil
	}
	for _, p := range info.PIDs {
		if p.PID == pid {
			return p.IIDs, nil
		}
	}
	return 0, nil
}

// HasLeftover reports whether name, a stream that does not exist, left
// emulated state that this mode drops (purge --stream: DropLeftover).
func (s *Streams) HasLeftover(ctx context.Context, name string) bool {
	return s.Mode() == ModeEmulated && len(LeftoverState(ctx, s.Conn, []string{name})) > 0
}

// DropLeftover drops, whole, the emulated state that the deleted stream
// name left (R13), atomically only while name is no stream; the stream's
// absence stays the error (66), its hint saying what became of the state.
func (s *Streams) DropLeftover(ctx context.Context, name string) error {
	what := "purge --stream " + strconv.Quote(name)
	_, kept, err := s.DropOrphanedState(ctx, []string{name}, nil)
	switch {
	case err != nil:
		// The leftover state stays: say why, not "no such key".
		hint := "the stream does not exist, and its leftover emulated IDMP state could not be dropped"
		if h := exit.Hint(err); h != "" {
			hint += ": " + h
		}
		return exit.WithHint(exit.Wrap(err, what), hint)
	case kept:
		return exit.New(exit.Busy, what, "the stream was created again meanwhile: nothing was dropped")
	}
	return exit.WithHint(exit.Wrap(errNoSuchKey(), what), "the stream does not exist: its leftover emulated IDMP state was dropped")
}

// LeftoverState names those of names (no key) whose emulated state remains
// (deleted by hand), read-only; unreadable ones are left out (only a hint).
func LeftoverState(ctx context.Context, c *redisconn.Conn, names []string) []string {
	var out []string
	for _, name := range names {
		l, err := idmp.StateKeys(name, c.Cluster())
		if err != nil {
			continue
		}
		cctx, cancel := c.Ctx(ctx)
		n, err := c.Client().Exists(cctx, l.Meta, l.PIDs).Result() // one slot: a hash tag
		cancel()
		if err == nil && n > 0 {
			out = append(out, name)
		}
	}
	return out
}
