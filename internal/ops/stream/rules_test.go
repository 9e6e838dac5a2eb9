package stream

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// R1-R6 of docs/idmp.md, with its worked numbers (see harness_test.go).

var _ = rule("R1 producers are isolated", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	id1 := h.mustNew(t, s, "producer1", "req-123")
	id2 := h.mustNew(t, s, "producer2", "req-123")
	if id1 == id2 {
		t.Fatal("two producers got one entry")
	}
	h.mustDup(t, s, "producer1", "req-123", id1)
	h.mustDup(t, s, "producer2", "req-123", id2)
	if n := h.xlen(t, s); n != 2 {
		t.Fatalf("XLEN = %d, want 2", n)
	}
	h.wantCounters(t, s, counters{pids: 2, tracked: 2, added: 2, dups: 2})
})

var _ = rule("R1 binary and option-looking ids", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	iids := []string{"IDMP", "IDMPAUTO", "*", "123-456", "+", "-", "$", "^", ">", "MAXLEN", "NOMKSTREAM",
		"9999999999999-9999999999999", "\x00", "\x00\x01\x02\xff", "hello世界", "line1\nline2", "with spaces",
		strings.Repeat("x", 65536)}
	pids := []string{"p1", "\x00", "\x00\x01\x02", "IDMP", "*", "-", "key:value", "producer-世界", strings.Repeat("a", 1000)}
	ids := make(map[string]string)
	for _, p := range pids {
		for _, i := range iids {
			ids[p+"\xff|"+i] = h.mustNew(t, s, p, i)
		}
	}
	for _, p := range pids {
		for _, i := range iids {
			h.mustDup(t, s, p, i, ids[p+"\xff|"+i])
		}
	}
	n := int64(len(pids) * len(iids))
	if got := h.xlen(t, s); got != n {
		t.Fatalf("XLEN = %d, want %d", got, n)
	}
	h.wantCounters(t, s, counters{pids: int64(len(pids)), tracked: n, added: n, dups: n})
})

var _ = rule("R2 a duplicate replies the original ID, even of a deleted entry", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	first := h.add(t, s, "p1", "payment-abc", "amount", "100", "currency", "USD")
	again := h.add(t, s, "p1", "payment-abc", "amount", "200", "currency", "EUR")
	if first.Duplicate || !again.Duplicate || again.ID != first.ID || !again.OriginalExists {
		t.Fatalf("first %+v, again %+v", first, again)
	}
	msgs, err := h.rdb.XRange(h.ctx, s, "-", "+").Result()
	if err != nil || len(msgs) != 1 || msgs[0].Values["amount"] != "100" || msgs[0].Values["currency"] != "USD" {
		t.Fatalf("entries = %v, %v; want the original fields only", msgs, err)
	}
	// Deleted by XDEL, trimmed by XTRIM: still deduped, and said to be gone.
	h.rdb.XDel(h.ctx, s, first.ID)
	second := h.mustNew(t, s, "p1", "payment-def")
	h.rdb.XTrimMaxLen(h.ctx, s, 0)
	for iid, id := range map[string]string{"payment-abc": first.ID, "payment-def": second} {
		r := h.add(t, s, "p1", iid, "amount", "300")
		if !r.Duplicate || r.ID != id || r.OriginalExists {
			t.Fatalf("%s after delete: %+v, want a duplicate of the deleted %s", iid, r, id)
		}
	}
	if n := h.xlen(t, s); n != 0 {
		t.Fatalf("XLEN = %d, want 0: a duplicate of a deleted entry writes nothing", n)
	}
})

var _ = rule("R3 IDMPAUTO derives the iid from the pairs", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	auto := func(pid string, fields ...string) AddResult {
		t.Helper()
		r, err := h.s.add1(h.ctx, AddRequest{Stream: s, PID: pid, Auto: true, Fields: fields})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := auto("p1", "field1", "a", "field2", "b", "field3", "c")
	if b := auto("p1", "field2", "b", "field3", "c", "field1", "a"); !b.Duplicate || b.ID != a.ID {
		t.Fatalf("reordered pairs: %+v, want a duplicate of %s", b, a.ID)
	}
	for _, f := range [][]string{
		{"field3", "c", "field1", "x", "field2", "b"},
		{"field1", "a", "field2", "b", "fieldX", "c"},
		{"field1", "a", "field2", "b", "field3", "c", "extra", "1"},
		{"bin", "\x00\x01\x02\xff"}, {"msg", "hello世界"}, {"msg", "héllo"}, {"empty", ""},
		{"data", strings.Repeat("x", 10240)},
	} {
		r := auto("p1", f...)
		if r.Duplicate || r.ID == a.ID {
			t.Fatalf("%.40q: %+v, want a new entry", f, r)
		}
		if d := auto("p1", f...); !d.Duplicate || d.ID != r.ID {
			t.Fatalf("%.40q again: %+v, want a duplicate of %s", f, d, r.ID)
		}
	}
	if other := auto("p2", "field1", "a", "field2", "b", "field3", "c"); other.Duplicate {
		t.Fatal("the same pairs under another producer deduped")
	}
	if h.emulated() && a.IID != AutoIID([]string{"field1", "a", "field2", "b", "field3", "c"}) {
		t.Fatalf("emulated auto IID = %q", a.IID)
	}
	if !h.emulated() && a.IID != "" {
		t.Fatalf("native auto IID = %q, want empty (Redis does not reveal it)", a.IID)
	}
})

var _ = rule("R4 defaults and a stream never written idempotently", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	h.plainXAdd(t, s)
	d, n, err := h.s.ServerDefaults(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := h.info(t, s)
	want := map[Mode]string{ModeEmulated: "none", ModeNative: "native"}[h.s.Mode()]
	if i.Mode != want || i.IDMPDuration != d || i.IDMPMaxSize != n {
		t.Fatalf("plain stream: mode %q %d/%d, want %q %d/%d", i.Mode, i.IDMPDuration, i.IDMPMaxSize, want, d, n)
	}
	h.wantCounters(t, s, counters{})
	h.mustNew(t, s, "p1", "req-1")
	i = h.info(t, s)
	if i.Mode != h.s.Mode().String() || i.IDMPDuration != d || i.IDMPMaxSize != n {
		t.Fatalf("after an add: mode %q %d/%d, want %v %d/%d", i.Mode, i.IDMPDuration, i.IDMPMaxSize, h.s.Mode(), d, n)
	}
	if h.emulated() && (d != 100 || n != 100) {
		t.Fatalf("emulated defaults %d/%d, want 100/100", d, n)
	}
	h.wantCounters(t, s, counters{pids: 1, tracked: 1, added: 1})
})

var _ = rule("R5 maxsize 3 evicts each pid's oldest", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	h.mustNew(t, s, "p1", "init")
	h.cfgset(t, s, 60, 3)
	id1, id2, id3 := h.mustNew(t, s, "p1", "req-1"), h.mustNew(t, s, "p1", "req-2"), h.mustNew(t, s, "p1", "req-3")
	h.mustDup(t, s, "p1", "req-1", id1)
	h.mustDup(t, s, "p1", "req-2", id2)
	h.mustDup(t, s, "p1", "req-3", id3)
	h.mustNew(t, s, "p1", "req-4") // evicts req-1
	if again := h.mustNew(t, s, "p1", "req-1"); again == id1 {
		t.Fatal("req-1 was not evicted")
	} // and evicts req-2
	h.mustDup(t, s, "p1", "req-3", id3)
	if n := h.xlen(t, s); n != 6 {
		t.Fatalf("XLEN = %d, want 6 (init, req-1..4, req-1 again)", n)
	}
	h.mustNew(t, s, "p1", "req-2")
	h.wantCounters(t, s, counters{pids: 1, tracked: 3, added: 7, dups: 4})
	// Per pid: p2 keeps its own 3.
	p2 := map[string]string{}
	for _, i := range []string{"req-1", "req-2", "req-3"} {
		p2[i] = h.mustNew(t, s, "p2", i)
	}
	for i, id := range p2 {
		h.mustDup(t, s, "p2", i, id)
	}
	h.wantCounters(t, s, counters{pids: 2, tracked: 6, added: 10, dups: 7})
})

var _ = rule("R5 maxsize 8 after 100 batched adds keeps req-93..req-100", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	h.mustNew(t, s, "p1", "init")
	h.cfgset(t, s, 60, 8)
	first, err := h.s.AddBatch(h.ctx, reqs(s, "p1", "req-%d", seq(1, 100)...))
	if err != nil || len(first) != 100 {
		t.Fatalf("%d results, %v", len(first), err)
	}
	order := append(seq(93, 100), seq(1, 92)...)
	again, err := h.s.AddBatch(h.ctx, reqs(s, "p1", "req-%d", order...))
	if err != nil || len(again) != 100 {
		t.Fatalf("%d results, %v", len(again), err)
	}
	for k, i := range order {
		orig, r := first[i-1], again[k]
		if orig.Duplicate {
			t.Fatalf("req-%d: first add was a duplicate", i)
		}
		if dedupe := i >= 93; r.Duplicate != dedupe || (r.ID == orig.ID) != dedupe {
			t.Fatalf("req-%d re-added: %+v (original %s), want duplicate=%v", i, r, orig.ID, dedupe)
		}
	}
	if n := h.xlen(t, s); n != 193 {
		t.Fatalf("XLEN = %d, want 1 + 100 + 92 = 193", n)
	}
	h.wantCounters(t, s, counters{pids: 1, tracked: 8, added: 193, dups: 8})
})

var _ = rule("R6 duration 1 forgets an iid after it (slow)", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	h.mustNew(t, s, "p1", "req-1")
	h.cfgset(t, s, 1, 0)
	id1 := h.mustNew(t, s, "p1", "req-1")
	h.mustDup(t, s, "p1", "req-1", id1)
	time.Sleep(2500 * time.Millisecond)
	if id := h.mustNew(t, s, "p1", "req-1"); id == id1 {
		t.Fatal("req-1 still deduped 2.5 s after a 1 s duration")
	}
})

var _ = rule("R6 maxsize evicts before duration expires", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	h.mustNew(t, s, "p1", "x")
	h.cfgset(t, s, 86400, 1)
	a := h.mustNew(t, s, "p1", "a")
	h.mustDup(t, s, "p1", "a", a)
	h.mustNew(t, s, "p1", "b")
	if again := h.mustNew(t, s, "p1", "a"); again == a {
		t.Fatal("a outlived maxsize 1")
	}
})

// R3 on the wire: a request with fields that look like options stays data.
var _ = rule("R3 fields that look like options are data", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	fields := []string{"IDMP", "p", "*", "MAXLEN", "NOMKSTREAM", "0"}
	id := h.mustNew(t, s, "p1", "i", fields...)
	msgs, err := h.rdb.XRange(h.ctx, s, id, id).Result()
	if err != nil || len(msgs) != 1 || fmt.Sprint(msgs[0].Values) != fmt.Sprint(map[string]any{"IDMP": "p", "*": "MAXLEN", "NOMKSTREAM": "0"}) {
		t.Fatalf("entry = %v, %v", msgs, err)
	}
})
