package health

import (
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/ops/stream"
)

func codes(ls []Lint) string {
	var s []string
	for _, l := range ls {
		s = append(s, l.Code)
	}
	return strings.Join(s, ",")
}

func TestStreamLints(t *testing.T) {
	def := StreamContext{DefaultDuration: 100, DefaultMaxSize: 100, Role: "master"}
	healthy := stream.Info{Mode: "emulated", IDMPDuration: 100, IDMPMaxSize: 100, PIDsTracked: 2, IIDsTracked: 50, IIDsAdded: 50, Token: true}
	if got := codes(Stream(healthy, def)); got != "" {
		t.Errorf("healthy stream: %s", got)
	}
	full := healthy
	full.IIDsTracked, full.IIDsAdded = 195, 5000
	if got := codes(Stream(full, def)); got != "saturated" {
		t.Errorf("saturated stream: %q", got)
	}
	// Full but no eviction yet (added == tracked): not saturated.
	full.IIDsAdded = 195
	if got := codes(Stream(full, def)); got != "" {
		t.Errorf("full without evictions: %q", got)
	}
	ahead := healthy
	ahead.ServerTimeMS, ahead.LastGeneratedID = 1_000_000, "1002000-0"
	if got := codes(Stream(ahead, def)); got != "clock-ahead" {
		t.Errorf("clock: %q", got)
	}
	ahead.LastGeneratedID = "1000500-0"
	if got := codes(Stream(ahead, def)); got != "" {
		t.Errorf("within tolerance: %q", got)
	}
	odd := healthy
	odd.IDMPMaxSize, odd.OtherMode = 500, "native"
	if got := codes(Stream(odd, StreamContext{DefaultDuration: 100, DefaultMaxSize: 100, Role: "slave"})); got != "non-default,replica,mixed-modes" {
		t.Errorf("odd: %q", got)
	}
	if got := codes(Stream(stream.Info{Mode: "none", IDMPDuration: 100, IDMPMaxSize: 100}, def)); got != "not-idempotent" {
		t.Errorf("none: %q", got)
	}
	plain := healthy
	plain.NotAtomic = true
	if got := codes(Stream(plain, def)); got != "not-atomic" {
		t.Errorf("read with plain commands: %q", got)
	}
	// Emulated state without a liveness token: R13 rests on the snapshot.
	untokened := healthy
	untokened.Token = false
	if got := codes(Stream(untokened, def)); got != "no-token" {
		t.Errorf("without a token: %q", got)
	}
}

// saturated is a notice, not a warning (issue 30 item 8, finding 6):
// eviction by count is how a stream sized with calc-maxsize works. It says
// how long a retry is recognised (MAXSIZE adds of its pid, and about how
// long at the rate of the stream's entries) and when to raise IDMP-MAXSIZE.
func TestSaturatedSaysTheWindow(t *testing.T) {
	def := StreamContext{DefaultDuration: 100, DefaultMaxSize: 100, Role: "master"}
	full := stream.Info{Mode: "emulated", IDMPDuration: 100, IDMPMaxSize: 100, PIDsTracked: 2, IIDsTracked: 195, IIDsAdded: 5000, Token: true,
		// 101 entries in 100 ms, half of them idempotent: 500 iids a second.
		Length: 101, FirstID: "1000000-0", LastID: "1000100-0", LastGeneratedID: "1000100-0", EntriesAdded: 10000, ServerTimeMS: 1000200}
	for _, c := range []struct {
		name        string
		edit        func(*stream.Info)
		want, wantN string // the message has want, and not wantN
	}{
		{"timed", func(*stream.Info) {},
			"saturated: 195 of 200 iid slots (2 pids x maxsize 100) in use while iids-added climbs: iids are evicted by count, so a retry is recognised within 100 adds of its pid after its original (about 400ms at the rate of the 101 entries the stream holds), not for IDMP-DURATION 100s; normal for a stream whose IDMP-MAXSIZE covers its producers' mark-delay (calc-maxsize): raise IDMP-MAXSIZE only if a producer may take longer than that to mark a message sent",
			"(see calc-maxsize)"},
		{"one pid, no rate", func(i *stream.Info) { i.PIDsTracked, i.IIDsTracked, i.Length = 1, 100, 1 },
			"saturated: 100 of 100 iid slots (1 pid x maxsize 100) in use while iids-added climbs: iids are evicted by count, so a retry is recognised within 100 adds of its pid after its original, not for IDMP-DURATION 100s;",
			"about"},
	} {
		i := full
		c.edit(&i)
		ls := Stream(i, def)
		if len(ls) != 1 || ls[0].Code != "saturated" || ls[0].Level != "info" || !strings.Contains(ls[0].Message, c.want) || strings.Contains(ls[0].Message, c.wantN) {
			t.Errorf("%s: %+v\nwant an info saturated lint with %q, without %q", c.name, ls, c.want, c.wantN)
		}
	}
	// 101 entries in 100 s, half of them idempotent: the 200 slots would
	// last 400 s, longer than IDMP-DURATION, which the counters belie (the
	// rate of older entries): no estimate.
	slow := full
	slow.LastID, slow.LastGeneratedID, slow.ServerTimeMS = "1100000-0", "1100000-0", 1100000
	if ls := Stream(slow, def); len(ls) != 1 || ls[0].Code != "saturated" || strings.Contains(ls[0].Message, "about") {
		t.Errorf("an estimate over IDMP-DURATION: %+v", ls)
	}
}

// mixed-modes says what to do: run the migration, for the stream named.
func TestMixedModesSaysMigrate(t *testing.T) {
	for _, c := range []struct{ mode, other, name, want string }{
		{"native", "emulated", "orders", "idmpctl migrate orders' (try --dry-run first)"},
		{"emulated", "native", "o'k {x}", `idmpctl migrate 'o'\''k {x}''`},
	} {
		lints := Stream(stream.Info{Stream: c.name, Mode: c.mode, OtherMode: c.other, IDMPDuration: 100, IDMPMaxSize: 100},
			StreamContext{DefaultDuration: 100, DefaultMaxSize: 100})
		found := false
		for _, l := range lints {
			found = found || l.Code == "mixed-modes" && strings.Contains(l.Message, c.want)
		}
		if !found {
			t.Errorf("%s beside %s: %+v, want a mixed-modes lint with %q", c.mode, c.other, lints, c.want)
		}
	}
}
