package redisconn

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// Backoff bounds for WithRetries: the first wait and the cap, each with full jitter.
var (
	retryBase = 50 * time.Millisecond
	retryCap  = 2 * time.Second
)

// Retryable reports whether err is a network failure after which resending
// the same idempotent operation is safe, or a cluster node's answer that
// the key's slot is moving (TRYAGAIN, ASK, MOVED: nothing was run). Other
// server errors never are: the server answered, and the answer stands (an
// OOM refusal too: it lasts until someone frees memory); nor is a write that
// was not acknowledged by enough replicas (NotAckedError): it was made, and
// the wait was bounded.
func Retryable(err error) bool {
	var notAcked *NotAckedError
	if err == nil || errors.Is(err, context.Canceled) || errors.As(err, &notAcked) ||
		strings.Contains(err.Error(), "OOM command not allowed") {
		return false
	}
	var e *exit.Error
	if errors.As(err, &e) && e.Err != nil && e.Code != exit.Unavailable {
		return false
	}
	return exit.Classify(err) == exit.Unavailable
}

// expired says ctx is done or past its deadline: a socket's timeout set
// to the deadline fires before the context's own timer marks it done.
func expired(ctx context.Context) bool {
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return true
	}
	return ctx.Err() != nil
}

// WithRetries runs op, and again up to retries times while it fails with a
// network error, waiting an exponential backoff with jitter in between; not
// once ctx has expired (a retry would only fail again). Use it only for
// idempotent operations. onRetry, if set, hears of each retry.
func WithRetries(ctx context.Context, retries int, op func() error, onRetry func(attempt int, err error)) error {
	return WithRetriesWithin(ctx, retries, 0, op, onRetry)
}

// WithRetriesWithin is WithRetries for which the replies of a cluster whose
// slot is moving (TRYAGAIN, ASK, MOVED: see exit.Migrating) do not count
// against retries: op goes again, with the same backoff, for as long as
// migration allows from the first such reply in a row. A migration takes
// moments (redis-cli --cluster reshard moves a slot's keys with a few
// MIGRATE calls); retries alone would give up within a second. onRetry
// hears of the first migration reply of a streak with attempt 0.
func WithRetriesWithin(ctx context.Context, retries int, migration time.Duration, op func() error, onRetry func(attempt int, err error)) error {
	wait := retryBase
	var moving time.Time // the first migration reply of the current streak
	attempt := 0
	for {
		err := op()
		if err == nil || expired(ctx) {
			return err // cancelled or out of time: a retry would only fail again
		}
		tell := -1 // the attempt onRetry hears of; -1: none
		if migration > 0 && exit.Migrating(err.Error()) {
			switch {
			case moving.IsZero():
				moving, tell = time.Now(), 0
			case time.Since(moving) >= migration:
				return err
			}
		} else {
			moving = time.Time{}
			attempt++
			if attempt > retries || !Retryable(err) {
				return err
			}
			tell = attempt
		}
		if onRetry != nil && tell >= 0 {
			onRetry(tell, err)
		}
		t := time.NewTimer(time.Duration(rand.Int64N(int64(wait))) + wait/2)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(wait*2, retryCap)
	}
}
