package stream

import (
	"context"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// TrackedIIDs counts what purge --stream NAME [--pid PID] would forget. For
// a missing stream (exit.NotFound), unless dryRun or native, its leftover
// emulated state is dropped first (R13), and the hint says how that went.
func (s *Streams) TrackedIIDs(ctx context.Context, name, pid string, dryRun bool) (int64, error) {
	what := "purge --stream " + strconv.Quote(name)
	info, err := s.Info(ctx, name)
	if exit.Code(err) == exit.NotFound && !dryRun && s.Mode() == ModeEmulated {
		switch _, cerr := s.ClearTracking(ctx, name, ""); {
		case exit.Code(cerr) == exit.NotFound:
			return 0, exit.WithHint(exit.Wrap(err, what), "the stream does not exist: its leftover emulated IDMP state, if any, was dropped")
		case cerr != nil:
			// The leftover state stays: say why, not "no such key".
			hint := "the stream does not exist, and its leftover emulated IDMP state could not be dropped"
			if h := exit.Hint(cerr); h != "" {
				hint += ": " + h
			}
			return 0, exit.WithHint(exit.Wrap(cerr, what), hint)
		}
	}
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
