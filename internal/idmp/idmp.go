// Package idmp holds the facts of Redis 8.6's idempotent stream production
// that several parts of idmpctl share, each in one place: the limits and
// defaults of IDMP-DURATION and IDMP-MAXSIZE, and the key layout of
// idmpctl's emulated IDMP state (built for the Lua scripts, parsed again
// when a scan meets those keys). It is pure: no Redis, no printing.
package idmp

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// Server defaults of stream-idmp-duration and stream-idmp-maxsize (R4), and
// the XCFGSET ranges (R7).
const (
	DefaultDuration = 100
	DefaultMaxSize  = 100
	MaxDuration     = 86400
	MaxMaxSize      = 10000
)

// MaxEmulatedFieldArgs bounds an emulated add's field/value arguments:
// Lua's unpack stops near 8,000 values (LUAI_MAXCSTACK). More is refused
// (65) before sending, and by the script before it writes.
const MaxEmulatedFieldArgs = 7800

// Config is a stream's IDMP-DURATION (seconds) and IDMP-MAXSIZE.
type Config struct {
	Duration int64
	MaxSize  int64
}

// Defaults are the server-wide stream-idmp-* settings.
type Defaults struct {
	Duration int64 `json:"stream-idmp-duration"`
	MaxSize  int64 `json:"stream-idmp-maxsize"`
}

// The defaults' CONFIG parameters, and the hash of them that emulated IDMP
// keeps in its one slot (so idmpctl, not the scripts, reads it).
const (
	ParamDuration = "stream-idmp-duration"
	ParamMaxSize  = "stream-idmp-maxsize"
	DefaultsKey   = "idmpctl:stream-idmp-defaults"
)

// ParseDefaults reads the defaults key's two values: absent or invalid ones
// are Redis's defaults.
func ParseDefaults(duration, maxsize string) Defaults {
	d := Defaults{Duration: DefaultDuration, MaxSize: DefaultMaxSize}
	if v, ok := ParseInt(duration); ok && v >= 1 && v <= MaxDuration {
		d.Duration = v
	}
	if v, ok := ParseInt(maxsize); ok && v >= 1 && v <= MaxMaxSize {
		d.MaxSize = v
	}
	return d
}

// ParseInt reads an integer as Redis's string2ll: "+5", "007", "-0", "3.14"
// and " 5" are not integers to Redis, so not to idmpctl either.
func ParseInt(s string) (int64, bool) {
	digits := strings.TrimPrefix(s, "-")
	switch {
	case digits == "", digits == "0" && s != "0", len(digits) > 1 && digits[0] == '0':
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// LuaConstants declares the limits for a Lua script, so the scripts use the
// values above rather than copies of them.
func LuaConstants() string {
	return "local DEFAULT_DURATION, DEFAULT_MAXSIZE = " + strconv.Itoa(DefaultDuration) + ", " + strconv.Itoa(DefaultMaxSize) + "\n" +
		"local MAX_DURATION, MAX_MAXSIZE = " + strconv.Itoa(MaxDuration) + ", " + strconv.Itoa(MaxMaxSize) + "\n" +
		"local MAX_FIELD_ARGS = " + strconv.Itoa(MaxEmulatedFieldArgs) + "\n"
}

// StateLayout names the keys that hold a stream's emulated IDMP state. They
// all share the stream's cluster slot: Base is the stream name when it has a
// valid hash tag, "{stream}" otherwise.
//
//	<Base>:idmp              hash: settings, lifetime counters, owner, stream snapshot, pids count
//	<Base>:idmp:pids         set: pids that hold state
//	<Base>:idmp:ids:<pid>    hash: iid -> original entry ID
//	<Base>:idmp:order:<pid>  list: the pid's iids, oldest first
//	<Base>:idmp:batch:<h>    hash: an xadd --batch progress record, h = BatchHash(pid, id)
//	<Base>:idmp:batches      zset: the stream's progress records by the time each expires
//
// No key has a TTL (volatile-* would evict them first, while the stream
// stays): the scripts expire them on the server clock. The batch keys
// exist in both modes: progress is written with the adds.
type StateLayout struct {
	Stream      string
	Base        string
	Meta        string
	PIDs        string
	IDsPrefix   string // + pid
	OrderPrefix string // + pid
	Batches     string
	BatchPrefix string // + BatchHash(pid, id)
}

// Suffixes of the state keys after the base.
const (
	metaSuffix    = ":idmp"
	pidsSuffix    = ":pids"
	batchesSuffix = ":batches"
	idsPart       = "ids:"
	orderPart     = "order:"
	batchPart     = "batch:"
	perPIDInfix   = metaSuffix + ":"
)

// IDs is the hash of one pid's tracked iids (iid -> entry ID).
func (l StateLayout) IDs(pid string) string { return l.IDsPrefix + pid }

// Order is the list of one pid's tracked iids in insertion order.
func (l StateLayout) Order(pid string) string { return l.OrderPrefix + pid }

// Batch is the progress record of the batch id of pid.
func (l StateLayout) Batch(pid, id string) string { return l.BatchPrefix + BatchHash(pid, id) }

// BatchHash names a batch in key names: pid and id are any bytes, of any
// length, so the name holds a digest of them.
func BatchHash(pid, id string) string {
	h := sha256.New()
	h.Write([]byte(strconv.Itoa(len(pid)) + ":"))
	h.Write([]byte(pid))
	h.Write([]byte(id))
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// StateKeys derives stream's state keys; in a cluster, a name with '}' but
// no valid hash tag is refused: no key can share its slot.
func StateKeys(stream string, cluster bool) (StateLayout, error) {
	base, err := SlotBase(stream, cluster, "emulated IDMP on stream", "state key")
	if err != nil {
		err.Hint += ", or a server with native IDMP (Redis 8.6+)"
		return StateLayout{}, err
	}
	meta := base + metaSuffix
	return StateLayout{
		Stream:      stream,
		Base:        base,
		Meta:        meta,
		PIDs:        meta + pidsSuffix,
		IDsPrefix:   meta + ":" + idsPart,
		OrderPrefix: meta + ":" + orderPart,
		Batches:     meta + batchesSuffix,
		BatchPrefix: meta + ":" + batchPart,
	}, nil
}

// SlotBase is the prefix of keys in stream's cluster slot: the name when
// it has a valid hash tag, else "{stream}", which hashes like it. In a
// cluster a name with '}' but no valid tag is refused (64, naming what and
// the kind of key): no suffix can make a key that hashes to its slot.
func SlotBase(stream string, cluster bool, what, kind string) (string, *exit.Error) {
	if HasHashTag(stream) {
		return stream, nil
	}
	if cluster && strings.Contains(stream, "}") {
		e := exit.New(exit.Usage, what+" "+strconv.Quote(stream),
			"the name holds '}' but no valid hash tag, so no %s can share its cluster slot", kind)
		e.Hint = "use a hash-tagged stream name such as " + strconv.Quote("{"+strings.ReplaceAll(stream, "}", "_")+"}")
		return "", e
	}
	return "{" + stream + "}", nil
}

// HasHashTag applies Redis Cluster's rule (splitTag).
func HasHashTag(key string) bool {
	_, _, ok := splitTag(key)
	return ok
}

// splitTag splits key after its hash tag: the first '{', then the first
// '}' after it, with at least one byte between them.
func splitTag(key string) (head, rest string, ok bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", "", false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return "", "", false
	}
	return key[:open+end+2], key[open+end+2:], true
}

// StateStreams names the streams a state key may belong to, by its name
// (nil: no state key): its base, and X for a base "{X}" when X has no tag
// ("s" and "{s}" share state keys). A scan tells orphaned state by them.
func StateStreams(key string) []string {
	head, rest, ok := splitTag(key)
	if !ok {
		return nil
	}
	var bases []string
	if i := strings.LastIndex(rest, metaSuffix); i >= 0 {
		switch rest[i+len(metaSuffix):] {
		case "", pidsSuffix, batchesSuffix:
			bases = append(bases, head+rest[:i])
		}
	}
	if j := strings.Index(rest, perPIDInfix); j >= 0 {
		tail := rest[j+len(perPIDInfix):]
		if strings.HasPrefix(tail, idsPart) || strings.HasPrefix(tail, orderPart) || strings.HasPrefix(tail, batchPart) {
			if b := head + rest[:j]; len(bases) == 0 || bases[0] != b {
				bases = append(bases, b)
			}
		}
	}
	var out []string
	for _, b := range bases {
		out = append(out, b)
		if x, ok := strings.CutPrefix(b, "{"); ok {
			if x, ok = strings.CutSuffix(x, "}"); ok && !HasHashTag(x) {
				out = append(out, x)
			}
		}
	}
	return out
}

// ParseStateKey says which part of a state layout key is, by its name and
// Redis type ("settings", "pids", "iids of pid P", ...).
func ParseStateKey(key, redisType string) (part string, ok bool) {
	_, rest, tagged := splitTag(key)
	if !tagged {
		return "", false
	}
	i := strings.LastIndex(rest, metaSuffix)
	if i < 0 {
		return "", false
	}
	switch tail := rest[i+len(metaSuffix):]; {
	case tail == "" && redisType == "hash":
		return "settings", true
	case tail == pidsSuffix && redisType == "set":
		return "pids", true
	case tail == batchesSuffix && redisType == "zset":
		return "batch progress index", true
	}
	// Per-pid keys: the pid may itself contain ":idmp", so look at the first.
	j := strings.Index(rest, perPIDInfix)
	if j < 0 {
		return "", false
	}
	tail := rest[j+len(perPIDInfix):]
	switch {
	case strings.HasPrefix(tail, idsPart) && redisType == "hash":
		return "iids of pid " + tail[len(idsPart):], true
	case strings.HasPrefix(tail, orderPart) && redisType == "list":
		return "order of pid " + tail[len(orderPart):], true
	case strings.HasPrefix(tail, batchPart) && redisType == "hash":
		return "batch progress", true
	}
	return "", false
}
