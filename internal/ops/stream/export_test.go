package stream

import (
	"context"
	"strings"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

// Resolved is the mode after asking the server if need be.
func (s *Streams) Resolved(ctx context.Context) (Mode, error) {
	err := s.resolve(ctx)
	return s.Mode, err
}

// rawRun runs script s with keys and args as given, not through its typed
// call: for tests that send a call as the client builds it, or a malformed
// one on purpose.
func rawRun(s *redisconn.Script, ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return redis.NewScript(strings.Join(s.Parts(), "")).Run(ctx, c, keys, args...)
}

// stateCall is the state's keys and leading arguments as a call has them
// (stateArgs), for tests that build a call by hand.
func (s *Streams) stateCall(stream string) (idmp.StateLayout, []string, []any, error) {
	l, st, err := s.state(stream)
	return l, []string{st.Stream, st.Meta, st.PIDs}, []any{st.IDsPrefix, st.OrderPrefix, st.Owner}, err
}
