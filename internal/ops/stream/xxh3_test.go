package stream

import (
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"
)

// checkXXH3 compares xxh3Hash128 with github.com/zeebo/xxh3, the oracle.
func checkXXH3(t *testing.T, b []byte) {
	t.Helper()
	lo, hi := xxh3Hash128(b)
	if want := xxh3.Hash128(b); lo != want.Lo || hi != want.Hi {
		t.Fatalf("len %d %x: got %016x%016x, want %016x%016x", len(b), b, hi, lo, want.Hi, want.Lo)
	}
}

// Every length of each path and its edges (0, 1-3, 4-8, 9-16, 17-128,
// 129-240, then stripes and 1 KiB blocks), random bytes and all-0xff.
func TestXXH3Hash128(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 4200)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	ff := make([]byte, len(buf))
	for i := range ff {
		ff[i] = 0xff
	}
	for n := range len(buf) + 1 {
		if n > 1100 && n%61 != 0 && n%1024 > 2 && n%1024 < 1022 {
			continue
		}
		checkXXH3(t, buf[:n])
		checkXXH3(t, buf[len(buf)-n:])
		checkXXH3(t, ff[:n])
	}
}

// make fuzz (or: go test ./internal/ops/stream -run '^$' -fuzz FuzzXXH3 -fuzztime 30s)
func FuzzXXH3(f *testing.F) {
	for _, n := range []int{0, 3, 8, 16, 128, 240, 241, 1025, 2048} {
		f.Add(make([]byte, n))
	}
	f.Fuzz(checkXXH3)
}
