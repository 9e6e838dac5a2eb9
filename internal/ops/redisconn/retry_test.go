package redisconn

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// WithRetries is WithRetriesWithin without the migration allowance.
func WithRetries(ctx context.Context, retries int, op func() error, onRetry func(attempt int, err error)) error {
	return WithRetriesWithin(ctx, retries, 0, op, onRetry)
}

func TestRetryOnlyNetworkErrors(t *testing.T) {
	retryBase = 1
	ctx := context.Background()
	calls := 0
	netErr := fmt.Errorf("dial: %w", syscall.ECONNREFUSED)
	err := WithRetries(ctx, 3, func() error { calls++; return netErr }, nil)
	if !errors.Is(err, syscall.ECONNREFUSED) || calls != 4 {
		t.Fatalf("network error: %d calls, err %v; want 4 calls", calls, err)
	}
	calls = 0
	serverErr := errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")
	if err := WithRetries(ctx, 3, func() error { calls++; return serverErr }, nil); err != serverErr || calls != 1 {
		t.Fatalf("server error retried: %d calls", calls)
	}
	calls = 0
	usage := exit.Usagef("bad")
	if _ = WithRetries(ctx, 3, func() error { calls++; return usage }, nil); calls != 1 {
		t.Fatalf("usage error retried: %d calls", calls)
	}
	calls = 0
	err = WithRetries(ctx, 3, func() error {
		calls++
		if calls < 3 {
			return netErr
		}
		return nil
	}, nil)
	if err != nil || calls != 3 {
		t.Fatalf("recovering op: %d calls, %v", calls, err)
	}
}
