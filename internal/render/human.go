package render

import (
	"time"

	"github.com/idmpctl/idmpctl/internal/duration"
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

// Duration is d as kubectl shows an age, to the two largest units
// (duration.Age): "850ms", "16m40s", "6d23h".
func Duration(d time.Duration) string { return duration.Age(d) }

// Ms is a duration given in milliseconds, as Duration shows it.
func Ms(ms int64) string { return Duration(time.Duration(ms) * time.Millisecond) }
