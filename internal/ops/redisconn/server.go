package redisconn

import (
	"context"
	_ "embed"
	"slices"
	"sync"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/redis/go-redis/v9"
)

// ServerReport is what `inspect --server` shows.
type ServerReport struct {
	URL        string   `json:"url"`
	Product    string   `json:"product"`
	Version    string   `json:"version"`
	Mode       string   `json:"mode"` // standalone or cluster
	Role       string   `json:"role"` // master or replica (of the node reached)
	Primaries  []string `json:"primaries,omitempty"`
	NativeIDMP bool     `json:"native_idmp"`
	// Unknown are the native IDMP commands the server does not know by
	// their names (XCFGSET, or 8.6.2's XIDMPRECORD, renamed away with
	// rename-command).
	Unknown  []string       `json:"unknown_commands,omitempty"`
	Defaults *idmp.Defaults `json:"defaults,omitempty"` // in force: the server's (native) or idmpctl's (emulated)
	// Emulation says whether emulated IDMP can run: "available",
	// "available-unchecked" (no redis.acl_check_cmd: permissions are not
	// checked before the scripts write), or "unavailable: why".
	Emulation string        `json:"emulation"`
	Eviction  *Eviction     `json:"eviction,omitempty"` // nil when INFO memory cannot be read
	PingRTT   time.Duration `json:"-"`
	PingRTTus int64         `json:"ping_rtt_us"`
}

// pingSamples is how many PINGs the round-trip figure is the median of.
const pingSamples = 5

// InspectServer reports the server's capabilities, role and PING time.
func InspectServer(ctx context.Context, c *Conn) (ServerReport, error) {
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return ServerReport{}, err
	}
	r := ServerReport{
		URL: c.Display, Product: caps.Product, Version: caps.Version,
		Mode: caps.Mode, NativeIDMP: caps.NativeIDMP,
	}
	r.Role = Role(ctx, c)
	r.Emulation = Emulation(ctx, c)
	if e, ok := c.Eviction(ctx); ok {
		r.Eviction = &e
	}
	ctx, cancel := c.Ctx(ctx)
	defer cancel()
	var mu sync.Mutex
	err = c.EachPrimary(ctx, func(_ context.Context, _ redis.Cmdable, addr string) error {
		if addr != "" { // a cluster's primaries; none listed for one server
			mu.Lock()
			r.Primaries = append(r.Primaries, addr)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	slices.Sort(r.Primaries)
	if r.NativeIDMP {
		// XIDMPRECORD came with Redis 8.6.2: before, unknown is no news.
		names := []any{"XCFGSET"}
		if VersionAtLeast(caps.Version, 8, 6, 2) {
			names = append(names, "XIDMPRECORD")
		}
		if v, err := c.Client().Do(ctx, append([]any{"COMMAND", "INFO"}, names...)...).Slice(); err == nil {
			for i, n := range names {
				if i >= len(v) || v[i] == nil {
					r.Unknown = append(r.Unknown, n.(string))
				}
			}
		}
		d, err := ServerIDMPDefaults(ctx, c.Client())
		if err == nil {
			r.Defaults = &d
		}
	} else if d, err := c.EmulatedIDMPDefaults(ctx); err == nil {
		r.Defaults = &d
	}
	rtts := make([]time.Duration, 0, pingSamples)
	for range pingSamples {
		start := time.Now()
		if err := c.Client().Ping(ctx).Err(); err != nil {
			return r, err
		}
		rtts = append(rtts, time.Since(start))
	}
	slices.Sort(rtts)
	r.PingRTT = rtts[len(rtts)/2]
	r.PingRTTus = r.PingRTT.Microseconds()
	return r, nil
}

// EmulatedIDMPDefaults reads the emulated defaults at idmp.DefaultsKey
// (exec's CONFIG SET stream-idmp-*); absent ones are Redis's.
func (c *Conn) EmulatedIDMPDefaults(ctx context.Context) (idmp.Defaults, error) {
	var vals []any
	err := c.Do(func(uc redis.UniversalClient) error { // a cluster node redirects
		var err error
		vals, err = uc.HMGet(ctx, idmp.DefaultsKey, idmp.ParamDuration, idmp.ParamMaxSize).Result()
		return err
	})
	if err != nil {
		return idmp.Defaults{}, err
	}
	str := func(v any) string { s, _ := v.(string); return s }
	return idmp.ParseDefaults(str(vals[0]), str(vals[1])), nil
}

// ServerIDMPDefaults reads CONFIG GET stream-idmp-duration/-maxsize (the
// server holds them in idmp's ranges, as ParseDefaults reads them).
func ServerIDMPDefaults(ctx context.Context, c redis.UniversalClient) (idmp.Defaults, error) {
	vals, err := c.ConfigGet(ctx, "stream-idmp-*").Result()
	if err != nil {
		return idmp.Defaults{}, err
	}
	return idmp.ParseDefaults(vals[idmp.ParamDuration], vals[idmp.ParamMaxSize]), nil
}

// Role is the replication role of the node reached (INFO replication):
// "master" or "slave"; "" when it cannot be read.
func Role(ctx context.Context, c *Conn) string {
	ctx, cancel := c.Ctx(ctx)
	defer cancel()
	info, err := c.Client().Info(ctx, "replication").Result()
	if err != nil {
		return ""
	}
	return ParseInfo(info)["role"]
}

//go:embed lua/emulation_probe.lua
var emulationProbeLua string

// emulationProbe is 1 where the server's Lua checks permissions.
var emulationProbe = NewLua[struct{}](Int64Reply, emulationProbeLua)

// Emulation reports whether emulated IDMP can run: EVAL/EVALSHA allowed,
// and redis.acl_check_cmd (Redis 7.0+, Valkey) to check before writing.
func Emulation(ctx context.Context, c *Conn) string {
	call := emulationProbe.Call(&struct{}{})
	_, err := c.Run(ctx, RunOpts{}, call)
	v, rerr := emulationProbe.Reply(call)
	if err == nil {
		err = rerr
	}
	switch {
	case err == nil && v == 1:
		return "available"
	case err == nil:
		return "available-unchecked: the server's Lua has no redis.acl_check_cmd (Redis before 7.0), so the scripts cannot check permissions before they write"
	case exit.ScriptingDisabled(err.Error()):
		return "unavailable: EVAL/EVALSHA are renamed or disabled on this server (rename-command)"
	case exit.Classify(err) == exit.Permission:
		return "unavailable to this user: " + err.Error()
	}
	return "unknown: " + err.Error()
}
