package keyspace

import (
	"context"
	"slices"
	"strings"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// Bounds of CompleteKeys: what a Tab may cost the server.
const (
	completeCount = 100  // SCAN's COUNT
	completeLook  = 1000 // keys SCAN may walk over, at most
)

// CompleteKeys is up to limit key names that start with prefix, for shell
// completion: one bounded SCAN, never KEYS. A cluster gets none (every
// primary would be scanned). Names a shell cannot take as one word and
// emulated IDMP state keys are left out.
func CompleteKeys(ctx context.Context, c *redisconn.Conn, prefix string, limit int) ([]string, error) {
	caps, err := c.Capabilities(ctx)
	if err != nil || caps.Cluster {
		return nil, err
	}
	var out []string
	cursor, looked := uint64(0), 0
	for {
		keys, next, err := c.Client().Scan(ctx, cursor, GlobEscape(prefix)+"*", completeCount).Result()
		if err != nil {
			return out, err
		}
		for _, k := range keys {
			if len(out) < limit && shellWord(k) && !stateKeyName(k) {
				out = append(out, k)
			}
		}
		looked += completeCount
		if cursor = next; cursor == 0 || len(out) >= limit || looked >= completeLook {
			break
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// shellWord says whether a shell takes k as one word as it is.
func shellWord(k string) bool {
	return k != "" && !strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '\ufffd' })
}

// stateKeyName: k is named as emulated IDMP state, no command's KEY.
func stateKeyName(k string) bool {
	for _, t := range []string{"hash", "set", "zset", "list"} {
		if _, ok := idmp.ParseStateKey(k, t); ok {
			return true
		}
	}
	return false
}
