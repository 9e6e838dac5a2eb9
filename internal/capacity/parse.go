// Package capacity computes IDMP-DURATION and IDMP-MAXSIZE from what an
// operator knows about a producer (docs/capacity.md). It is pure: no server.
package capacity

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idmpctl/idmpctl/internal/duration"
)

// InputError names the flag a bad value came from and shows an accepted form.
type InputError struct {
	Flag, Value, Why, Example string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("--%s %q: %s (for example --%s %s)", e.Flag, e.Value, e.Why, e.Flag, e.Example)
}

// badInput makes the errors of one flag's value.
func badInput(flag, value, example string) func(why string) error {
	return func(why string) error { return &InputError{Flag: flag, Value: value, Why: why, Example: example} }
}

// Compiled on first use: start-up stays cheap for commands without a rate.
var (
	numberRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$`)
	})
	rateRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([0-9.eE+-]+)([kKMG]?)(?:/([a-z]+))?$`)
	})
)

// maxRate bounds rates far beyond any real producer; past it, an overflow.
const maxRate = 1e12

var rateUnits = map[string][2]int64{
	"": {1, 1}, "s": {1, 1}, "sec": {1, 1}, "ms": {1000, 1},
	"m": {1, 60}, "min": {1, 60}, "h": {1, 3600}, "d": {1, 86400},
}

var rateScale = map[string]int64{"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}

// ParseRate reads a message rate and returns it exactly, in messages per
// second. Accepted: 1000, 1000/s, 1k/s, 2.5k/s, 60000/m, 3.6M/h, 1/ms.
// A bare number is per second.
func ParseRate(flag, s string) (*big.Rat, error) {
	bad := badInput(flag, s, "1000/s, 2.5k/s, 60000/m or 1/ms")
	s = strings.TrimSpace(s)
	m := rateRE().FindStringSubmatch(s)
	if m == nil || len(s) > 64 {
		return nil, bad("not a rate")
	}
	num, err := parsePositive(m[1])
	if errors.Is(err, errOverflow) {
		return nil, bad("overflow: more than 10^12 messages per second")
	}
	if err != nil {
		return nil, bad(err.Error())
	}
	unit, ok := rateUnits[m[3]]
	if !ok {
		return nil, bad(fmt.Sprintf("unknown unit /%s: use /ms, /s, /m, /h or /d", m[3]))
	}
	r := new(big.Rat).Mul(num, big.NewRat(rateScale[m[2]], 1))
	r.Mul(r, big.NewRat(unit[0], unit[1]))
	if f, _ := r.Float64(); f > maxRate {
		return nil, bad("overflow: more than 10^12 messages per second")
	}
	return r, nil
}

// errOverflow is parsePositive's number past maxRate (or no float64): each
// caller says what the limit is.
var errOverflow = errors.New("overflow")

// parsePositive reads a finite decimal number > 0 exactly.
func parsePositive(s string) (*big.Rat, error) {
	if s == "" || strings.HasPrefix(s, "-") {
		return nil, fmt.Errorf("must be positive")
	}
	if !numberRE().MatchString(s) {
		return nil, fmt.Errorf("not a number")
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || math.IsInf(f, 0) || f > maxRate:
		return nil, errOverflow
	case f == 0:
		return nil, fmt.Errorf("must be greater than zero")
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("not a number")
	}
	return r, nil
}

// ParseDuration reads a Go duration that must be > 0 and carry a unit:
// a bare number is refused rather than guessed.
func ParseDuration(flag, s, example string) (time.Duration, error) {
	bad := badInput(flag, s, example)
	s = strings.TrimSpace(s)
	if numberRE().MatchString(s) {
		return 0, bad("a duration needs a unit: say which you mean")
	}
	if strings.HasPrefix(s, "-") {
		return 0, bad("must be positive")
	}
	d, err := duration.Parse(s)
	switch {
	case err != nil && strings.Contains(err.Error(), "invalid duration") && looksNumeric(s):
		return 0, bad("overflow: longer than 290 years")
	case err != nil:
		return 0, bad("not a duration")
	case d <= 0:
		return 0, bad("must be greater than zero")
	}
	return d, nil
}

func looksNumeric(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r >= '0' && r <= '9' }) >= 0 &&
		!strings.ContainsAny(s, "NnIi")
}

// ParseMargin reads a safety margin: 25% or 0.25. Zero is allowed (no
// margin); negative, NaN and more than 100x are not.
func ParseMargin(flag, s string) (*big.Rat, error) {
	bad := badInput(flag, s, "25% or 0.25")
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	num := strings.TrimSuffix(s, "%")
	if strings.HasPrefix(num, "-") {
		return nil, bad("must not be negative")
	}
	r, err := parsePositive(num)
	if err != nil {
		if err.Error() == "must be greater than zero" {
			return new(big.Rat), nil
		}
		if errors.Is(err, errOverflow) {
			return nil, bad("more than 10000% is not a margin")
		}
		return nil, bad(err.Error())
	}
	if pct {
		r.Quo(r, big.NewRat(100, 1))
	} else if r.Cmp(big.NewRat(1, 1)) >= 0 {
		// "--margin 25" meant 25%, not 2500%, and "1" may mean 1% or 100%:
		// a bare number of 1 or more is refused, never guessed.
		all := RatString(new(big.Rat).Mul(r, big.NewRat(100, 1)))
		return nil, bad(fmt.Sprintf("a bare number is a fraction, and %s would be %s%%: write %s%% for percent, or %s%% for that", num, all, num, all))
	}
	if r.Cmp(big.NewRat(100, 1)) > 0 {
		return nil, bad("more than 10000% is not a margin")
	}
	return r, nil
}

// maxBytes bounds sizes (1 PB): far beyond any key, value or server.
const maxBytes = 1 << 50

// bytesUnits are redis.conf's memory units (case-insensitive): k, m, g are
// powers of 1000, kb, mb, gb powers of 1024.
var bytesUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1000, "kb": 1024,
	"m": 1000 * 1000, "mb": 1024 * 1024,
	"g": 1000 * 1000 * 1000, "gb": 1024 * 1024 * 1024,
}

// ParseBytes reads a size in bytes with redis.conf's units (40, 40b, 1k,
// 1kb, 4gb); minimum is the smallest value allowed (0 or 1).
func ParseBytes(flag, s string, minimum int64, example string) (int64, error) {
	bad := badInput(flag, s, example)
	t := strings.ToLower(strings.TrimSpace(s))
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], t[i:]
	}
	mult, ok := bytesUnits[unit]
	switch {
	case strings.HasPrefix(t, "-"):
		return 0, bad("must not be negative")
	case num == "":
		return 0, bad("not a size")
	case !ok:
		return 0, bad(fmt.Sprintf("unknown unit %q: use b, k, kb, m, mb, g or gb, as redis.conf does", unit))
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok || !numberRE().MatchString(num) {
		return 0, bad("not a size")
	}
	r.Mul(r, big.NewRat(mult, 1))
	if !r.IsInt() {
		return 0, bad("not a whole number of bytes")
	}
	if r.Cmp(big.NewRat(maxBytes, 1)) > 0 {
		return 0, bad("overflow: more than 1 PB")
	}
	n := r.Num().Int64()
	if n < minimum { // n >= 0: only a minimum of 1 refuses one
		return 0, bad("must be greater than zero")
	}
	return n, nil
}
