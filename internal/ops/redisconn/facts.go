package redisconn

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// IDMPBugSettings are the settings known Redis 8.6 IDMP bugs depend on.
var IDMPBugSettings = []string{"appendonly", "aof-use-rdb-preamble", "repl-diskless-load"}

// ServerFacts are what the server's health lints are functions of: what the
// server is, and each primary's settings.
type ServerFacts struct {
	Product    string      `json:"product"`
	Version    string      `json:"version"` // "" when INFO was not allowed
	NativeIDMP bool        `json:"native_idmp"`
	Nodes      []NodeFacts `json:"nodes"` // the server, or every primary of a cluster (sorted by Addr)
}

// NodeFacts are one node's IDMPBugSettings and its place in replication.
type NodeFacts struct {
	Addr string `json:"addr,omitempty"` // cluster nodes only
	// Config holds the settings read; nil when CONFIG GET was refused,
	// with the server's reason in ConfigError.
	Config      map[string]string `json:"config,omitempty"`
	ConfigError string            `json:"config_error,omitempty"`
	// Role (master, slave) and the replicas connected to it, from INFO
	// replication: "" and 0 when INFO was refused.
	Role     string `json:"role,omitempty"`
	Replicas int    `json:"replicas,omitempty"`
}

// ReadServerFacts reads Capabilities and, on every primary, CONFIG GET of
// each setting (one each: before 7.0 it takes one); a refusal is a fact.
func ReadServerFacts(ctx context.Context, c *Conn) (ServerFacts, error) {
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return ServerFacts{}, err
	}
	f := ServerFacts{Product: caps.Product, Version: caps.Version, NativeIDMP: caps.NativeIDMP}
	ctx, cancel := c.Ctx(ctx)
	defer cancel()
	read := func(ctx context.Context, node redis.Cmdable, addr string) (NodeFacts, error) {
		nf := NodeFacts{Addr: addr}
		cmds := make([]*redis.MapStringStringCmd, len(IDMPBugSettings))
		var info *redis.StringCmd
		_, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, s := range IDMPBugSettings {
				cmds[i] = p.ConfigGet(ctx, s)
			}
			info = p.Info(ctx, "replication")
			return nil
		})
		var reply redis.Error
		if err != nil && !errors.As(err, &reply) {
			return nf, err
		}
		if v, err := info.Result(); err == nil {
			m := ParseInfo(v)
			nf.Role = m["role"]
			nf.Replicas, _ = strconv.Atoi(m["connected_slaves"])
		}
		nf.Config = map[string]string{}
		for _, cmd := range cmds {
			vals, err := cmd.Result()
			if err != nil {
				nf.Config, nf.ConfigError = nil, err.Error()
				return nf, nil
			}
			maps.Copy(nf.Config, vals)
		}
		return nf, nil
	}
	var mu sync.Mutex
	err = c.EachPrimary(ctx, func(ctx context.Context, node redis.Cmdable, addr string) error {
		nf, err := read(ctx, node, addr)
		mu.Lock()
		f.Nodes = append(f.Nodes, nf)
		mu.Unlock()
		return err
	})
	slices.SortFunc(f.Nodes, func(a, b NodeFacts) int { return cmp.Compare(a.Addr, b.Addr) })
	return f, err
}
