package redisconn

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/idmpctl/idmpctl/internal/bytesize"
	"github.com/redis/go-redis/v9"
)

// Eviction is a server's maxmemory settings: an evicted stream, state or
// progress record forgets its messages, and retries add duplicates.
type Eviction struct {
	MaxMemory int64  `json:"maxmemory"`
	Policy    string `json:"maxmemory_policy"`
	Node      string `json:"node,omitempty"` // the primary it was read from (cluster)
}

// Risky reports a server that may evict keys.
func (e Eviction) Risky() bool {
	return e.MaxMemory > 0 && e.Policy != "" && e.Policy != "noeviction"
}

// Warning says what can be lost and what to do ("" when nothing can).
func (e Eviction) Warning() string {
	if !e.Risky() {
		return ""
	}
	where := "the server"
	if e.Node != "" {
		where = "primary " + e.Node
	}
	what := "any key can be evicted: a stream, its emulated IDMP state or a batch's progress record"
	if strings.HasPrefix(e.Policy, "volatile-") {
		what = "keys with a TTL can be evicted: idmpctl's state has none, but a stream given a TTL, or state written by idmpctl before it dropped TTLs, can go"
	}
	return fmt.Sprintf("%s may evict keys under memory pressure (maxmemory %s, maxmemory-policy %s): %s, and a stream or state that goes forgets its messages, so retries and reruns add them again; "+
		"set maxmemory-policy noeviction on servers that hold IDMP streams (docs/emulated.md: Eviction)", where, bytesize.Format(e.MaxMemory), e.Policy, what)
}

// ParseEviction reads the eviction settings from an INFO memory reply.
func ParseEviction(info string) (Eviction, bool) {
	m := ParseInfo(info)
	policy, ok := m["maxmemory_policy"]
	if !ok {
		return Eviction{}, false
	}
	n, err := strconv.ParseInt(m["maxmemory"], 10, 64)
	if err != nil {
		return Eviction{}, false
	}
	return Eviction{MaxMemory: n, Policy: policy}, true
}

// evictionCache is what the connection learned of the eviction policy.
type evictionCache struct {
	mu    sync.Mutex
	known bool
	e     Eviction
}

func (c *evictionCache) get() (Eviction, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.e, c.known
}

func (c *evictionCache) set(e Eviction) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known || e.Risky() && !c.e.Risky() {
		c.e, c.known = e, true
	}
}

// Eviction reads INFO memory once (on every primary, keeping a risky one);
// false when it cannot (no INFO right).
func (c *Conn) Eviction(ctx context.Context) (Eviction, bool) {
	if e, ok := c.eviction.get(); ok {
		return e, true
	}
	ctx, cancel := c.Ctx(ctx)
	defer cancel()
	_ = c.EachPrimary(ctx, func(ctx context.Context, node redis.Cmdable, addr string) error {
		if info, err := node.Info(ctx, "memory").Result(); err == nil {
			if e, ok := ParseEviction(info); ok {
				e.Node = addr
				c.eviction.set(e)
			}
		}
		return nil
	})
	return c.eviction.get()
}

// KnownEviction is the eviction settings when a call already read them.
func (c *Conn) KnownEviction() (Eviction, bool) { return c.eviction.get() }

// QueueEviction adds CONFIG GET of the two settings (a quarter of INFO
// memory's cost) to a single add's round trip when WatchEviction and they
// are not known yet, and returns what notes its reply.
func (c *Conn) QueueEviction(ctx context.Context, p redis.Pipeliner) func() {
	if _, known := c.eviction.get(); known || !c.WatchEviction {
		return func() {}
	}
	cmd := redis.NewMapStringStringCmd(ctx, "config", "get", "maxmemory-policy", "maxmemory")
	_ = p.Process(ctx, cmd)
	return func() {
		v, err := cmd.Result()
		n, nerr := strconv.ParseInt(v["maxmemory"], 10, 64)
		if err == nil && nerr == nil && v["maxmemory-policy"] != "" {
			c.eviction.set(Eviction{MaxMemory: n, Policy: v["maxmemory-policy"]})
		}
	}
}

// ProtoMaxBulkLen is proto-max-bulk-len, read once; 0 when unreadable (the
// server then refuses a larger argument itself, nothing run).
func (c *Conn) ProtoMaxBulkLen(ctx context.Context) int64 {
	c.mu.Lock()
	if c.maxBulkRead {
		defer c.mu.Unlock()
		return c.maxBulk
	}
	c.mu.Unlock()
	ctx, cancel := c.Ctx(ctx)
	defer cancel()
	var n int64
	if v, err := c.Client().ConfigGet(ctx, "proto-max-bulk-len").Result(); err == nil {
		n, _ = strconv.ParseInt(v["proto-max-bulk-len"], 10, 64)
	}
	c.mu.Lock()
	c.maxBulk, c.maxBulkRead = n, true
	c.mu.Unlock()
	return n
}
