package stream

import (
	"context"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// LeftoverState names the streams of names, none of them a key, whose
// emulated IDMP state remains (a stream deleted by hand: its state has no
// TTL, and goes at the next call on the name). Read-only: an EXISTS of the
// state's meta key, then of its pids key, each within the connection's
// timeout. A name whose state cannot be read is left out: the answer only
// adds a hint to "no such key".
func LeftoverState(ctx context.Context, c *redisconn.Conn, names []string) []string {
	var out []string
	for _, name := range names {
		l, err := idmp.StateKeys(name, c.Cluster())
		if err != nil {
			continue
		}
		cctx, cancel := c.Ctx(ctx)
		n, err := c.Client().Exists(cctx, l.Meta).Result()
		if err == nil && n == 0 {
			n, err = c.Client().Exists(cctx, l.PIDs).Result()
		}
		cancel()
		if err == nil && n > 0 {
			out = append(out, name)
		}
	}
	return out
}
