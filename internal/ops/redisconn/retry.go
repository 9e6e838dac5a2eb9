package redisconn

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// Backoff bounds for WithRetries: the first wait and the cap, each with full jitter.
var (
	retryBase = 50 * time.Millisecond
	retryCap  = 2 * time.Second
)

// Retryable reports whether err is a network failure after which resending
// the same idempotent operation is safe. Server errors never are: the server
// answered, and the answer stands; nor is a write that was not acknowledged
// by enough replicas (NotAckedError): it was made, and the wait was bounded.
func Retryable(err error) bool {
	var notAcked *NotAckedError
	if err == nil || errors.Is(err, context.Canceled) || errors.As(err, &notAcked) {
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
	wait := retryBase
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil || attempt > retries || !Retryable(err) || expired(ctx) {
			return err
		}
		if onRetry != nil {
			onRetry(attempt, err)
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
