package claimrun

import (
	"context"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// Acquire claims the key, polling while it is busy for up to wait. sent is
// when the acquire that decided was sent: the claim is live until at least
// sent + lease (Params.LeaseSent).
func Acquire(ctx context.Context, conn *redisconn.Conn, p claim.AcquireParams, wait time.Duration, opts ...claim.Option) (res claim.AcquireResult, sent time.Time, err error) {
	deadline := time.Now().Add(wait)
	pause := 50 * time.Millisecond
	for {
		sent = time.Now()
		res, err = claim.Acquire(ctx, conn, p, opts...)
		if err != nil || res.Outcome != claim.Busy || time.Now().After(deadline) {
			return res, sent, err
		}
		next := min(pause, time.Until(deadline), time.Duration(res.LeaseLeftMs)*time.Millisecond+10*time.Millisecond)
		select {
		case <-ctx.Done():
			return res, sent, ctx.Err()
		case <-time.After(max(next, 10*time.Millisecond)):
		}
		pause = min(pause*2, time.Second)
	}
}
