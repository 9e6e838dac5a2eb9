package capacity

// calc-ttl: the TTL and memory of idempotency keys, by the formulas of the
// seeds every team starts from:
//
//	TTL    = longest processing + longest retry delay + buffer
//	memory = (key size + value size) x rate x TTL x 1.2
//
// and, with a measured sample of the live keyspace, the same rate and TTL
// priced at what a key costs there (MEMORY USAGE: Redis's overhead included).

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/bytesize"
	"github.com/idmpctl/idmpctl/internal/duration"
)

// RuleOfThumb names the usual memory formula: users know it by the formula.
const RuleOfThumb = "(key + value) x 1.2"

// SeedOverhead is the seeds' x 1.2 for "Redis overhead" on key and value.
var SeedOverhead = big.NewRat(6, 5)

// TTLInputs are calc-ttl's normalised inputs.
type TTLInputs struct {
	Rate *big.Rat      // keys written per second
	TTL  time.Duration // --ttl; 0: the retry window
	// The retry window: MaxProcessing + MaxRetryDelay + Buffer, if Window.
	MaxProcessing, MaxRetryDelay, Buffer time.Duration
	Window                               bool
	// KeySize and ValueSize are a key's name and value bytes; -1: not given
	// (then from Measured, if any).
	KeySize, ValueSize int64
	MaxMemory          int64 // bytes; 0: not given
	Measured           *MeasuredKeys
}

// MeasuredKeys is a live sample's mean bytes of a key's name, its value, and
// MEMORY USAGE (both and Redis's per-key structures).
type MeasuredKeys struct {
	Pattern    string
	Keys       int // keys measured
	KeyBytes   float64
	ValueBytes float64
	UsageBytes float64
	Server     *ServerMemory // nil: no maxmemory, or INFO memory unreadable
	// ServerUnread is why no primary's INFO memory could be read (NOPERM).
	ServerUnread error
}

// ServerMemory is the sampled server's memory (of a cluster, the fullest
// primary's, and how many primaries share the keys).
type ServerMemory struct {
	Node            string // "" for one server
	Used, MaxMemory int64
	Policy          string
	Primaries       int
}

// TTLResult is what calc-ttl computes. Memory figures are 0 when no sizes
// are known.
type TTLResult struct {
	TTL               time.Duration // the TTL to set (given, or the retry window)
	RetryWindow       time.Duration // 0 when no window flag was given
	Keys              int64         // keys alive at a steady rate: ceil(rate x TTL)
	KeySize           int64         // the sizes the formula used
	ValueSize         int64
	Memory            int64   // by (key + value) x 1.2, bytes (ceil)
	MeasuredMemory    int64   // rate x TTL x the sample's mean MEMORY USAGE (no x 1.2)
	FormulaVsMeasured float64 // Memory / MeasuredMemory - 1 (< 0: the formula is under)
	TTLFormula        string
	MemoryFormula     string
	MeasuredFormula   string
	Advice            []string
}

// CalculateTTL applies the seeds' formulas to in. Results that do not fit
// (a window past 290 years, keys or bytes past int64) and a TTL Redis
// cannot hold (under 1ms) are an error, never a wrapped number.
func CalculateTTL(in TTLInputs) (TTLResult, error) {
	var r TTLResult
	if in.Window {
		sum := new(big.Int).SetInt64(int64(in.MaxProcessing))
		sum.Add(sum, big.NewInt(int64(in.MaxRetryDelay)))
		sum.Add(sum, big.NewInt(int64(in.Buffer)))
		if !sum.IsInt64() {
			return r, errors.New("the retry window (max-processing + max-retry-delay + buffer) is longer than 290 years: give shorter durations")
		}
		r.RetryWindow = in.MaxProcessing + in.MaxRetryDelay + in.Buffer
		r.TTLFormula = fmt.Sprintf("TTL = max-processing %s + max-retry-delay %s + buffer %s = %s",
			duration.Format(in.MaxProcessing), duration.Format(in.MaxRetryDelay), duration.Format(in.Buffer), duration.Format(r.RetryWindow))
		// The TTL to type: the window rounded up (never shorter than it)
		// to a whole second, or millisecond below one.
		if r.TTL = RoundUp(r.RetryWindow); r.TTL != r.RetryWindow {
			r.TTLFormula += ", rounded up to " + duration.Format(r.TTL)
		}
	}
	if in.TTL > 0 {
		r.TTL = in.TTL
		window := r.TTLFormula
		r.TTLFormula = fmt.Sprintf("TTL = %s (given)", duration.Format(in.TTL))
		if in.Window {
			r.TTLFormula += "; retry window" + window[len("TTL"):]
		}
	}
	if r.TTL < time.Millisecond {
		return r, fmt.Errorf("a TTL under 1ms (%s): Redis keeps TTLs in milliseconds", duration.Format(r.TTL))
	}
	ttlSecs := new(big.Rat).SetFrac64(r.TTL.Nanoseconds(), int64(time.Second))
	keys := new(big.Rat).Mul(in.Rate, ttlSecs)
	var ok bool
	if r.Keys, ok = ceilRatFits(keys); !ok {
		return r, errors.New("rate x TTL is more than 9,223,372,036,854,775,807 keys: check --rate and the TTL") // max int64
	}
	tooMuch := func(what string) error {
		return fmt.Errorf("%s, the keys need more than %s (the largest count of bytes): check --rate, the TTL and the sizes", what, bytesize.Format(math.MaxInt64))
	}

	r.KeySize, r.ValueSize = in.KeySize, in.ValueSize
	if m := in.Measured; m != nil && m.Keys > 0 {
		if r.KeySize < 0 {
			r.KeySize = roundHalfUp(m.KeyBytes)
		}
		if r.ValueSize < 0 {
			r.ValueSize = roundHalfUp(m.ValueBytes)
		}
		usage := new(big.Rat)
		usage.SetFloat64(m.UsageBytes)
		measured := new(big.Rat).Mul(keys, usage)
		if r.MeasuredMemory, ok = ceilRatFits(measured); !ok {
			return r, tooMuch("at their measured size")
		}
		r.MeasuredFormula = fmt.Sprintf("memory = %s msg/s x %s s x %s B (mean MEMORY USAGE of %d keys) = %d B",
			RatString(in.Rate), RatString(ttlSecs), trimNum(m.UsageBytes), m.Keys, r.MeasuredMemory)
	}
	if r.KeySize >= 0 && r.ValueSize >= 0 {
		mem := new(big.Rat).SetInt64(r.KeySize + r.ValueSize)
		mem.Mul(mem, keys)
		mem.Mul(mem, SeedOverhead)
		if r.Memory, ok = ceilRatFits(mem); !ok {
			return r, tooMuch("by " + RuleOfThumb)
		}
		r.MemoryFormula = fmt.Sprintf("memory = (%d B + %d B) x %s msg/s x %s s x 1.2 = %d B",
			r.KeySize, r.ValueSize, RatString(in.Rate), RatString(ttlSecs), r.Memory)
	}
	if r.MeasuredMemory > 0 && r.Memory > 0 {
		r.FormulaVsMeasured = float64(r.Memory)/float64(r.MeasuredMemory) - 1
	}

	if in.TTL > 0 && in.Window && in.TTL < r.RetryWindow {
		r.Advice = append(r.Advice, fmt.Sprintf(
			"--ttl %s is shorter than the retry window %s: a retry that comes later than %s after the first attempt finds no key and runs the work again; use --ttl %s or more",
			duration.Format(in.TTL), duration.Format(r.RetryWindow), duration.Format(in.TTL), duration.Format(RoundUp(r.RetryWindow))))
	}
	if in.Window && in.Buffer == 0 {
		r.Advice = append(r.Advice,
			"no --buffer: the TTL leaves no room for queueing delays, clock drift between producers, or a retry policy that changes; add one (for example --buffer 10m)")
	}
	for _, m := range []struct {
		what  string
		bytes int64
	}{{"by " + RuleOfThumb, r.Memory}, {"at their measured size", r.MeasuredMemory}} {
		if in.MaxMemory > 0 && m.bytes > in.MaxMemory {
			r.Advice = append(r.Advice, fmt.Sprintf(
				"%s the keys need %s, over --maxmemory %s (%.0f%% of it): shorten the TTL, keep smaller values, or give the keys a server of their own",
				m.what, bytesize.Format(m.bytes), bytesize.Format(in.MaxMemory), 100*float64(m.bytes)/float64(in.MaxMemory)))
		}
	}
	if m := in.Measured; r.MeasuredMemory > 0 && r.Memory > 0 && r.FormulaVsMeasured < -0.1 {
		r.Advice = append(r.Advice, fmt.Sprintf(
			"the formula is %.0f%% under what the sampled keys cost: their MEMORY USAGE is %s B a key against (%d B + %d B) x 1.2; Redis spends about %s B a key beyond its name and value (dictionary entry, object headers, TTL, allocator rounding), which x 1.2 does not cover for small keys: plan with the measured figure",
			-100*r.FormulaVsMeasured, trimNum(m.UsageBytes), r.KeySize, r.ValueSize, trimNum(m.UsageBytes-m.KeyBytes-m.ValueBytes)))
	}
	if a := serverAdvice(in.Measured, r.MeasuredMemory); a != "" {
		r.Advice = append(r.Advice, a)
	}
	return r, nil
}

// nearFull is the share of maxmemory past which calc-ttl advises.
const nearFull = 0.9

// serverAdvice is advice when the sampled server's used memory, or that
// and need bytes of keys (split over its primaries), is near or over its
// maxmemory: what happens then, by maxmemory-policy, and what to do.
func serverAdvice(m *MeasuredKeys, need int64) string {
	if m == nil || m.Server == nil || m.Server.MaxMemory <= 0 {
		return ""
	}
	s := m.Server
	where, what := "the server", ""
	if s.Node != "" {
		where = "primary " + s.Node
	}
	full := float64(s.MaxMemory)
	if s.Primaries > 1 {
		need /= int64(s.Primaries)
	}
	switch {
	case float64(s.Used) >= nearFull*full:
		what = fmt.Sprintf("%s uses %s, %.1f%% of its maxmemory %s",
			where, bytesize.Format(s.Used), 100*float64(s.Used)/full, bytesize.Format(s.MaxMemory))
	case float64(s.Used+need) >= nearFull*full:
		what = fmt.Sprintf("the keys need %s at their measured size, and %s uses %s already: %.0f%% of its maxmemory %s (less what keys already there take)",
			bytesize.Format(need), where, bytesize.Format(s.Used), 100*float64(s.Used+need)/full, bytesize.Format(s.MaxMemory))
	default:
		return ""
	}
	const oom = "it refuses writes with OOM"
	then := fmt.Sprintf("when it is full %s (maxmemory-policy %s): claims and adds fail until memory is freed", oom, s.Policy)
	todo := "raise maxmemory, shorten the TTL, or give the keys a server of their own"
	if s.Policy != "noeviction" {
		keys := "keys"
		if strings.HasPrefix(s.Policy, "volatile-") {
			keys = "keys with a TTL"
		}
		then = fmt.Sprintf("when it is full it evicts %s (maxmemory-policy %s), idempotency keys among them, and a retry whose key was evicted runs the work again", keys, s.Policy)
		if keys != "keys" {
			then += "; with none left to evict " + oom
		}
		todo += ", with maxmemory-policy noeviction"
	}
	return what + "; " + then + "; " + todo
}

// ceilRatFits is ceil(r), and whether it fits an int64.
func ceilRatFits(r *big.Rat) (int64, bool) {
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64(), q.IsInt64()
}

func roundHalfUp(f float64) int64 { return int64(f + 0.5) }

func trimNum(f float64) string { return strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0") }

// RoundUp is a TTL to suggest for d: d rounded up to a whole second (to a
// millisecond below one), never shorter than d. "--ttl 21m40.08s" is no
// value to type; "--ttl 21m41s" is.
func RoundUp(d time.Duration) time.Duration {
	unit := time.Second
	if d < time.Second {
		unit = time.Millisecond
	}
	if r := d % unit; r > 0 && d <= math.MaxInt64-unit {
		d += unit - r
	}
	return d
}
