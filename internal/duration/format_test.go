package duration

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Durations a person reads (calc-ttl's TTL, the command it suggests, advice)
// are exact and as kubectl writes them: no zero parts ("24h", never
// "24h0m0s"), days past 48 hours ("7d"), and they parse back to the same
// duration, so a suggested --ttl is never shorter than computed.
func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                     "0s",
		500 * time.Millisecond:                "500ms",
		59*time.Second + 900*time.Millisecond: "59.9s",
		time.Minute:                           "1m",
		16*time.Minute + 40*time.Second:       "16m40s",
		time.Hour + 30*time.Second:            "1h30s",
		time.Hour + 15*time.Minute:            "1h15m",
		24 * time.Hour:                        "24h",
		47*time.Hour + 59*time.Minute:         "47h59m",
		48 * time.Hour:                        "2d",
		168 * time.Hour:                       "7d",
		6*24*time.Hour + 23*time.Hour + 59*time.Minute: "6d23h59m",
		2*24*time.Hour + 1500*time.Millisecond:         "2d1.5s",
		time.Minute + time.Nanosecond:                  "1m0.000000001s",
		-90 * time.Second:                              "-1m30s",
	} {
		if got := Format(d); got != want {
			t.Errorf("Format(%v) = %q, want %q", d, got, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		d := time.Duration(r.Int64N(int64(400 * 24 * time.Hour)))
		switch r.IntN(3) { // whole units are the common case
		case 0:
			d = d.Truncate(time.Second)
		case 1:
			d = d.Truncate(time.Minute)
		}
		back, err := Parse(Format(d))
		if err != nil || back != d {
			t.Fatalf("%v -> %q -> %v (%v)", d, Format(d), back, err)
		}
	}
}

// Parse takes Go's durations and days, the form idmpctl prints.
func TestParse(t *testing.T) {
	ok := map[string]time.Duration{
		"7d": 7 * 24 * time.Hour, "6d23h": (6*24 + 23) * time.Hour, "1.5d": 36 * time.Hour,
		"1d12h30m": 36*time.Hour + 30*time.Minute, "-1d": -24 * time.Hour, "0d": 0,
		"5m": 5 * time.Minute, "1h30m": 90 * time.Minute, "500ms": 500 * time.Millisecond,
	}
	for in, want := range ok {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"d", "1d1d", "12h1d", "1x d", "1d-5m", "7", "1dd", "999999999999d", "106752d", "106751d23h47m17s"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, got)
		}
	}
}

// Age cuts to the two largest units, never rounding up: a lease of 4m59.9s
// left is "4m59s".
func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                      "0s",
		850 * time.Millisecond:                 "850ms",
		59*time.Second + 999*time.Millisecond:  "59s",
		1000 * time.Second:                     "16m40s",
		4*time.Minute + 59900*time.Millisecond: "4m59s",
		90 * time.Minute:                       "1h30m",
		47*time.Hour + 59*time.Minute:          "47h59m",
		48 * time.Hour:                         "2d",
		7*24*time.Hour - time.Hour:             "6d23h",
		-90 * time.Second:                      "-1m30s",
	} {
		if got := Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
}
