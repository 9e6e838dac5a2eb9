package claimrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// child is the started command; startChild starts one (per OS).
type child interface {
	signal(s os.Signal)      // to its process group, where there are groups: what idmpctl forwards
	stop(sig syscall.Signal) // to its group and (Linux) its descendants that left it
	anyLeft() bool           // anything it started still runs: in its group (the guard aside) or (Linux) out of it
	wait() int               // waits for it and its output: its exit code (128+n after signal n)
	stoppedBy() string       // once waited: the signal that stopped it (it was ended then: SIGTTIN), or ""
	ended()                  // it ended normally and was waited for
}

// record writes COMPLETED (code 0) or FAILED with the same token, trying
// again after network failures until the lease could lapse (a first try
// always goes out). Once the command ran, an outcome that cannot be
// recorded is a warning and its exit code stands: a caller that took it for
// "not run" would run it twice. Only a lost claim is an error then.
func (r *claimedRun) record(ctx context.Context, code int, reason string, ran bool) error {
	o := r.p
	deadline := r.clock.deadline()
	pause := 50 * time.Millisecond
	var rec claim.Record
	var ack redisconn.Ack
	var err error
	tries := 0
	for {
		tries++
		bound := r.clock.s.bound
		if tries > 1 {
			bound = min(bound, time.Until(deadline))
		}
		cctx, cancel := context.WithTimeout(ctx, bound)
		if code == 0 {
			var result *string
			if !r.out.over && o.MaxResult >= 0 {
				s := string(r.out.buf)
				result = &s
			}
			rec, err = claim.Complete(cctx, r.conn, o.Key, r.p.Token, result, o.TTL, 0, append([]claim.Option{claim.Durably(o.Durability, &ack)}, o.Complete...)...)
		} else {
			rec, err = claim.Fail(cctx, r.conn, o.Key, r.p.Token, reason, o.TTL, false, claim.Durably(o.Durability, &ack))
		}
		cancel()
		if err == nil || !redisconn.Retryable(err) || time.Until(deadline) <= pause {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		if ctx.Err() != nil {
			break
		}
		pause = min(pause*2, time.Second)
	}
	what := "the command failed"
	if code == 0 {
		what = "the command succeeded"
	}
	var na *redisconn.NotAckedError
	switch {
	case err == nil:
		r.Recorded, r.Ack = rec.Status, r.Ack.Min(ack)
		if code == 0 && r.out.over {
			r.warnf("%s: output over --max-result %d bytes: recorded COMPLETED without it (a redelivery replays nothing)", o.What, o.MaxResult)
		}
		return nil
	case errors.As(err, &na):
		// Recorded on the primary, but a failover could lose it. The command
		// ran: its exit status is passed through (README.md's contract), and
		// a consumer acking on it is spared a redelivery's second run.
		r.Recorded, r.Ack = rec.Status, r.Ack.Min(ack)
		r.Unacknowledged = fmt.Sprintf("%v; %s and its exit status is passed through: if a failover loses the outcome, the key is PROCESSING again and a redelivery runs the command again once the lease passes", err, what)
		r.warnf("%s: %s", o.What, r.Unacknowledged)
		return nil
	case !ran || exit.Code(err) == exit.Lost:
		hint := what + " but its outcome could not be recorded; the key stays PROCESSING until its lease passes"
		if !ran {
			hint = "the command was not run; its claim could not be given up, and the key stays PROCESSING until its lease passes"
		}
		return exit.WithHint(exit.Wrap(err, o.What), hint)
	}
	r.Unrecorded = fmt.Sprintf("%s (exit status %d) but its outcome could not be recorded (%d tries, until its lease could lapse): %v; "+
		"its exit status is passed through; the key stays PROCESSING until the lease passes, and then a redelivery can run the command again",
		what, code, tries, err)
	r.warnf("%s: %s", o.What, r.Unrecorded)
	return nil
}
