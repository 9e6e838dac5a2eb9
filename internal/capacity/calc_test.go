package capacity

import (
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/idmp"
)

func mustRate(t *testing.T, s string) *big.Rat {
	t.Helper()
	r, err := ParseRate("rate", s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseRateForms(t *testing.T) {
	for in, want := range map[string]string{
		"1000": "1000", "1000/s": "1000", "1k/s": "1000", "2.5k/s": "2500",
		"60000/m": "1000", "3.6M/h": "1000", "1/ms": "1000", "86400/d": "1",
		"0.5": "1/2", "1e3/s": "1000",
	} {
		if got := mustRate(t, in).RatString(); got != want {
			t.Errorf("ParseRate(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestParseRateErrors(t *testing.T) {
	for _, in := range []string{"", "0", "0/s", "-5", "-1k/s", "NaN", "Inf", "abc", "1/fortnight",
		"1e999", "1e13", "5x/s", "1//s", "0x10"} {
		_, err := ParseRate("rate", in)
		if err == nil {
			t.Errorf("ParseRate(%q) accepted", in)
			continue
		}
		if !strings.Contains(err.Error(), "--rate") || !strings.Contains(err.Error(), "for example") {
			t.Errorf("ParseRate(%q) error %q does not name the flag and an accepted form", in, err)
		}
		if strings.Count(err.Error(), "(") > 1 {
			t.Errorf("ParseRate(%q) error %q stacks parentheticals", in, err)
		}
	}
	// An overflow says where the limit is, as --mark-delay's does.
	for _, in := range []string{"1e999", "1e13", "1e13/s", "1e10/ms"} {
		if _, err := ParseRate("rate", in); err == nil || !strings.Contains(err.Error(), "overflow: more than 10^12 messages per second") {
			t.Errorf("ParseRate(%q) error %v, want the overflow's limit", in, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	if d, err := ParseDuration("mark-delay", "80ms", "80ms"); err != nil || d != 80*time.Millisecond {
		t.Fatalf("80ms: %v %v", d, err)
	}
	for in, why := range map[string]string{
		"80": "needs a unit", "0s": "greater than zero", "-1s": "positive", "NaN": "not a duration",
		"9999999999h": "overflow", "soon": "not a duration", "": "not a duration",
	} {
		_, err := ParseDuration("mark-delay", in, "80ms")
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseDuration(%q) = %v, want %q", in, err, why)
		}
	}
}

func TestParseMargin(t *testing.T) {
	for in, want := range map[string]string{"25%": "1/4", "0.25": "1/4", "0": "0", "0%": "0", "100%": "1"} {
		r, err := ParseMargin("margin", in)
		if err != nil || r.RatString() != want {
			t.Errorf("ParseMargin(%q) = %v, %v; want %s", in, r, err, want)
		}
	}
	for _, in := range []string{"-5%", "NaN", "x", "20000%"} {
		if _, err := ParseMargin("margin", in); err == nil {
			t.Errorf("ParseMargin(%q) accepted", in)
		}
	}
	// Issue 24: "--margin 25" silently gave 2500%. A bare number of 1 or
	// more is refused, saying what it would be and how to write percent.
	for in, want := range map[string]string{
		"25":   `--margin "25": a bare number is a fraction, and 25 would be 2500%: write 25% for percent, or 2500% for that (for example --margin 25% or 0.25)`,
		"1":    `--margin "1": a bare number is a fraction, and 1 would be 100%: write 1% for percent, or 100% for that (for example --margin 25% or 0.25)`,
		"1.5":  `--margin "1.5": a bare number is a fraction, and 1.5 would be 150%: write 1.5% for percent, or 150% for that (for example --margin 25% or 0.25)`,
		"0.99": "",
	} {
		_, err := ParseMargin("margin", in)
		if (err == nil) != (want == "") || (err != nil && err.Error() != want) {
			t.Errorf("ParseMargin(%q): %v, want %q", in, err, want)
		}
	}
}

func calc(t *testing.T, rate, delay string, recovery time.Duration, producers int64) Result {
	t.Helper()
	d, err := ParseDuration("mark-delay", delay, "80ms")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Calculate(Inputs{Rate: mustRate(t, rate), MarkDelay: d, Recovery: recovery,
		Producers: producers, Margin: big.NewRat(1, 4), EmulatedBytesPerIID: 100})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestWorkedExamples(t *testing.T) {
	r := calc(t, "1000/s", "80ms", 1000*time.Second, 1)
	if r.MaxSize != 100 || r.Duration != 1000 || len(r.Warnings) != 0 {
		t.Fatalf("1000/s + 80ms + 1000s -> %+v", r)
	}
	if r.MaxSizeFormula != "IDMP-MAXSIZE = ceil(80 ms x 1 msg/ms x 1.25) = 100" {
		t.Errorf("formula %q", r.MaxSizeFormula)
	}
}

func TestExactArithmetic(t *testing.T) {
	// 0.1 is not exact in binary floating point; 80 x 1 x 1.1 must be 88, not 89.
	d, _ := ParseDuration("mark-delay", "80ms", "")
	r, err := Calculate(Inputs{Rate: mustRate(t, "1/ms"), MarkDelay: d, Producers: 1,
		Margin: big.NewRat(1, 10)})
	if err != nil || r.MaxSize != 88 {
		t.Fatalf("MaxSize = %d, want 88", r.MaxSize)
	}
}

// TestOverflow: results past an int64 are errors naming the flags, not a
// saturated 2^62 (attack34 D9); the largest that fits is exact.
func TestOverflow(t *testing.T) {
	in := func(delay time.Duration, producers int64) Inputs {
		return Inputs{Rate: mustRate(t, "1e12"), MarkDelay: delay, Producers: producers, Margin: big.NewRat(1, 4), EmulatedBytesPerIID: 160}
	}
	if r, err := Calculate(in(2049*time.Hour, 1)); err != nil || r.MaxSizeNeeded != 9_220_500_000_000_000_000 {
		t.Errorf("2049h: %d, %v", r.MaxSizeNeeded, err)
	}
	for _, i := range []Inputs{in(2050*time.Hour, 1), in(2050*time.Hour, 1_000_000)} {
		if _, err := Calculate(i); err == nil || !strings.Contains(err.Error(), "check --rate, --mark-delay and --margin") {
			t.Errorf("%s over %d producers: %v", i.MarkDelay, i.Producers, err)
		}
	}
	if _, err := Calculate(in(time.Hour, math.MaxInt64)); err == nil || !strings.Contains(err.Error(), "check --producers") {
		t.Errorf("MaxInt64 producers: %v", err)
	}
}

func TestClamping(t *testing.T) {
	r := calc(t, "1M/s", "80ms", 48*time.Hour, 1)
	if r.MaxSize != idmp.MaxMaxSize || r.MaxSizeNeeded != 100000 || r.PIDsNeeded != 10 {
		t.Errorf("maxsize clamp: %+v", r)
	}
	if r.Duration != idmp.MaxDuration || r.DurationNeeded != 172800 {
		t.Errorf("duration clamp: %+v", r)
	}
	// Splitting producers over pids is safe only if a retry keeps its pid
	// (spec R1: the same iid under another pid is another message).
	if len(r.Warnings) != 2 || !strings.Contains(r.Warnings[0], "a retry must reuse the pid of the message's first send") ||
		!strings.Contains(r.Warnings[1], "claim") {
		t.Errorf("warnings: %q", r.Warnings)
	}
	// Spreading over the advised number of pids removes the clamp.
	if r2 := calc(t, "1M/s", "80ms", time.Hour, r.PIDsNeeded); r2.MaxSizeNeeded > idmp.MaxMaxSize {
		t.Errorf("advice of %d pids still needs %d", r.PIDsNeeded, r2.MaxSizeNeeded)
	}
}

func TestAtLeastOne(t *testing.T) {
	r := calc(t, "1/h", "1ms", time.Millisecond, 1)
	if r.MaxSize != 1 || r.Duration != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestProducersSplitRate(t *testing.T) {
	r := calc(t, "4k/s", "80ms", 0, 4)
	if r.MaxSize != 100 || r.Duration != idmp.DefaultDuration {
		t.Fatalf("%+v", r)
	}
	if r.Memory.EmulatedTotal != 4*100*100 {
		t.Errorf("memory %+v", r.Memory)
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"1000", "2.5k/s", "3.6M/h", "1/ms", "NaN", "-1", "1e999", "0x1p3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate("rate", s)
		if err == nil && (r.Sign() <= 0) {
			t.Fatalf("ParseRate(%q) = %v without error", s, r)
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"80ms", "1.5s", "80", "-1s", "0s", "9999999999h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration("mark-delay", s, "80ms")
		if err == nil && d <= 0 {
			t.Fatalf("ParseDuration(%q) = %v without error", s, d)
		}
	})
}
