package ops

// Reading keys of any shape for inspect, scan and purge: pipelined rounds of
// plain read commands (no scripts, so a read-only ACL user can inspect), with
// every transfer bounded so that a scan over a keyspace of big values stays
// small.

import (
	"context"
	"errors"
	"strings"

	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/redis/go-redis/v9"
)

const (
	// InspectMaxValue caps how much of a string `inspect KEY` reads.
	InspectMaxValue = 1 << 20
	// ScanMaxValue is the default cap per string for scans and purges:
	// longer strings are read in part and decode as unknown.
	ScanMaxValue = 64 << 10
	// maxFullHashFields bounds the hashtable-encoded hashes inspect reads whole.
	maxFullHashFields = 1000
	// keyBatch is how many keys one pipeline reads.
	keyBatch = 1000
	// readAttempts bounds re-reads of keys whose type changed mid-read.
	readAttempts = 3
)

// keyRead is one key as read: its decoded record, the raw value the purge
// re-check fingerprints, and its size by its type's length command (STRLEN,
// HLEN, SCARD, LLEN, ZCARD, XLEN; -1 when not known).
type keyRead struct {
	rec  records.Record
	raw  records.RawValue
	size int64
	// str is the string value as read (a prefix when rec.Truncated).
	str   string
	nowMs int64 // server time of the read
}

type readOptions struct {
	maxValue   int64 // bytes of a string read at most
	fullHashes bool  // read large hashes whole when they are small enough
}

// keyProbe is round one: what a key is.
type keyProbe struct {
	typ  *redis.StatusCmd
	pttl *redis.DurationCmd
	enc  *redis.StringCmd
	lock *redis.IntCmd // EXISTS of X for a key named X:lock
}

// keyValue is round two and three: the value reads for its type.
type keyValue struct {
	getrange *redis.StringCmd
	strlen   *redis.IntCmd
	hgetall  *redis.MapStringStringCmd
	hmget    *redis.SliceCmd
	hlen     *redis.IntCmd
	hstrlen  []*redis.IntCmd // PayloadFields, in order
	size     *redis.IntCmd
}

var (
	recordFields   = records.DecodedFields()
	recordPayloads = records.PayloadFields()
)

// readKeys reads keys in one to three pipelined round trips (through the
// cluster client in a cluster, which routes every command by its key) and
// decodes each at the server's time (TIME, in the first round).
func readKeys(ctx context.Context, c *Conn, keys []string, ro readOptions) ([]keyRead, error) {
	return readKeysAttempt(ctx, c, keys, ro, 1)
}

func readKeysAttempt(ctx context.Context, c *Conn, keys []string, ro readOptions, attempt int) ([]keyRead, error) {
	if ro.maxValue <= 0 {
		ro.maxValue = ScanMaxValue
	}
	probes := make([]keyProbe, len(keys))
	var clock *redis.TimeCmd
	err := keysPipelined(ctx, c, func(p redis.Pipeliner, ctx context.Context) {
		clock = p.Time(ctx)
		for i, k := range keys {
			probes[i] = keyProbe{typ: p.Type(ctx, k), pttl: p.PTTL(ctx, k), enc: p.ObjectEncoding(ctx, k)}
			if base, ok := strings.CutSuffix(k, ":lock"); ok && base != "" {
				probes[i].lock = p.Exists(ctx, base)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if err := clock.Err(); err != nil {
		return nil, err
	}
	nowMs := clock.Val().UnixMilli()

	types := make([]string, len(keys))
	values := make([]keyValue, len(keys))
	for i, pr := range probes {
		if err := firstReadErr(pr.typ.Err(), pr.pttl.Err()); err != nil {
			return nil, err
		}
		types[i] = pr.typ.Val()
	}
	err = keysPipelined(ctx, c, func(p redis.Pipeliner, ctx context.Context) {
		for i, k := range keys {
			v := &values[i]
			switch types[i] {
			case "string":
				v.strlen, v.getrange = p.StrLen(ctx, k), p.GetRange(ctx, k, 0, ro.maxValue-1)
			case "hash":
				if enc := probes[i].enc.Val(); enc == "listpack" || enc == "ziplist" {
					// Small by the server's own bounds (hash-max-listpack-*).
					v.hgetall = p.HGetAll(ctx, k)
					continue
				}
				v.hlen, v.hmget = p.HLen(ctx, k), p.HMGet(ctx, k, recordFields...)
				v.hstrlen = make([]*redis.IntCmd, len(recordPayloads))
				for j, f := range recordPayloads {
					v.hstrlen[j] = p.HStrLen(ctx, k, f)
				}
			case "set":
				v.size = p.SCard(ctx, k)
			case "list":
				v.size = p.LLen(ctx, k)
			case "zset":
				v.size = p.ZCard(ctx, k)
			case "stream":
				v.size = p.XLen(ctx, k)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if ro.fullHashes {
		if err := readWholeHashes(ctx, c, keys, types, values, ro.maxValue); err != nil {
			return nil, err
		}
	}

	out := make([]keyRead, len(keys))
	var raced []int // the type changed between rounds: read again
	for i, k := range keys {
		rd, err := assemble(k, types[i], probes[i], values[i], nowMs)
		if redis.HasErrorPrefix(err, "WRONGTYPE") && attempt < readAttempts {
			raced = append(raced, i)
			continue
		}
		if err != nil && !redis.HasErrorPrefix(err, "WRONGTYPE") {
			return nil, err
		}
		out[i] = rd // still changing after readAttempts: decoded from its type alone

	}
	if len(raced) > 0 {
		again := make([]string, len(raced))
		for j, i := range raced {
			again[j] = keys[i]
		}
		reads, err := readKeysAttempt(ctx, c, again, ro, attempt+1)
		if err != nil {
			return nil, err
		}
		for j, i := range raced {
			out[i] = reads[j]
		}
	}
	return out, nil
}

// readWholeHashes replaces the partial read of large hashes by HGETALL when
// the hash is small enough to show whole (inspect KEY).
func readWholeHashes(ctx context.Context, c *Conn, keys, types []string, values []keyValue, maxValue int64) error {
	var whole []int
	for i, v := range values {
		if types[i] != "hash" || v.hlen == nil || v.hlen.Err() != nil || v.hlen.Val() > maxFullHashFields {
			continue
		}
		var payload int64
		for _, l := range v.hstrlen {
			payload += l.Val()
		}
		if payload <= maxValue {
			whole = append(whole, i)
		}
	}
	if len(whole) == 0 {
		return nil
	}
	return keysPipelined(ctx, c, func(p redis.Pipeliner, ctx context.Context) {
		for _, i := range whole {
			values[i].hgetall = p.HGetAll(ctx, keys[i])
		}
	})
}

// assemble decodes one key from its replies. A WRONGTYPE error says the key
// changed type between rounds; the record is then decoded from its type
// alone (Format unknown).
func assemble(key, typ string, pr keyProbe, v keyValue, nowMs int64) (keyRead, error) {
	rd, err := assembleValue(pr, v)
	rd.nowMs = nowMs
	if err != nil {
		rd.raw, rd.str, rd.size = records.RawValue{}, "", -1
	}
	if typ == "none" {
		rd.size = -1
	}
	ttl := int64(pr.pttl.Val())
	if ttl >= 0 {
		ttl = pr.pttl.Val().Milliseconds()
	}
	rd.rec = records.Decode(key, typ, rd.raw, ttl, nowMs)
	return rd, err
}

func assembleValue(pr keyProbe, v keyValue) (keyRead, error) {
	rd := keyRead{size: -1}
	if pr.lock != nil && pr.lock.Err() == nil {
		exists := pr.lock.Val() > 0
		rd.raw.LockTargetExists = &exists
	}
	switch {
	case v.getrange != nil:
		if err := firstReadErr(v.strlen.Err(), v.getrange.Err()); err != nil {
			return rd, err
		}
		rd.str, rd.size = v.getrange.Val(), v.strlen.Val()
		rd.raw.String, rd.raw.StringLen = &rd.str, rd.size
	case v.hgetall != nil && v.hgetall.Err() == nil:
		rd.raw.Hash = v.hgetall.Val()
		rd.size = int64(len(rd.raw.Hash))
	case v.hmget != nil:
		if err := firstReadErr(v.hlen.Err(), v.hmget.Err()); err != nil {
			return rd, err
		}
		rd.size = v.hlen.Val()
		h := make(map[string]string)
		for j, val := range v.hmget.Val() {
			if s, ok := val.(string); ok {
				h[recordFields[j]] = s
			}
		}
		lens := make(map[string]int64)
		for j, l := range v.hstrlen {
			if err := l.Err(); err != nil {
				return rd, err
			}
			if l.Val() > 0 {
				lens[recordPayloads[j]] = l.Val()
			}
		}
		// Payloads are measured, not read, so such a hash is always partial.
		rd.raw.Hash, rd.raw.HashLens, rd.raw.HashPartial = h, lens, true
	case v.hgetall != nil:
		return rd, v.hgetall.Err()
	case v.size != nil:
		if err := v.size.Err(); err != nil {
			return rd, err
		}
		rd.size = v.size.Val()
		rd.raw.SetCard = rd.size
	}
	return rd, nil
}

// keysPipelined runs one pipeline under the per-command timeout. Errors of single
// commands stay on their commands for the caller to judge; only a failure of
// the whole round trip (network, timeout) is returned.
func keysPipelined(ctx context.Context, c *Conn, fn func(p redis.Pipeliner, ctx context.Context)) error {
	ctx, cancel := c.Ctx(ctx)
	defer cancel()
	cmds, err := c.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		fn(p, ctx)
		return nil
	})
	if err == nil || len(cmds) == 0 {
		return err
	}
	// Pipelined reports the first failed command; a reply error from the
	// server (WRONGTYPE, a nil) belongs to its command, anything else to all.
	var rerr redis.Error
	if errors.As(err, &rerr) || errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

func firstReadErr(errs ...error) error {
	for _, err := range errs {
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}
