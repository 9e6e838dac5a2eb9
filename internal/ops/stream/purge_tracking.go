package stream

import (
	"context"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// TrackedIIDs reads what purge --stream NAME [--pid PID] would forget: the
// stream's tracked iids, or those of pid alone ("": every producer's).
// Errors name the command (purge --stream "NAME").
//
// A stream that does not exist is exit.NotFound. Unless dryRun, and unless
// the mode is native, its leftover emulated IDMP state (orphaned: a stream
// deleted by hand, its state without a TTL) is dropped first, as the
// stream's deletion would have (R13); the stream is still missing, and the
// error's hint says whether the state went, or why it stays.
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
