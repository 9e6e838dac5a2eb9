package keyspace

// restore FILE: put back what purge --backup saved, with RESTORE ... ABSTTL
// (the expiry the record had, on the server's clock), each to its node in a
// cluster, never over an existing key unless asked.

import (
	"cmp"
	"context"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/backup"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

// RestoreOutcome is what happened to one record.
type RestoreOutcome string

// Outcomes.
const (
	Restored     RestoreOutcome = "restored"
	Existing     RestoreOutcome = "existing" // the key exists: skipped (no --replace)
	Expired      RestoreOutcome = "expired"  // its TTL ran out since the backup: skipped
	WouldRestore RestoreOutcome = "would-restore"
	Failed       RestoreOutcome = "failed" // the server refused it (see the error)
)

// RestoreOptions say how to restore.
type RestoreOptions struct {
	Replace bool // RESTORE ... REPLACE: overwrite an existing key
	DryRun  bool // write nothing: say what would happen (EXISTS)
}

// Restorer restores records on one connection.
type Restorer struct {
	c      *redisconn.Conn
	opts   RestoreOptions
	abstTL bool // the server takes RESTORE ... ABSTTL (Redis 5.0+, Valkey)
}

// NewRestorer asks what the server is (a cluster is restored key by key to
// each key's node; ABSTTL since Redis 5.0).
func NewRestorer(ctx context.Context, c *redisconn.Conn, opts RestoreOptions) (*Restorer, error) {
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return nil, err
	}
	r := &Restorer{c: c, opts: opts, abstTL: true}
	if major, _, ok := versionMajorMinor(caps.Version); ok && caps.Product == "redis" && major < 5 {
		r.abstTL = false
	}
	return r, nil
}

func versionMajorMinor(v string) (int, int, bool) {
	var major, minor int
	i := 0
	for ; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
		major = major*10 + int(v[i]-'0')
	}
	if i == 0 || i >= len(v) || v[i] != '.' {
		return 0, 0, false
	}
	j := i + 1
	for ; j < len(v) && v[j] >= '0' && v[j] <= '9'; j++ {
		minor = minor*10 + int(v[j]-'0')
	}
	return major, minor, j > i+1
}

// Restore restores recs in one pipelined round trip (after one for the
// server's clock) and returns each one's outcome. A record whose expiry has
// passed is not sent. Every record is sent; a reply error other than
// BUSYKEY (the key exists) makes that record's outcome Failed, and the
// first such error is returned with the outcomes.
func (r *Restorer) Restore(ctx context.Context, recs []backup.Record) ([]RestoreOutcome, error) {
	tctx, cancel := r.c.Ctx(ctx)
	now, err := r.c.Client().Time(tctx).Result()
	cancel()
	if err != nil {
		return nil, exit.Wrap(err, "restore")
	}
	nowMs := now.UnixMilli()
	out := make([]RestoreOutcome, len(recs))
	cmds := make([]redis.Cmder, len(recs))
	err = r.c.Pipelined(ctx, func(p redis.Pipeliner, ctx context.Context) {
		for i, rec := range recs {
			if rec.ExpiresAt > 0 && rec.ExpiresAt <= nowMs {
				out[i] = Expired
				continue
			}
			if r.opts.DryRun {
				cmds[i] = p.Exists(ctx, rec.Key)
				continue
			}
			ttl := int64(0)
			switch {
			case rec.ExpiresAt > 0 && r.abstTL:
				ttl = rec.ExpiresAt
			case rec.ExpiresAt > 0:
				ttl = rec.ExpiresAt - nowMs
			}
			args := []any{"restore", rec.Key, ttl, string(rec.Payload)}
			if r.opts.Replace {
				args = append(args, "replace")
			}
			if rec.ExpiresAt > 0 && r.abstTL {
				args = append(args, "absttl")
			}
			cmd := redis.NewStatusCmd(ctx, args...)
			cmd.SetFirstKeyPos(1)
			_ = p.Process(ctx, cmd)
			cmds[i] = cmd
		}
	})
	if err != nil {
		return nil, exit.Wrap(err, "restore")
	}
	var first error
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		if ex, ok := cmd.(*redis.IntCmd); ok {
			n, err := ex.Result()
			switch {
			case err != nil:
				out[i] = Failed
				first = cmp.Or(first, exit.Wrap(err, "restore --dry-run "+strconv.Quote(recs[i].Key)))
			case n > 0:
				out[i] = Existing
			default:
				out[i] = WouldRestore
			}
			continue
		}
		switch err := cmd.Err(); {
		case err == nil:
			out[i] = Restored
		case redis.HasErrorPrefix(err, "BUSYKEY"):
			out[i] = Existing
		default:
			out[i] = Failed
			e := exit.Wrap(err, "restore "+strconv.Quote(recs[i].Key))
			if msg := err.Error(); strings.Contains(msg, "DUMP payload") || strings.Contains(msg, "Bad data format") {
				// A payload this server cannot load: another version's, or damaged.
				e = &exit.Error{Code: exit.Data, What: "restore " + strconv.Quote(recs[i].Key), Err: err,
					Hint: "a DUMP payload loads only on a server of the same or a later RDB version than the one that made it"}
			}
			first = cmp.Or(first, e)
		}
	}
	return out, first
}
