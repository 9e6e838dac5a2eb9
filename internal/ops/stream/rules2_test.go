package stream

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// R7-R13 of docs/idmp.md and what idmpctl adds (duplicate flag, Info,
// ClearTracking, batch failures), in every mode (see harness_test.go).

var _ = rule("R7 same values clear nothing, a change clears every pid", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	id1, id2 := h.mustNew(t, s, "p1", "req-1"), h.mustNew(t, s, "p1", "req-2")
	h.mustNew(t, s, "p2", "req-3")
	h.mustDup(t, s, "p1", "req-1", id1)
	def := idmp.Config{Duration: 100, MaxSize: 100}
	for _, c := range [][2]int64{{100, 100}, {100, 0}, {0, 100}, {100, 100}} {
		if r := h.cfgset(t, s, c[0], c[1]); r != (CfgResult{Before: def, After: def}) {
			t.Fatalf("cfgset %v on %v: %+v, want unchanged", c, def, r)
		}
	}
	h.mustDup(t, s, "p1", "req-1", id1)
	h.mustDup(t, s, "p1", "req-2", id2)
	h.wantCounters(t, s, counters{pids: 2, tracked: 3, added: 3, dups: 3})
	r := h.cfgset(t, s, 60, 0)
	if want := (CfgResult{Before: def, After: idmp.Config{Duration: 60, MaxSize: 100}, Changed: true, ClearedIIDs: 3}); r != want {
		t.Fatalf("cfgset 60: %+v, want %+v", r, want)
	}
	h.wantCounters(t, s, counters{pids: 0, tracked: 0, added: 3, dups: 3})
	if n := h.xlen(t, s); n != 3 {
		t.Fatalf("XLEN = %d after clearing, want the 3 entries kept", n)
	}
	if again := h.mustNew(t, s, "p1", "req-1"); again == id1 {
		t.Fatal("req-1 deduped after a clearing cfgset")
	}
	r = h.cfgset(t, s, 0, 50)
	if want := (CfgResult{Before: idmp.Config{Duration: 60, MaxSize: 100}, After: idmp.Config{Duration: 60, MaxSize: 50}, Changed: true, ClearedIIDs: 1}); r != want {
		t.Fatalf("cfgset maxsize 50: %+v, want %+v", r, want)
	}
	if i := h.info(t, s); i.IDMPDuration != 60 || i.IDMPMaxSize != 50 {
		t.Fatalf("settings %d/%d, want 60/50", i.IDMPDuration, i.IDMPMaxSize)
	}
	// Configured before any idempotent add, then set again and again: no clearing.
	p := h.key("plain")
	h.plainXAdd(t, p)
	if r := h.cfgset(t, p, 10, 5000); !r.Changed || r.ClearedIIDs != 0 {
		t.Fatalf("first cfgset of a plain stream: %+v", r)
	}
	id := h.mustNew(t, p, "p1", "req-1")
	for range 3 {
		if r := h.cfgset(t, p, 10, 5000); r.Changed {
			t.Fatalf("same values: %+v", r)
		}
	}
	h.mustDup(t, p, "p1", "req-1", id)
})

var _ = rule("R7 errors change nothing", func(t *testing.T, h *streamHarness) {
	missing := h.key("missing")
	_, err := h.s.CfgSet(h.ctx, missing, 5, 0)
	wantErr(t, err, exit.NotFound, "ERR no such key")
	if n := h.rdb.Exists(h.ctx, missing).Val(); n != 0 {
		t.Fatal("a failed cfgset created the stream")
	}
	s := h.key("s")
	id := h.mustNew(t, s, "p1", "req-1")
	for _, c := range []struct {
		d, n int64
		want string
	}{
		{0, 0, "ERR At least one parameter"},
		{-100, 0, "ERR IDMP-DURATION must be between 1 and 86400 seconds"},
		{86401, 0, "ERR IDMP-DURATION must be between 1 and 86400 seconds"},
		{0, -50, "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"},
		{0, 10001, "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"},
		{5, 10001, "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"},
	} {
		_, err := h.s.CfgSet(h.ctx, s, c.d, c.n)
		wantErr(t, err, exit.Usage, c.want)
	}
	if i := h.info(t, s); i.IDMPDuration != 100 || i.IDMPMaxSize != 100 || i.IIDsTracked != 1 {
		t.Fatalf("after failed cfgsets: %+v", i)
	}
	h.mustDup(t, s, "p1", "req-1", id)
	for _, c := range [][2]int64{{86400, 10000}, {1, 1}} {
		if r := h.cfgset(t, s, c[0], c[1]); r.After != (idmp.Config{Duration: c[0], MaxSize: c[1]}) {
			t.Fatalf("bounds %v: %+v", c, r)
		}
	}
})

var _ = rule("R8 lifetime counters survive eviction and clearing", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	h.mustNew(t, s, "p1", "init")
	h.cfgset(t, s, 0, 3)
	id1 := h.mustNew(t, s, "p1", "req-1")
	h.mustDup(t, s, "p1", "req-1", id1)
	id2 := h.mustNew(t, s, "p1", "req-2")
	h.mustDup(t, s, "p1", "req-2", id2)
	h.wantCounters(t, s, counters{pids: 1, tracked: 2, added: 3, dups: 2})
	id3, id4 := h.mustNew(t, s, "p1", "req-3"), h.mustNew(t, s, "p1", "req-4")
	h.wantCounters(t, s, counters{pids: 1, tracked: 3, added: 5, dups: 2})
	h.mustDup(t, s, "p1", "req-3", id3)
	h.mustDup(t, s, "p1", "req-4", id4)
	h.wantCounters(t, s, counters{pids: 1, tracked: 3, added: 5, dups: 4})
})

var _ = rule("R9 NOMKSTREAM on a missing stream creates nothing", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	for _, auto := range []bool{false, true} {
		req := AddRequest{Stream: s, PID: "p1", IID: "req-1", Fields: []string{"f", "v"}, NoMkStream: true}
		if auto {
			req.IID, req.Auto = "", true
		}
		_, err := h.s.add1(h.ctx, req)
		wantErr(t, err, exit.NotFound, "stream does not exist")
	}
	keys := []string{s}
	if l, err := idmp.StateKeys(s, h.s.Conn.Cluster()); err == nil {
		keys = append(keys, l.Meta, l.PIDs, l.IDs("p1"), l.Order("p1"))
	}
	for _, k := range keys {
		if h.rdb.Exists(h.ctx, k).Val() != 0 {
			t.Fatalf("NOMKSTREAM created %q", k)
		}
	}
	h.plainXAdd(t, s)
	r, err := h.s.add1(h.ctx, AddRequest{Stream: s, PID: "p1", IID: "req-1", Fields: []string{"f", "v"}, NoMkStream: true})
	if err != nil || r.Duplicate {
		t.Fatalf("NOMKSTREAM on an existing stream: %+v, %v", r, err)
	}
	h.mustDup(t, s, "p1", "req-1", r.ID)
})

var _ = rule("R10 trimming passes through; a duplicate does not trim", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	add := func(iid string, f func(*AddRequest)) AddResult {
		t.Helper()
		req := AddRequest{Stream: s, PID: "p1", IID: iid, Fields: []string{"f", "v"}}
		f(&req)
		r, err := h.s.add1(h.ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", iid, err)
		}
		return r
	}
	for range 5 {
		h.plainXAdd(t, s)
	}
	maxlen1 := func(r *AddRequest) { r.MaxLen = 1 }
	first := add("req-1", maxlen1)
	if n := h.xlen(t, s); n != 1 {
		t.Fatalf("MAXLEN = 1: XLEN %d", n)
	}
	for range 3 {
		h.plainXAdd(t, s)
	}
	if r := add("req-1", maxlen1); !r.Duplicate || r.ID != first.ID {
		t.Fatalf("duplicate with MAXLEN: %+v", r)
	}
	if n := h.xlen(t, s); n != 4 {
		t.Fatalf("XLEN = %d after a duplicate with MAXLEN 1, want 4 (no trim)", n)
	}
	approx := add("req-2", func(r *AddRequest) { r.MaxLen, r.Approx, r.Limit = 100, true, 10 })
	minid := add("req-3", func(r *AddRequest) { r.MinID, r.Approx = "1000000000-0", true })
	nolimit := add("req-4", func(r *AddRequest) { r.MaxLen, r.Approx, r.Limit = 100, true, -1 })
	if approx.Duplicate || minid.Duplicate || nolimit.Duplicate || h.xlen(t, s) != 7 {
		t.Fatalf("approximate trims: %+v %+v %+v, XLEN %d", approx, minid, nolimit, h.xlen(t, s))
	}
	exact := add("req-5", func(r *AddRequest) { r.MinID = nolimit.ID })
	if n := h.xlen(t, s); exact.Duplicate || n != 2 {
		t.Fatalf("MINID = last ID: %+v, XLEN %d, want 2", exact, n)
	}
	if r := add("req-5", func(r *AddRequest) { r.MinID = "99999999999999-0" }); !r.Duplicate || h.xlen(t, s) != 2 {
		t.Fatalf("duplicate with a MINID above everything: %+v, XLEN %d, want no trim", r, h.xlen(t, s))
	}
})

// Issue 30 item 5: DELREF and ACKED (Redis 8.2+) go to XADD where the
// server has them, natively and emulated; elsewhere (Redis 7, Valkey 8)
// the emulation refuses a new entry, writing nothing, and only where XADD
// would add: WRONGTYPE, NOMKSTREAM and a duplicate answer first.
var _ = rule("R10 DELREF and ACKED trim as the server does, or are refused last", func(t *testing.T, h *streamHarness) {
	s, str := h.key("s"), h.key("str")
	h.plainXAdd(t, s)
	h.plainXAdd(t, s)
	// A group holds both entries pending: ACKED trims neither, DELREF
	// trims them and their references.
	if err := h.rdb.XGroupCreate(h.ctx, s, "g", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := h.rdb.XReadGroup(h.ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{s, ">"}}).Err(); err != nil {
		t.Fatal(err)
	}
	req := func(stream, iid, deletion string) AddRequest {
		return AddRequest{Stream: stream, PID: "p", IID: iid, Fields: []string{"f", "v"}, MaxLen: 1, Deletion: deletion}
	}
	xdelex, err := h.rdb.Do(h.ctx, "COMMAND", "INFO", "XDELEX").Slice()
	if err != nil {
		t.Fatal(err)
	}
	pending := func() int64 { return h.rdb.XPending(h.ctx, s, "g").Val().Count }
	if len(xdelex) == 1 && xdelex[0] != nil { // Redis 8.2+
		if r, err := h.s.add1(h.ctx, req(s, "a", "ACKED")); err != nil || r.Duplicate || h.xlen(t, s) != 3 || pending() != 2 {
			t.Fatalf("ACKED MAXLEN 1 with 2 entries pending: %+v %v, XLEN %d, %d pending; want 3 and 2", r, err, h.xlen(t, s), pending())
		}
		if r, err := h.s.add1(h.ctx, req(s, "b", "DELREF")); err != nil || r.Duplicate || h.xlen(t, s) != 1 || pending() != 0 {
			t.Fatalf("DELREF MAXLEN 1: %+v %v, XLEN %d, %d pending; want 1 and 0", r, err, h.xlen(t, s), pending())
		}
		return
	}
	for _, deletion := range []string{"ACKED", "DELREF"} {
		_, err := h.s.add1(h.ctx, req(s, "a", deletion))
		if err == nil || !strings.Contains(err.Error(), deletion+" with MAXLEN or MINID needs Redis 8.2 or later") || h.xlen(t, s) != 2 || pending() != 2 {
			t.Fatalf("%s on a server without it: %v, XLEN %d, %d pending; want the refusal and nothing written", deletion, err, h.xlen(t, s), pending())
		}
	}
	h.mustNew(t, s, "p", "a") // the refused iid was not tracked
	if r, err := h.s.add1(h.ctx, req(s, "a", "DELREF")); err != nil || !r.Duplicate {
		t.Fatalf("a duplicate with DELREF: %+v %v, want the duplicate", r, err)
	}
	if err := h.rdb.Set(h.ctx, str, "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.add1(h.ctx, req(str, "a", "DELREF")); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("DELREF on a string: %v, want WRONGTYPE", err)
	}
	missing := req(h.key("missing"), "a", "DELREF")
	missing.NoMkStream = true
	if _, err := h.s.add1(h.ctx, missing); exit.Code(err) != exit.NotFound {
		t.Fatalf("DELREF with NOMKSTREAM on a missing stream: %v, want no stream", err)
	}
})

var _ = rule("R11 a batch dedupes its own repeats, in order", func(t *testing.T, h *streamHarness) {
	s, s2 := h.key("s"), h.key("s2")
	batch := append(reqs(s, "p1", "req-%d", 1, 2, 1, 3), reqs(s, "p2", "req-%d", 1, 1)...)
	batch = append(batch, AddRequest{Stream: s, PID: "p3", Auto: true, Fields: []string{"a", "1"}},
		AddRequest{Stream: s, PID: "p3", Auto: true, Fields: []string{"a", "1"}})
	res, err := h.s.AddBatch(h.ctx, batch)
	if err != nil || len(res) != len(batch) {
		t.Fatalf("%d results, %v", len(res), err)
	}
	dupOf := map[int]int{2: 0, 5: 4, 7: 6}
	seen := map[string]bool{}
	for k, r := range res {
		if o, ok := dupOf[k]; ok {
			if !r.Duplicate || r.ID != res[o].ID {
				t.Fatalf("result %d = %+v, want a duplicate of %d", k, r, o)
			}
			continue
		}
		if r.Duplicate || seen[r.ID] {
			t.Fatalf("result %d = %+v, want a new entry", k, r)
		}
		seen[r.ID] = true
	}
	h.wantCounters(t, s, counters{pids: 3, tracked: 5, added: 5, dups: 3})
	mixed, err := h.s.AddBatch(h.ctx, append(reqs(s2, "p1", "x-%d", 1), append(reqs(s, "p1", "x-%d", 1), reqs(s2, "p1", "x-%d", 1, 2)...)...))
	if err != nil || len(mixed) != 4 || mixed[0].Duplicate || mixed[1].Duplicate || !mixed[2].Duplicate || mixed[2].ID != mixed[0].ID || mixed[3].Duplicate {
		t.Fatalf("mixed streams: %+v, %v", mixed, err)
	}
})

var _ = rule("R11 16 clients racing one (pid, iid) get one entry", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	const n = 16
	streams := make([]*Streams, n)
	for i := range streams {
		st, err := NewStreams(redistest.Connect(t, h.url), h.s.Mode())
		if err != nil {
			t.Fatal(err)
		}
		streams[i] = st
	}
	var wg sync.WaitGroup
	res := make([]AddResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i, st := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res[i], errs[i] = st.add1(h.ctx, AddRequest{Stream: s, PID: "p1", IID: "concurrent", Fields: []string{"client", "x"}})
		}()
	}
	close(start)
	wg.Wait()
	firsts := 0
	for i := range res {
		if errs[i] != nil || res[i].ID != res[0].ID {
			t.Fatalf("client %d: %+v, %v (client 0: %s)", i, res[i], errs[i], res[0].ID)
		}
		if !res[i].Duplicate {
			firsts++
		}
	}
	if firsts != 1 || h.xlen(t, s) != 1 {
		t.Fatalf("%d clients saw a first add, XLEN %d; want 1 and 1", firsts, h.xlen(t, s))
	}
	h.wantCounters(t, s, counters{pids: 1, tracked: 1, added: 1, dups: n - 1})
})

var _ = rule("R12 a key of another type is WRONGTYPE everywhere", func(t *testing.T, h *streamHarness) {
	k := h.key("str")
	h.rdb.Set(h.ctx, k, "x", 0)
	const wt = "WRONGTYPE Operation against a key holding the wrong kind of value"
	_, err := h.s.add1(h.ctx, AddRequest{Stream: k, PID: "p", IID: "i", Fields: []string{"f", "v"}})
	wantErr(t, err, exit.Data, wt)
	_, err = h.s.AddBatch(h.ctx, reqs(k, "p", "i%d", 1, 2))
	if !isBatchErr(err, 0) {
		t.Fatalf("batch: %v", err)
	}
	_, err = h.s.Info(h.ctx, k)
	wantErr(t, err, exit.Data, wt)
	_, err = h.s.CfgSet(h.ctx, k, 5, 0)
	wantErr(t, err, exit.Data, wt)
	_, err = h.s.ClearTracking(h.ctx, k, "")
	wantErr(t, err, exit.Data, wt)
	if v := h.rdb.Get(h.ctx, k).Val(); v != "x" {
		t.Fatalf("the string became %q", v)
	}
	_, err = h.s.add1(h.ctx, AddRequest{Stream: h.key("s"), PID: "", IID: "i", Fields: []string{"f", "v"}})
	wantErr(t, err, exit.Usage, "ERR syntax error, IDMP requires a non-empty producer ID")
})

var _ = rule("R13 a deleted and recreated stream remembers nothing", func(t *testing.T, h *streamHarness) {
	other := redistest.Connect(t, h.url).Client() // another client deletes and recreates
	recreate := map[string]func(s string){
		"by us":           func(s string) { other.Del(h.ctx, s) },
		"by a plain XADD": func(s string) { other.Del(h.ctx, s); h.plainXAdd(t, s) },
		"by 5 plain XADDs": func(s string) {
			other.Del(h.ctx, s)
			for range 5 {
				h.plainXAdd(t, s)
			}
		},
		"empty, MKSTREAM": func(s string) { other.Del(h.ctx, s); other.XGroupCreateMkStream(h.ctx, s, "g", "$") },
		"in one MULTI": func(s string) {
			other.TxPipelined(h.ctx, func(p redis.Pipeliner) error {
				p.Del(h.ctx, s)
				p.XAdd(h.ctx, &redis.XAddArgs{Stream: s, Values: []string{"a", "b"}})
				return nil
			})
		},
	}
	for name, re := range recreate {
		s := h.key(name)
		id1 := h.mustNew(t, s, "p1", "req-1")
		h.mustNew(t, s, "p1", "req-2")
		h.mustDup(t, s, "p1", "req-1", id1)
		h.cfgset(t, s, 50, 7)
		re(s)
		// A stream recreated within the same millisecond may hand out id1 again:
		// the duplicate flag is what tells.
		if r := h.add(t, s, "p1", "req-1"); r.Duplicate {
			t.Fatalf("%s: req-1 deduped against the deleted stream: %+v", name, r)
		}
		if i := h.info(t, s); i.IDMPDuration != 100 || i.IDMPMaxSize != 100 {
			t.Fatalf("%s: settings %d/%d survived, want the defaults", name, i.IDMPDuration, i.IDMPMaxSize)
		}
		h.wantCounters(t, s, counters{pids: 1, tracked: 1, added: 1})
	}
})

var _ = rule("Info reports the stream and the server clock", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	first := h.plainXAdd(t, s)
	h.mustNew(t, s, "p1", "a")
	last := h.mustNew(t, s, "p1", "b")
	i := h.info(t, s)
	if i.Stream != s || i.Length != 3 || i.FirstID != first || i.LastID != last || i.LastGeneratedID != last || i.EntriesAdded != 3 {
		t.Fatalf("info = %+v", i)
	}
	if d := time.Since(time.UnixMilli(i.ServerTimeMS)); d > time.Minute || d < -time.Minute || i.LastIDAheadOfClock(1000) {
		t.Fatalf("server time %d is %v from ours", i.ServerTimeMS, d)
	}
	if h.emulated() && (len(i.PIDs) != 1 || i.PIDs[0] != PIDTracking{"p1", 2}) {
		t.Fatalf("per-pid counts = %+v", i.PIDs)
	}
	_, err := h.s.Info(h.ctx, h.key("missing"))
	wantErr(t, err, exit.NotFound, "ERR no such key")
})

var _ = rule("ClearTracking forgets iids, keeps settings and counters", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	a := h.mustNew(t, s, "p1", "a")
	h.mustNew(t, s, "p1", "b")
	h.mustNew(t, s, "p2", "c")
	h.mustDup(t, s, "p1", "a", a)
	h.cfgset(t, s, 300, 0)
	a = h.mustNew(t, s, "p1", "a")
	h.mustNew(t, s, "p1", "b")
	c := h.mustNew(t, s, "p2", "c")
	n, err := h.s.ClearTracking(h.ctx, s, "p1")
	if h.emulated() {
		if err != nil || n != 2 {
			t.Fatalf("clear p1: %d, %v", n, err)
		}
		h.wantCounters(t, s, counters{pids: 1, tracked: 1, added: 6, dups: 1})
		h.mustDup(t, s, "p2", "c", c)
		a = h.mustNew(t, s, "p1", "a")
	} else {
		wantErr(t, err, exit.Usage, "can only clear")
	}
	n, err = h.s.ClearTracking(h.ctx, s, "")
	if want := map[bool]int64{true: 2, false: 3}[h.emulated()]; err != nil || n != want {
		t.Fatalf("clear all: %d, %v", n, err)
	}
	i := h.info(t, s)
	if i.PIDsTracked != 0 || i.IIDsTracked != 0 || i.IDMPDuration != 300 || i.IIDsDuplicates < 1 || i.IIDsAdded < 6 {
		t.Fatalf("after clearing: %+v", i)
	}
	if id := h.mustNew(t, s, "p1", "a"); id == a {
		t.Fatal("a deduped after clearing")
	}
	_, err = h.s.ClearTracking(h.ctx, h.key("missing"), "")
	wantErr(t, err, exit.NotFound, "ERR no such key")
})

var _ = rule("AddBatch stops at a failing request", func(t *testing.T, h *streamHarness) {
	s := h.key("s")
	batch := reqs(s, "p1", "req-%d", 1, 2, 3, 4)
	batch[2].IID = ""
	res, err := h.s.AddBatch(h.ctx, batch)
	if len(res) != 2 || !isBatchErr(err, 2) || exit.Code(err) != exit.Usage || h.xlen(t, s) != 2 {
		t.Fatalf("invalid 3rd request: %d results, %v, XLEN %d", len(res), err, h.xlen(t, s))
	}
	batch = reqs(s, "p1", "req-%d", 5, 6, 7)
	batch[1].MinID = "not-an-id"
	res, err = h.s.AddBatch(h.ctx, batch)
	if len(res) != 1 || !isBatchErr(err, 1) {
		t.Fatalf("bad MINID: %d results, %v", len(res), err)
	}
	wantErr(t, err, exit.Internal, "ERR Invalid stream ID")
	if h.emulated() && h.xlen(t, s) != 3 {
		t.Fatalf("XLEN = %d, want 3: the emulated batch stops at the failure", h.xlen(t, s))
	}
	missing := h.key("missing")
	batch = reqs(missing, "p1", "req-%d", 1, 2)
	batch[0].NoMkStream, batch[1].NoMkStream = true, true
	_, err = h.s.AddBatch(h.ctx, batch)
	if !isBatchErr(err, 0) || exit.Code(err) != exit.NotFound {
		t.Fatalf("NOMKSTREAM batch: %v", err)
	}
})
