package keyspace

import (
	"context"
	"strconv"
	"sync"

	"github.com/idmpctl/idmpctl/internal/capacity"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

// MeasureSample is calc-ttl --sample: the mean sizes of up to n keys
// matching pattern (of each primary). No key matching is exit.NotFound.
func MeasureSample(ctx context.Context, c *redisconn.Conn, pattern string, n int) (*capacity.MeasuredKeys, error) {
	keys, err := SampleKeys(ctx, c, pattern, n)
	if err != nil {
		return nil, exit.Wrap(err, "calc-ttl --sample")
	}
	sizes, err := MeasureKeys(ctx, c, keys, true)
	if err != nil {
		return nil, exit.Wrap(err, "calc-ttl --sample")
	}
	if len(sizes) == 0 {
		return nil, exit.New(exit.NotFound, "calc-ttl --sample", "no key matches %q", pattern)
	}
	m := &capacity.MeasuredKeys{Pattern: pattern, Keys: len(sizes)}
	for _, s := range sizes {
		m.KeyBytes += float64(s.KeyBytes)
		m.ValueBytes += float64(s.ValueBytes)
		m.UsageBytes += float64(s.UsageBytes)
	}
	n64 := float64(len(sizes))
	m.KeyBytes, m.ValueBytes, m.UsageBytes = m.KeyBytes/n64, m.ValueBytes/n64, m.UsageBytes/n64
	m.Server, m.ServerUnread = serverMemory(ctx, c)
	return m, nil
}

// serverMemory is INFO memory of the fullest primary (by used memory over
// maxmemory); nil without a maxmemory, and then with why when no primary
// could be read (no INFO right).
func serverMemory(ctx context.Context, c *redisconn.Conn) (*capacity.ServerMemory, error) {
	ctx, cancel := c.Ctx(ctx)
	defer cancel()
	var mu sync.Mutex
	var fullest *capacity.ServerMemory
	primaries, read := 0, 0
	var unread error
	_ = c.EachPrimary(ctx, func(ctx context.Context, node redis.Cmdable, addr string) error {
		info, err := node.Info(ctx, "memory").Result()
		mu.Lock()
		defer mu.Unlock()
		primaries++
		if err != nil {
			unread = err
			return nil
		}
		read++
		m := redisconn.ParseInfo(info)
		used, uerr := strconv.ParseInt(m["used_memory"], 10, 64)
		maxmem, merr := strconv.ParseInt(m["maxmemory"], 10, 64)
		if uerr != nil || merr != nil || maxmem <= 0 {
			return nil
		}
		if fullest == nil || float64(used)/float64(maxmem) > float64(fullest.Used)/float64(fullest.MaxMemory) {
			fullest = &capacity.ServerMemory{Node: addr, Used: used, MaxMemory: maxmem, Policy: m["maxmemory_policy"]}
		}
		return nil
	})
	if fullest != nil {
		fullest.Primaries = primaries
	}
	if read > 0 {
		unread = nil
	}
	return fullest, unread
}
