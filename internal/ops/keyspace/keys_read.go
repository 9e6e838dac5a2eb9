package keyspace

// Reading keys of any shape for inspect, scan and purge: pipelined plain
// reads (a read-only ACL user can inspect), each transfer bounded.

import (
	"context"
	"errors"
	"slices"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
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

// keyRead is one key as read: its record, the raw value purge's re-check
// compares, and its size by its type's length command (-1: not known).
type keyRead struct {
	rec   records.Record
	raw   records.RawValue
	size  int64
	str   string // the string value as read (a prefix when rec.Truncated)
	nowMs int64  // server time of the read
}

type readOptions struct {
	maxValue   int64 // bytes of a string read at most
	fullHashes bool  // read large hashes whole when they are small enough
	decode     records.DecodeOptions
}

// keyProbe is round one: OBJECT ENCODING (and PTTL), the type inferred
// from it: one command a key fewer than TYPE too, and the server's cost per
// key bounds a scan. A shared encoding (listpack, hashtable) is read as a
// hash, the common case; WRONGTYPE, an unknown encoding or a refused OBJECT
// (ACL) sends the key to a re-read that asks TYPE.
type keyProbe struct {
	typ    *redis.StatusCmd // TYPE: re-reads only
	pttl   *redis.DurationCmd
	enc    *redis.StringCmd
	lock   *redis.IntCmd      // EXISTS of a lock-named key's target
	owners []*redis.StatusCmd // TYPE of each stream state may belong to
}

// keyValue is rounds two and three: the value reads for its type.
type keyValue struct {
	getrange *redis.StringCmd
	strlen   *redis.IntCmd
	hgetall  *redis.MapStringStringCmd
	hmget    *redis.SliceCmd
	hlen     *redis.IntCmd
	hstrlen  []*redis.IntCmd // PayloadFields, in order
	size     *redis.IntCmd
}

// recordPayloads are the hash fields that hold a stored result: measured
// (HSTRLEN) in a large hash rather than read.
var recordPayloads = records.PayloadFields()

// typeOfEncoding is the type an OBJECT ENCODING reply implies (else TYPE
// decides). listpack and hashtable may be other types: WRONGTYPE says.
var typeOfEncoding = map[string]string{"raw": "string", "embstr": "string", "int": "string",
	"listpack": "hash", "ziplist": "hash", "listpackex": "hash", "hashtable": "hash",
	"intset": "set", "skiplist": "zset", "quicklist": "list", "linkedlist": "list", "stream": "stream"}

// smallHash: an encoding the server bounds (hash-max-listpack-*): read whole.
func smallHash(enc string) bool {
	return enc == "listpack" || enc == "ziplist" || enc == "listpackex"
}

// keyReader reads batch after batch, reusing its buffers (one goroutine).
type keyReader struct {
	c      *redisconn.Conn
	ro     readOptions
	fields []string // the hash fields the decoders read (DecodedFieldsWith)
	probes []keyProbe
	values []keyValue
	types  []string
}

func newKeyReader(c *redisconn.Conn, ro readOptions) *keyReader {
	if ro.maxValue <= 0 {
		ro.maxValue = ScanMaxValue
	}
	return &keyReader{c: c, ro: ro, fields: records.DecodedFieldsWith(ro.decode)}
}

// read reads keys into out (reused when large enough), one keyRead a key,
// in two pipelined round trips (a cluster client routes each command by
// its key), plus one for keys the encoding does not type, and decodes each
// at the server's time (TIME, in the first round); attempt 1 infers types
// from encodings, re-reads ask TYPE.
func (r *keyReader) read(ctx context.Context, keys []string, out []keyRead, attempt int) ([]keyRead, error) {
	c, ro := r.c, r.ro
	typed := attempt > 1
	n := len(keys)
	r.probes, r.values, r.types = grow(r.probes, n), grow(r.values, n), grow(r.types, n)
	probes, values, types := r.probes, r.values, r.types
	clear(values)
	var clock *redis.TimeCmd
	err := c.Pipelined(ctx, func(p redis.Pipeliner, ctx context.Context) {
		clock = p.Time(ctx)
		for i, k := range keys {
			pr := &probes[i]
			*pr = keyProbe{}
			if typed {
				pr.typ = p.Type(ctx, k)
			}
			pr.enc, pr.pttl = p.ObjectEncoding(ctx, k), p.PTTL(ctx, k)
			if target, ok := records.LockTarget(k); ok {
				pr.lock = p.Exists(ctx, target)
			}
			for _, name := range idmp.StateStreams(k) {
				pr.owners = append(pr.owners, p.Type(ctx, name))
			}
		}
	})
	if err == nil {
		err = clock.Err()
	}
	if err != nil {
		return nil, err
	}
	nowMs := clock.Val().UnixMilli()

	var again []int // read again, asking TYPE
	for i, pr := range probes {
		types[i] = ""
		if err := firstReadErr(pr.pttl.Err()); err != nil {
			return nil, err
		}
		switch {
		case typed:
			if err := firstReadErr(pr.typ.Err()); err != nil {
				return nil, err
			}
			types[i] = pr.typ.Val()
		case errors.Is(pr.enc.Err(), redis.Nil):
			types[i] = "none"
		default:
			t, ok := typeOfEncoding[pr.enc.Val()]
			if pr.enc.Err() != nil || !ok {
				again = append(again, i)
				continue
			}
			types[i] = t
		}
	}
	err = c.Pipelined(ctx, func(p redis.Pipeliner, ctx context.Context) {
		length := map[string]func(context.Context, string) *redis.IntCmd{"set": p.SCard, "list": p.LLen, "zset": p.ZCard, "stream": p.XLen}
		for i, k := range keys {
			v := &values[i]
			switch types[i] {
			case "string":
				v.strlen, v.getrange = p.StrLen(ctx, k), p.GetRange(ctx, k, 0, ro.maxValue-1)
			case "hash":
				if smallHash(probes[i].enc.Val()) {
					v.hgetall = p.HGetAll(ctx, k)
					continue
				}
				v.hlen, v.hmget = p.HLen(ctx, k), p.HMGet(ctx, k, r.fields...)
				v.hstrlen = make([]*redis.IntCmd, len(recordPayloads))
				for j, f := range recordPayloads {
					v.hstrlen[j] = p.HStrLen(ctx, k, f)
				}
			case "set", "list", "zset", "stream":
				v.size = length[types[i]](ctx, k)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if ro.fullHashes {
		if err := readWholeHashes(ctx, c, keys, types[:n], values[:n], ro.maxValue); err != nil {
			return nil, err
		}
	}

	out = grow(out, n)
	for i, k := range keys {
		if types[i] == "" {
			continue // in again already
		}
		rd := &out[i]
		err := r.assemble(rd, k, types[i], probes[i], values[i], nowMs)
		wrongType := err != nil && redis.HasErrorPrefix(err, "WRONGTYPE")
		// Not the type the encoding suggested, or changed between rounds:
		// read again, asking TYPE.
		if !typed && (wrongType || vanishedHash(types[i], values[i])) || wrongType && attempt < readAttempts {
			again = append(again, i)
			continue
		}
		if err != nil && !wrongType {
			return nil, err
		}
		// Still changing after readAttempts: decoded from its type alone.
	}
	if len(again) > 0 {
		slices.Sort(again)
		keysAgain := make([]string, len(again))
		for j, i := range again {
			keysAgain[j] = keys[i]
		}
		reads, err := newKeyReader(c, ro).read(ctx, keysAgain, nil, attempt+1)
		if err != nil {
			return nil, err
		}
		for j, i := range again {
			out[i] = reads[j]
		}
	}
	return out, nil
}

// grow returns s with length n, reusing its array when large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// vanishedHash: a hash read back empty, which a hash never is: deleted or
// replaced between the rounds.
func vanishedHash(typ string, v keyValue) bool {
	switch {
	case typ != "hash":
		return false
	case v.hgetall != nil:
		return v.hgetall.Err() == nil && len(v.hgetall.Val()) == 0
	case v.hlen != nil:
		return v.hlen.Err() == nil && v.hlen.Val() == 0
	}
	return false
}

// readWholeHashes reads large hashes small enough to show whole (inspect
// KEY) with HGETALL.
func readWholeHashes(ctx context.Context, c *redisconn.Conn, keys, types []string, values []keyValue, maxValue int64) error {
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
	return c.Pipelined(ctx, func(p redis.Pipeliner, ctx context.Context) {
		for _, i := range whole {
			values[i].hgetall = p.HGetAll(ctx, keys[i])
		}
	})
}

// assemble decodes one key from its replies into rd. On WRONGTYPE (a type
// changed between rounds) it is decoded from its type alone.
func (r *keyReader) assemble(rd *keyRead, key, typ string, pr keyProbe, v keyValue, nowMs int64) error {
	err := assembleValue(rd, pr, v, r.fields)
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
	rd.rec = records.DecodeWith(r.ro.decode, key, typ, rd.raw, ttl, nowMs)
	return err
}

func assembleValue(rd *keyRead, pr keyProbe, v keyValue, fields []string) error {
	*rd = keyRead{size: -1}
	if pr.lock != nil && pr.lock.Err() == nil {
		exists := pr.lock.Val() > 0
		rd.raw.LockTargetExists = &exists
	}
	if len(pr.owners) > 0 {
		exists, known := false, true
		for _, t := range pr.owners {
			known = known && t.Err() == nil
			exists = exists || t.Val() == "stream"
		}
		if known || exists {
			rd.raw.StateStreamExists = &exists
		}
	}
	switch {
	case v.getrange != nil:
		if err := firstReadErr(v.strlen.Err(), v.getrange.Err()); err != nil {
			return err
		}
		str := v.getrange.Val()
		rd.str, rd.size = str, v.strlen.Val()
		rd.raw.String, rd.raw.StringLen = &str, rd.size
	case v.hgetall != nil && v.hgetall.Err() == nil:
		rd.raw.Hash = v.hgetall.Val()
		rd.size = int64(len(rd.raw.Hash))
	case v.hmget != nil:
		if err := firstReadErr(v.hlen.Err(), v.hmget.Err()); err != nil {
			return err
		}
		rd.size = v.hlen.Val()
		h := make(map[string]string)
		for j, val := range v.hmget.Val() {
			if s, ok := val.(string); ok {
				h[fields[j]] = s
			}
		}
		lens := make(map[string]int64)
		for j, l := range v.hstrlen {
			if err := l.Err(); err != nil {
				return err
			}
			if l.Val() > 0 {
				lens[recordPayloads[j]] = l.Val()
			}
		}
		// Payloads are measured, not read, so such a hash is always partial.
		rd.raw.Hash, rd.raw.HashLens, rd.raw.HashPartial = h, lens, true
	case v.hgetall != nil:
		return v.hgetall.Err()
	case v.size != nil:
		if err := v.size.Err(); err != nil {
			return err
		}
		rd.size = v.size.Val()
		rd.raw.SetCard = rd.size
	}
	return nil
}

func firstReadErr(errs ...error) error {
	for _, err := range errs {
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}
