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

// MaxEmulatedFieldArgs bounds the field/value arguments of one add in
// emulated mode: the script hands them to XADD with Lua's unpack, which
// stops near 8,000 values (LUAI_MAXCSTACK). An add with more is refused
// before anything is sent (xadd: exit 65), and by the script before it
// writes. Native XADD has no such bound.
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

// The server-level defaults' configuration parameters (CONFIG GET/SET), and
// the key where emulated IDMP keeps them: a hash of those two fields, in
// its one cluster slot (idmpctl reads it and hands the values to the
// stream scripts, which run in the streams' slots).
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

// ParseInt reads an integer the way Redis reads a command's integer
// argument (string2ll): an optional '-', then digits without a leading zero
// ("0" alone is zero), within int64. "+5", "007", "000000000", "-0", "3.14"
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
// No key has a TTL: an eviction policy of volatile-* evicts keys with TTLs
// first, and would drop this state while the stream stays. The scripts
// expire what DURATION and --progress-ttl no longer cover, on the server
// clock. The two batch keys exist in both modes: a batch's progress is
// written with its adds, by the emulated script or in the native
// MULTI/EXEC.
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

// StateKeys derives the emulated state's key names for stream. In cluster
// mode a name that holds '}' without a valid hash tag is refused: no suffix
// can make a key that hashes to its slot.
func StateKeys(stream string, cluster bool) (StateLayout, error) {
	base := stream
	if !HasHashTag(stream) {
		if cluster && strings.Contains(stream, "}") {
			e := exit.New(exit.Usage, "emulated IDMP on stream "+strconv.Quote(stream),
				"the name holds '}' but no valid hash tag, so no state key can share its cluster slot")
			e.Hint = "use a hash-tagged stream name such as " + strconv.Quote("{"+strings.ReplaceAll(stream, "}", "_")+"}") +
				", or a server with native IDMP (Redis 8.6+)"
			return StateLayout{}, e
		}
		base = "{" + stream + "}"
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

// HasHashTag applies Redis Cluster's rule: the first '{', then the first '}'
// after it, with at least one byte between them.
func HasHashTag(key string) bool {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return false
	}
	return strings.IndexByte(key[open+1:], '}') > 0
}

// StateStreams names the streams a key of the layout above may belong to,
// by its name alone (nil for a name that is no state key): the stream
// whose StateKeys give its base, that is the base itself when it has a
// hash tag, and X for a base "{X}" when X has none ("s" and "{s}" share
// their state keys: the settings hash's "stream" field says which owns
// them). A scan reads these names to tell orphaned state, whose stream is
// gone.
func StateStreams(key string) []string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return nil
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return nil
	}
	head, rest := key[:open+1+end+1], key[open+1+end+1:]
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

// ParseStateKey recognises a key of the layout above by its name and Redis
// type, and says which part it is ("settings", "pids", "iids of pid P",
// "order of pid P"). The base carries a hash tag, as StateKeys makes it.
func ParseStateKey(key, redisType string) (part string, ok bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return "", false
	}
	rest := key[open+1+end+1:]
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
