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
