// Package duration reads and writes durations as idmpctl's users type them
// and read them back: Go's units, plus days ("7d", "6d23h"), the form
// idmpctl prints long durations in. Pure: no Redis, no output.
package duration

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Parse is time.ParseDuration that also takes days, as idmpctl
// prints long durations ("7d", "6d23h", "1.5d"): a day is 24 hours. The
// 'd' may come once, first ("1d12h", not "12h1d"); no other unit has a d.
func Parse(s string) (time.Duration, error) {
	i := strings.IndexByte(s, 'd')
	if i < 0 {
		return time.ParseDuration(s)
	}
	head, rest := s[:i], s[i+1:]
	neg := strings.HasPrefix(head, "-")
	head = strings.TrimLeft(head, "+-")
	if !daysRE().MatchString(head) || strings.HasPrefix(rest, "-") || strings.HasPrefix(rest, "+") || strings.IndexByte(rest, 'd') >= 0 {
		return 0, fmt.Errorf("time: invalid duration %q", s)
	}
	days, err := time.ParseDuration(head + "h") // "1.5" days: 1.5h x 24
	if err != nil || days > math.MaxInt64/24 {
		return 0, fmt.Errorf("time: invalid duration %q", s)
	}
	d := days * 24
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || d > math.MaxInt64-r {
			return 0, fmt.Errorf("time: invalid duration %q", s)
		}
		d += r
	}
	if neg {
		d = -d
	}
	return d, nil
}

var daysRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`) })

// Format is d exactly, as Parse reads it back (a printed TTL given back as
// --ttl is the same TTL): no zero parts ("24h", "1h30s"), days from 48 hours
// on ("6d23h59m"), exact fractions of seconds ("59.9s"), Go's own form below
// a second ("500ms"). render.Duration, an age, cuts to two units instead.
func Format(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d == math.MinInt64:
		return d.String()
	case d < 0:
		return "-" + Format(-d)
	case d < time.Second:
		return d.String()
	}
	var b strings.Builder
	const day = 24 * time.Hour
	for _, u := range []struct {
		unit, from time.Duration
		name       string
	}{{day, 2 * day, "d"}, {time.Hour, time.Hour, "h"}, {time.Minute, time.Minute, "m"}} {
		if d >= u.from {
			b.WriteString(strconv.FormatInt(int64(d/u.unit), 10) + u.name)
			d %= u.unit
		}
	}
	if d > 0 {
		b.WriteString(strconv.FormatInt(int64(d/time.Second), 10))
		if frac := d % time.Second; frac > 0 {
			b.WriteString("." + strings.TrimRight(fmt.Sprintf("%09d", int64(frac)), "0"))
		}
		b.WriteString("s")
	}
	return b.String()
}

// Compact is Go's form of d without its zero parts: "5m", "24h", "1h30m",
// never "5m0s" or "24h0m0s"; it parses back with time.ParseDuration.
func Compact(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Age is d as kubectl shows an age: the two largest units, no zero parts
// ("850ms", "59s", "16m40s", "24h", "6d23h"; days from 48 hours on). Parts
// are cut, not rounded: a lease with 4m59.9s left shows "4m59s", never more.
func Age(d time.Duration) string {
	if d < 0 {
		return "-" + Age(-d)
	}
	two := func(a int64, ua string, b int64, ub string) string {
		if b == 0 {
			return strconv.FormatInt(a, 10) + ua
		}
		return strconv.FormatInt(a, 10) + ua + strconv.FormatInt(b, 10) + ub
	}
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d < time.Hour:
		return two(int64(d/time.Minute), "m", int64(d%time.Minute/time.Second), "s")
	case d < 48*time.Hour:
		return two(int64(d/time.Hour), "h", int64(d%time.Hour/time.Minute), "m")
	}
	day := 24 * time.Hour
	return two(int64(d/day), "d", int64(d%day/time.Hour), "h")
}
