package capacity

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/bytesize"
	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/idmp"
)

// NativeBytesPerIID is an estimate of Redis 8.6's own cost per tracked iid
// (the iid string, its entry ID and dict/rax overhead) for 36-byte iids. It
// cannot be measured here (no Redis 8.6), so it is shown as approximate.
const NativeBytesPerIID = 120

// Inputs are the normalised inputs of calc-maxsize.
type Inputs struct {
	Rate      *big.Rat      // messages per second, all producers together
	MarkDelay time.Duration // XADD reply -> delivered mark
	Recovery  time.Duration // 0: not given, keep the server default
	Producers int64
	Margin    *big.Rat // 0.25 for 25%
	// EmulatedBytesPerIID is idmpctl's measured cost per iid in emulated mode.
	EmulatedBytesPerIID int64
}

// Result is what calc-maxsize computes.
type Result struct {
	MaxSize         int64   // to configure (clamped to the limit)
	MaxSizeNeeded   int64   // before clamping
	Duration        int64   // to configure (clamped)
	DurationNeeded  int64   // before clamping
	PerPIDRate      float64 // messages per millisecond per pid
	EvictAfter      float64 // seconds a healthy pid's iid stays before eviction by count
	PIDsNeeded      int64   // pids the rate must be spread over (when MaxSize is clamped)
	MaxSizeFormula  string
	DurationFormula string
	Interplay       string
	Memory          Memory
	Warnings        []string
}

// Memory estimates the stream's IDMP state at full occupancy.
type Memory struct {
	NativePerPID, NativeTotal     int64 // approximate
	EmulatedPerPID, EmulatedTotal int64 // from the measured constant
}

// Calculate applies docs/capacity.md's rules; inputs whose results do not
// fit an int64 are an error naming the flags.
func Calculate(in Inputs) (Result, error) {
	var r Result
	producers := big.NewRat(in.Producers, 1)
	perPID := new(big.Rat).Quo(in.Rate, big.NewRat(1000, 1)) // msg/ms
	perPID.Quo(perPID, producers)
	r.PerPIDRate, _ = perPID.Float64()

	delayMs := new(big.Rat).SetFrac64(in.MarkDelay.Nanoseconds(), int64(time.Millisecond))
	factor := new(big.Rat).Add(big.NewRat(1, 1), in.Margin)
	// The iids of all pids bound each pid's and the pids needed.
	total := new(big.Rat).Mul(delayMs, new(big.Rat).Quo(in.Rate, big.NewRat(1000, 1)))
	if _, ok := ceilRatFits(total.Mul(total, factor)); !ok {
		return r, errors.New("rate x mark-delay x (1 + margin) is more than 9,223,372,036,854,775,807 iids: check --rate, --mark-delay and --margin") // max int64
	}
	need := new(big.Rat).Quo(total, producers)
	r.MaxSizeNeeded, _ = ceilRatFits(need)
	r.MaxSizeNeeded = max(r.MaxSizeNeeded, 1)
	r.MaxSize = min(r.MaxSizeNeeded, idmp.MaxMaxSize)
	if each := r.MaxSize * max(NativeBytesPerIID, in.EmulatedBytesPerIID); in.Producers > math.MaxInt64/each {
		return r, fmt.Errorf("--producers %d: their IDMP state would take more than %s (the largest count of bytes): check --producers", in.Producers, bytesize.Format(math.MaxInt64))
	}
	r.MaxSizeFormula = fmt.Sprintf("IDMP-MAXSIZE = ceil(%s ms x %s msg/ms x %s) = %d",
		RatString(delayMs), RatString(perPID), RatString(factor), r.MaxSizeNeeded)
	if r.MaxSizeNeeded > idmp.MaxMaxSize {
		r.PIDsNeeded, _ = ceilRatFits(new(big.Rat).Quo(total, big.NewRat(idmp.MaxMaxSize, 1)))
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"IDMP-MAXSIZE %d is over the limit %d: clamped to %d; spread the rate over at least %d producer IDs (--producers %d) so each needs at most %d; a retry must reuse the pid of the message's first send (the same iid under another pid is a new message, added again)",
			r.MaxSizeNeeded, idmp.MaxMaxSize, idmp.MaxMaxSize, r.PIDsNeeded, r.PIDsNeeded, idmp.MaxMaxSize))
	}

	if in.Recovery > 0 {
		secs := new(big.Rat).SetFrac64(in.Recovery.Nanoseconds(), int64(time.Second))
		r.DurationNeeded, _ = ceilRatFits(secs) // a time.Duration fits
		r.DurationNeeded = max(r.DurationNeeded, 1)
		r.DurationFormula = fmt.Sprintf("IDMP-DURATION = ceil(%s s) = %d", RatString(secs), r.DurationNeeded)
	} else {
		r.DurationNeeded = idmp.DefaultDuration
		r.DurationFormula = fmt.Sprintf("IDMP-DURATION = %d (no --recovery: the server default)", idmp.DefaultDuration)
	}
	r.Duration = min(r.DurationNeeded, idmp.MaxDuration)
	if r.DurationNeeded > idmp.MaxDuration {
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"IDMP-DURATION %d is over the limit %d: clamped to %d; stream IDMP cannot cover a %s recovery, guard the work with a claim key whose --ttl covers it (idmpctl claim run KEY --ttl %s -- ...)",
			r.DurationNeeded, idmp.MaxDuration, idmp.MaxDuration, duration.Format(in.Recovery), duration.Format(in.Recovery)))
	}

	if r.PerPIDRate > 0 {
		r.EvictAfter = float64(r.MaxSize) / r.PerPIDRate / 1000
	}
	r.Interplay = fmt.Sprintf(
		"MAXSIZE is stronger than DURATION: while a producer is healthy its iids are evicted by count after about %s, long before %d s expire them; DURATION matters while it is down and sending nothing.",
		humanSeconds(r.EvictAfter), r.Duration)
	if r.EvictAfter > float64(r.Duration) {
		r.Interplay = fmt.Sprintf(
			"At this rate DURATION (%d s) expires iids before MAXSIZE evicts them (after about %s): the dedupe window is DURATION.",
			r.Duration, humanSeconds(r.EvictAfter))
	}
	r.Memory = Memory{
		NativePerPID:   r.MaxSize * NativeBytesPerIID,
		NativeTotal:    r.MaxSize * NativeBytesPerIID * in.Producers,
		EmulatedPerPID: r.MaxSize * in.EmulatedBytesPerIID,
		EmulatedTotal:  r.MaxSize * in.EmulatedBytesPerIID * in.Producers,
	}
	return r, nil
}

// RatString prints an exact value with up to 6 decimals, trailing zeros trimmed.
func RatString(r *big.Rat) string {
	s := r.FloatString(6)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func humanSeconds(s float64) string {
	switch {
	case s <= 0:
		return "0 s"
	case s < 1:
		return fmt.Sprintf("%.0f ms", s*1000)
	case s < 120:
		return fmt.Sprintf("%.3g s", s)
	case s < 7200:
		return fmt.Sprintf("%.3g min", s/60)
	}
	return fmt.Sprintf("%.3g h", s/3600)
}
