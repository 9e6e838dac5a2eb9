package capacity

import (
	"math/big"
	"strings"
	"testing"
	"time"
)

// The seeds' worked example: 100 msg/s, a 24 h TTL, 40-byte keys and
// 80-byte values: (40 + 80) x 100 x 86400 x 1.2 = 1,244,160,000 bytes,
// "about 1.24 GB".
func TestCalculateTTLWorkedExample(t *testing.T) {
	r, _ := CalculateTTL(TTLInputs{Rate: mustRate(t, "100/s"), TTL: 24 * time.Hour, KeySize: 40, ValueSize: 80})
	if r.TTL != 24*time.Hour || r.Keys != 8_640_000 || r.Memory != 1_244_160_000 {
		t.Fatalf("ttl %s keys %d memory %d", r.TTL, r.Keys, r.Memory)
	}
	if r.MemoryFormula != "memory = (40 B + 80 B) x 100 msg/s x 86400 s x 1.2 = 1244160000 B" {
		t.Errorf("formula %q", r.MemoryFormula)
	}
	if len(r.Advice) != 0 || r.MeasuredMemory != 0 {
		t.Errorf("advice %q measured %d", r.Advice, r.MeasuredMemory)
	}
}

func TestCalculateTTLRetryWindow(t *testing.T) {
	in := TTLInputs{Rate: mustRate(t, "1k/s"), MaxProcessing: 5 * time.Minute, MaxRetryDelay: time.Hour,
		Buffer: 10 * time.Minute, Window: true, KeySize: -1, ValueSize: -1}
	r, _ := CalculateTTL(in)
	if r.TTL != 75*time.Minute || r.RetryWindow != 75*time.Minute || r.Keys != 4_500_000 {
		t.Fatalf("ttl %s window %s keys %d", r.TTL, r.RetryWindow, r.Keys)
	}
	if r.Memory != 0 || r.MemoryFormula != "" {
		t.Errorf("no sizes, yet memory %d %q", r.Memory, r.MemoryFormula)
	}
	if r.TTLFormula != "TTL = max-processing 5m + max-retry-delay 1h + buffer 10m = 1h15m" {
		t.Errorf("ttl formula %q", r.TTLFormula)
	}
	if len(r.Advice) != 0 {
		t.Errorf("advice %q", r.Advice)
	}

	// A given TTL shorter than the window: advice; and no buffer: advice.
	in.TTL, in.Buffer = time.Hour, 0
	r, _ = CalculateTTL(in)
	if r.TTL != time.Hour || r.RetryWindow != 65*time.Minute {
		t.Fatalf("ttl %s window %s", r.TTL, r.RetryWindow)
	}
	if len(r.Advice) != 2 || !strings.Contains(r.Advice[0], "--ttl 1h is shorter than the retry window 1h5m") ||
		!strings.Contains(r.Advice[1], "no --buffer") {
		t.Errorf("advice %q", r.Advice)
	}
}

func TestCalculateTTLMeasuredAndMaxMemory(t *testing.T) {
	in := TTLInputs{Rate: mustRate(t, "100/s"), TTL: 24 * time.Hour, KeySize: -1, ValueSize: 80, MaxMemory: 1 << 30,
		Measured: &MeasuredKeys{Pattern: "idem:*", Keys: 50, KeyBytes: 39.6, ValueBytes: 70, UsageBytes: 200}}
	r, _ := CalculateTTL(in)
	// The key size comes from the sample; the value size given wins.
	if r.KeySize != 40 || r.ValueSize != 80 || r.Memory != 1_244_160_000 {
		t.Fatalf("sizes %d %d memory %d", r.KeySize, r.ValueSize, r.Memory)
	}
	if r.MeasuredMemory != 8_640_000*200 {
		t.Errorf("measured %d", r.MeasuredMemory)
	}
	if d := r.FormulaVsMeasured; d > -0.27 || d < -0.29 { // 1.24416e9 / 1.728e9 - 1 = -0.28
		t.Errorf("formula vs measured %f", d)
	}
	joined := strings.Join(r.Advice, "\n")
	for _, want := range []string{"by (key + value) x 1.2 the keys need 1.2 GiB, over --maxmemory 1.0 GiB (116% of it)",
		"at their measured size the keys need 1.6 GiB, over --maxmemory 1.0 GiB (161% of it)", "the formula is 28% under what the sampled keys cost: their MEMORY USAGE is 200 B a key against (40 B + 80 B) x 1.2; Redis spends about 90.4 B a key"} {
		if !strings.Contains(joined, want) {
			t.Errorf("advice lacks %q:\n%s", want, joined)
		}
	}
}

// A TTL computed from the window is one to type: rounded up to a whole
// second (a millisecond below one), never below the window; the formula
// says so, and so does the advice to a --ttl shorter than the window.
func TestCalculateTTLRoundsUp(t *testing.T) {
	in := TTLInputs{Rate: mustRate(t, "10/s"), MaxProcessing: 40080 * time.Millisecond, MaxRetryDelay: 20 * time.Minute,
		Buffer: time.Minute, Window: true, KeySize: 40, ValueSize: 80}
	r, _ := CalculateTTL(in)
	if r.RetryWindow != 21*time.Minute+40080*time.Millisecond || r.TTL != 21*time.Minute+41*time.Second || r.Keys != 13010 {
		t.Fatalf("window %s ttl %s keys %d", r.RetryWindow, r.TTL, r.Keys)
	}
	if want := "TTL = max-processing 40.08s + max-retry-delay 20m + buffer 1m = 21m40.08s, rounded up to 21m41s"; r.TTLFormula != want {
		t.Errorf("formula %q, want %q", r.TTLFormula, want)
	}
	in.TTL = 10 * time.Minute
	r, _ = CalculateTTL(in)
	if len(r.Advice) == 0 || !strings.HasSuffix(r.Advice[0], "use --ttl 21m41s or more") {
		t.Errorf("advice %q", r.Advice)
	}
	for d, want := range map[time.Duration]time.Duration{
		time.Hour: time.Hour, 1300080 * time.Millisecond: 1301 * time.Second, 700*time.Millisecond + 1: 701 * time.Millisecond,
		time.Second + 1: 2 * time.Second, 500 * time.Millisecond: 500 * time.Millisecond,
	} {
		if got := RoundUp(d); got != want {
			t.Errorf("RoundUp(%s) = %s, want %s", d, got, want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"40": 40, "40b": 40, "40B": 40, "1k": 1000, "1kb": 1024, "1.5kb": 1536,
		"4gb": 4 << 30, "2G": 2e9, "0": 0, " 80 ": 80, "3mb": 3 << 20} {
		got, err := ParseBytes("value-size", in, 0, "80")
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, why := range map[string]string{"": "not a size", "-1": "negative", "1.5": "whole number", "12x": "unknown unit",
		"kb": "not a size", "1e3": "unknown unit", "NaN": "not a size", "9999999gb": "overflow", "1..2": "not a size"} {
		_, err := ParseBytes("value-size", in, 0, "80")
		if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "--value-size") {
			t.Errorf("ParseBytes(%q) = %v, want %q", in, err, why)
		}
	}
	if _, err := ParseBytes("key-size", "0", 1, "40"); err == nil || !strings.Contains(err.Error(), "greater than zero") {
		t.Errorf("key-size 0: %v", err)
	}
}

// Inputs whose results do not fit are refused, never printed as a wrapped
// or sentinel number: a retry window past time.Duration's 290 years (the
// sum wrapped to a wrong TTL), keys or bytes past int64 (printed as 2^62),
// a TTL under Redis's millisecond.
func TestCalculateTTLOutOfRange(t *testing.T) {
	long := 2_000_000 * time.Hour
	for _, c := range []struct {
		name string
		in   TTLInputs
		want string
	}{
		{"window overflows", TTLInputs{Rate: mustRate(t, "1/s"), MaxProcessing: long, MaxRetryDelay: long, Buffer: long, Window: true, KeySize: 1, ValueSize: 1},
			"the retry window (max-processing + max-retry-delay + buffer) is longer than 290 years"},
		{"memory overflows", TTLInputs{Rate: mustRate(t, "1e9"), TTL: long, KeySize: 1, ValueSize: 1},
			"more than 8.0 EiB"},
		{"keys overflow", TTLInputs{Rate: big.NewRat(1e12, 1), TTL: long, KeySize: 1, ValueSize: 1},
			"more than 9,223,372,036,854,775,807 keys"},
		{"measured overflows", TTLInputs{Rate: mustRate(t, "1e9"), TTL: long, KeySize: -1, ValueSize: -1,
			Measured: &MeasuredKeys{Keys: 1, KeyBytes: 10, ValueBytes: 10, UsageBytes: 100}}, "more than 8.0 EiB"},
		{"ttl under a millisecond", TTLInputs{Rate: mustRate(t, "1/s"), TTL: time.Microsecond, KeySize: 1, ValueSize: 1},
			"a TTL under 1ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := CalculateTTL(c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v (result ttl %s keys %d memory %d measured %d), want %q", err, r.TTL, r.Keys, r.Memory, r.MeasuredMemory, c.want)
			}
		})
	}
	// The largest that fits still computes.
	half := long / 2
	r, err := CalculateTTL(TTLInputs{Rate: mustRate(t, "1/s"), MaxProcessing: half, MaxRetryDelay: half, Window: true, KeySize: 1, ValueSize: 1})
	if err != nil || r.TTL != long {
		t.Errorf("ttl %s, %v", r.TTL, err)
	}
}

// The keys a cluster keeps are split over its primaries: advice compares
// the fullest primary's room with its share.
func TestServerAdviceSplitsOverPrimaries(t *testing.T) {
	m := &MeasuredKeys{Keys: 1, Server: &ServerMemory{Node: "10.0.0.1:7000", Used: 10 << 20, MaxMemory: 100 << 20, Policy: "noeviction", Primaries: 3}}
	if a := serverAdvice(m, 200<<20); a != "" {
		t.Errorf("a third of 200 MiB fits 90 MiB of room, yet %q", a)
	}
	a := serverAdvice(m, 300<<20)
	if !strings.HasPrefix(a, "the keys need 100.0 MiB at their measured size, and primary 10.0.0.1:7000 uses 10.0 MiB already: 110% of its maxmemory 100.0 MiB") {
		t.Errorf("advice %q", a)
	}
}
