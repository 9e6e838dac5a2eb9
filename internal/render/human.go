package render

import (
	"strconv"
	"time"

	"github.com/idmpctl/idmpctl/internal/bytesize"
	"github.com/idmpctl/idmpctl/internal/progress"
)

// Human values: what a person reads in a table, a view or a summary line.
// Raw and JSON output keep raw values (milliseconds, plain integers).

// Count is n with thousands separators: 1,000,000 (as the progress line
// counts).
func Count(n int64) string { return progress.FormatCount(n) }

// N is a count of things, with the noun in the right number: "1 line",
// "1,000 lines". plural is the noun's plural when adding "s" is wrong
// ("entry", "entries").
func N(n int64, noun string, plural ...string) string {
	if n == 1 || n == -1 {
		return Count(n) + " " + noun
	}
	if len(plural) > 0 {
		return Count(n) + " " + plural[0]
	}
	return Count(n) + " " + noun + "s"
}

// Duration is d as kubectl shows an age, to the two largest units and
// without zero parts: "0s", "850ms", "59s", "16m40s", "5m", "24h", "1h30m",
// "6d23h". Below a minute it counts seconds, below a second milliseconds;
// up to 48 hours it counts hours and minutes, past that days and hours.
// The parts are whole (cut, not rounded): a lease of 4m59.9s left is
// "4m59s", never more than is left.
func Duration(d time.Duration) string {
	if d < 0 {
		return "-" + Duration(-d)
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

// Ms is a duration given in milliseconds, as Duration shows it.
func Ms(ms int64) string { return Duration(time.Duration(ms) * time.Millisecond) }

// Bytes is n in binary units, as every command shows memory: "512 B",
// "1.5 KiB", "3.2 MiB", "1.0 GiB" (internal/bytesize).
func Bytes(n int64) string { return bytesize.Format(n) }
