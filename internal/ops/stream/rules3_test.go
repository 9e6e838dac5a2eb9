package stream

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// R5 and R11 together: batches of any size, with repeats and evictions
// inside them, give exactly what one add at a time gives (a reference model
// of per-pid MAXSIZE eviction).

type evictionModel struct {
	maxsize int
	order   map[string][]string // pid -> iids, oldest first
	origin  map[[2]string]int   // (pid, iid) -> index of the add that wrote it
}

// add returns the index of the original when (pid, iid) is a duplicate, else -1.
func (m *evictionModel) add(k int, pid, iid string) int {
	key := [2]string{pid, iid}
	if slices.Contains(m.order[pid], iid) {
		return m.origin[key]
	}
	m.order[pid] = append(m.order[pid], iid)
	if len(m.order[pid]) > m.maxsize {
		m.order[pid] = m.order[pid][1:]
	}
	m.origin[key] = k
	return -1
}

var _ = rule("R5+R11 batches match the one-at-a-time model (randomized)", func(t *testing.T, h *streamHarness) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 12 {
		s := h.key(fmt.Sprint("t", trial))
		maxsize := 1 + rng.IntN(5)
		h.mustNew(t, s, "setup", "x")
		h.cfgset(t, s, 3600, int64(maxsize))
		m := &evictionModel{maxsize: maxsize, order: map[string][]string{}, origin: map[[2]string]int{}}
		var all []AddRequest
		for range 80 {
			pid := []string{"p1", "p2", "p\x003"}[rng.IntN(3)]
			all = append(all, AddRequest{Stream: s, PID: pid, IID: fmt.Sprint("i", rng.IntN(2*maxsize+2)), Fields: []string{"f", "v"}})
		}
		var got []AddResult
		for len(got) < len(all) {
			n := min(1+rng.IntN(25), len(all)-len(got))
			res, err := h.s.AddBatch(h.ctx, all[len(got):len(got)+n])
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, res...)
		}
		for k, r := range all {
			orig := m.add(k, r.PID, r.IID)
			if (orig >= 0) != got[k].Duplicate || (orig >= 0 && got[k].ID != got[orig].ID) {
				t.Fatalf("trial %d (maxsize %d), add %d %q/%q: got %+v, model says original %d", trial, maxsize, k, r.PID, r.IID, got[k], orig)
			}
		}
		want := int64(0)
		for _, l := range m.order {
			want += int64(len(l))
		}
		if c := h.counters(t, s); c.tracked != want { // cfgset cleared the setup iid
			t.Fatalf("trial %d: iids-tracked %d, model %d", trial, c.tracked, want)
		}
	}
})

var _ = rule("AddBatch splits a long batch and keeps its order", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	h.mustNew(t, s, "p", "setup")
	h.cfgset(t, s, 3600, 10000)
	n := 2*MaxRun + 300
	batch := append(reqs(s, "p", "m-%d", seq(1, n)...), reqs(s, "p", "m-%d", seq(1, n)...)...)
	res, err := h.s.AddBatch(h.ctx, batch)
	if err != nil || len(res) != 2*n {
		t.Fatalf("%d results, %v", len(res), err)
	}
	for k := range n {
		if res[k].Duplicate || !res[n+k].Duplicate || res[n+k].ID != res[k].ID {
			t.Fatalf("m-%d: %+v then %+v", k+1, res[k], res[n+k])
		}
	}
	if got := h.xlen(t, s); got != int64(n+1) {
		t.Fatalf("XLEN = %d, want %d", got, n+1)
	}
})
