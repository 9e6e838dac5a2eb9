package redisconn

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// Backoff bounds for WithRetriesWithin: the first wait and the cap, each with full jitter.
var (
	retryBase = 50 * time.Millisecond
	retryCap  = 2 * time.Second
)

// Retryable reports a network failure, or a moving slot (TRYAGAIN, ASK,
// MOVED: nothing ran). Other answers stand (OOM too: it lasts), and a
// NotAckedError was written with a bounded wait.
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

// WithRetriesWithin runs an idempotent op, again up to retries times after
// a Retryable error, with jittered exponential backoff, until ctx expires.
// With migration > 0 a moving slot's replies do not count: op goes again
// for as long as migration allows from the first of a streak (onRetry
// hears it as attempt 0). A reshard takes moments; retries alone would
// give up within a second.
func WithRetriesWithin(ctx context.Context, retries int, migration time.Duration, op func() error, onRetry func(attempt int, err error)) error {
	wait := retryBase
	var moving time.Time // the first migration reply of the current streak
	attempt := 0
	for {
		// Cancelled or out of time, a retry would only fail again (a socket's
		// timeout set to the deadline fires before ctx's timer marks it done).
		err := op()
		if dl, ok := ctx.Deadline(); err == nil || ctx.Err() != nil || ok && !time.Now().Before(dl) {
			return err
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
