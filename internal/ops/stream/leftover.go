package stream

import (
	"context"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// LeftoverState names those of names (no key) whose emulated state remains
// (deleted by hand), read-only; unreadable ones are left out (only a hint).
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
