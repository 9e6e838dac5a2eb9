package stream

import (
	"context"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// AddRetrying is AddDurably sent again after a network error, up to
// retries times, and for as long as the connection's timeout allows while
// a cluster's slot is moving (redisconn.WithRetriesWithin). An idempotent
// add is safe to repeat: a repeat of one that was made is recognised as
// its duplicate and returns the same entry ID. An add that was not
// acknowledged is never repeated (it was made; the wait was bounded), nor
// one the server refused. onRetry, if set, hears of each repeat (attempt
// 0: the first reply of a moving slot).
func (s *Streams) AddRetrying(ctx context.Context, req AddRequest, d redisconn.Durability, retries int, onRetry func(attempt int, err error)) (AddResult, error) {
	var res AddResult
	err := redisconn.WithRetriesWithin(ctx, retries, s.Conn.Timeout, func() error {
		var err error
		res, _, err = s.AddDurably(ctx, req, d)
		return err
	}, onRetry)
	return res, err
}
