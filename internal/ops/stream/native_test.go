package stream

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Native-only behaviour beyond the shared rules. They run on a Redis 8.6
// server of their own (redistest.NewNative): the server under test when it
// has IDMP, the cached 8.6.3 build beside it otherwise (make test fails
// rather than skips without one).

func nativeHarness(t *testing.T) *streamHarness {
	t.Helper()
	srv := redistest.NewNative(t)
	conn := redistest.Connect(t, srv.URL)
	if !redistest.Caps(t, conn).NativeIDMP {
		t.Fatalf("%s %s from %s has no native IDMP", redistest.Caps(t, conn).Product, redistest.Caps(t, conn).Version, redistest.NativeBinary())
	}
	s, err := NewStreams(conn, ModeAuto)
	if err != nil || s.Mode() != ModeNative {
		t.Fatalf("auto on a native server: %v, %v", s, err)
	}
	return newHarness(t, s, srv.URL)
}

// xcfgsetCalls reads how many XCFGSET the server has run.
func xcfgsetCalls(t *testing.T, h *streamHarness) int64 {
	t.Helper()
	stats := redisconn.ParseInfo(h.rdb.Info(h.ctx, "commandstats").Val())["cmdstat_xcfgset"]
	for _, kv := range strings.Split(stats, ",") {
		if v, ok := strings.CutPrefix(kv, "calls="); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func TestNativeCfgSetSameValuesSendsNothing(t *testing.T) {
	t.Parallel()
	h := nativeHarness(t)
	s := h.key("s")
	h.mustNew(t, s, "p1", "a")
	before := xcfgsetCalls(t, h)
	if r := h.cfgset(t, s, 100, 100); r.Changed {
		t.Fatalf("same values: %+v", r)
	}
	if after := xcfgsetCalls(t, h); after != before {
		t.Fatalf("XCFGSET calls %d -> %d for an unchanged setting", before, after)
	}
	if r := h.cfgset(t, s, 60, 0); !r.Changed || r.ClearedIIDs != 1 || xcfgsetCalls(t, h) != before+1 {
		t.Fatalf("a change: %+v", r)
	}
}

// TestNativeAndEmulatedStateAreNamed: inspect never mixes modes silently.
func TestNativeAndEmulatedStateAreNamed(t *testing.T) {
	t.Parallel()
	h := nativeHarness(t)
	emu, err := NewStreams(h.s.Conn, ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	s := h.key("s")
	if _, err := emu.add1(h.ctx, AddRequest{Stream: s, PID: "p", IID: "e", Fields: []string{"f", "v"}}); err != nil {
		t.Fatal(err)
	}
	if i := h.info(t, s); i.Mode != "native" || i.OtherMode != "emulated" {
		t.Fatalf("native view of emulated state: %+v", i)
	}
	h.mustNew(t, s, "p", "n")
	if i, err := emu.Info(h.ctx, s); err != nil || i.Mode != "emulated" || i.OtherMode != "native" {
		t.Fatalf("emulated view of native state: %+v, %v", i, err)
	}
}

// TestNativeBatchCountsOnlyWrittenAdds: on a server with IDMP, a batch
// whose stream is a key of another type, or missing under NOMKSTREAM:
// nothing is written, and the progress record counts nothing (the stream
// and the record are WATCHed and checked before each chunk's MULTI).
// Before, the record's HSET ran in the same EXEC as the failed adds.
func TestNativeBatchCountsOnlyWrittenAdds(t *testing.T) {
	t.Parallel()
	h := nativeHarness(t)
	ctx := context.Background()
	for _, nomk := range []bool{false, true} {
		stream := h.key("s" + strconv.FormatBool(nomk))
		if !nomk {
			h.rdb.Set(ctx, stream, "x", 0)
		}
		tmpl := AddRequest{Stream: stream, PID: "p", NoMkStream: nomk}
		_, err := h.s.RunBatch(ctx, BatchSpec{Template: tmpl, ID: "b", Chunk: 10, Window: 1},
			&iidLines{lines: iids("i", 50), tmpl: tmpl}, func(BatchResult) error { return nil })
		want := exit.Data
		if nomk {
			want = exit.NotFound
		}
		if exit.Code(err) != want {
			t.Errorf("NOMKSTREAM %v: %v, want exit %d", nomk, err, want)
		}
		l, _ := idmp.StateKeys(stream, false)
		if rec := h.rdb.HGetAll(ctx, l.Batch("p", "b")).Val(); len(rec) != 0 {
			t.Errorf("NOMKSTREAM %v: the progress record counts lines that were not written: %v", nomk, rec)
		}
	}
}

// afterCheck runs fn once, on another connection, right after the round
// trip of a native single add's check (its WATCH), before its MULTI.
type afterCheck struct {
	fired atomic.Bool
	fn    func()
}

func (*afterCheck) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*afterCheck) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *afterCheck) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == "watch" }) && !h.fired.Swap(true) {
			h.fn()
		}
		return err
	}
}

// A single add without the one-add script (tx: a user who may not run
// it, forced here by oneRefused) checks the stream's emulated state, then
// adds in a MULTI/EXEC: emulated state written between the two (by an
// emulated writer, for the same iid) aborts the EXEC, and the add is told
// the duplicate it is, once.
func TestNativeSingleAddStateBetweenCheckAndAdd(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{ModeAuto, ModeNative} {
		g := newGuardEnv(t)
		s, err := NewStreams(redistest.Connect(t, g.srv.URL), mode)
		if err != nil {
			t.Fatal(err)
		}
		s.oneRefused = true
		stream := g.h.key("s")
		var first AddResult
		s.Conn.Client().AddHook(&afterCheck{fn: func() {
			first = g.add(t, g.emu, AddRequest{Stream: stream, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
		}})
		r, err := s.add1(g.ctx, AddRequest{Stream: stream, PID: "p", IID: "i1", Fields: []string{"a", "2"}})
		if err != nil || !r.Duplicate || r.ID != first.ID || g.h.xlen(t, stream) != 1 {
			t.Fatalf("%v: %+v, %v after %+v; XLEN %d", mode, r, err, first, g.h.xlen(t, stream))
		}
	}
}

// A first add by tx (oneRefused, as above) to a stream that another client
// makes, with a duplicate of its own, between the add's check and its
// MULTI is new, not a
// duplicate. Before: the check found no stream, so the MULTI read no
// iids-duplicates before the XADD, and took the other's for this add's.
func TestNativeSingleAddStreamMadeBetweenCheckAndAdd(t *testing.T) {
	t.Parallel()
	h := nativeHarness(t)
	stream := h.key("s")
	other := h.s.Conn.Client()
	conn := redistest.Connect(t, h.url)
	s, err := NewStreams(conn, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	s.oneRefused = true
	conn.Client().AddHook(&afterCheck{fn: func() {
		for range 2 {
			if err := other.XAdd(h.ctx, &redis.XAddArgs{Stream: stream, ProducerID: "q", IdempotentID: "y", Values: []string{"f", "v"}}).Err(); err != nil {
				t.Error(err)
			}
		}
	}})
	r, err := s.add1(h.ctx, AddRequest{Stream: stream, PID: "p", IID: "x", Fields: []string{"a", "1"}})
	if err != nil || r.Duplicate || r.OriginalExists {
		t.Fatalf("a first add: %+v, %v", r, err)
	}
}

// cmdCalls reads the calls of each command from INFO commandstats.
func cmdCalls(t *testing.T, srv *redistest.Server) map[string]int64 {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int64{}
	for k, v := range redisconn.ParseInfo(info) {
		if name, ok := strings.CutPrefix(k, "cmdstat_"); ok {
			n, _ := strconv.ParseInt(strings.TrimPrefix(strings.Split(v, ",")[0], "calls="), 10, 64)
			calls[name] = n
		}
	}
	return calls
}

// unsettled opens streams as a new process does: the server not known yet.
func unsettledStreams(t *testing.T, url string) *Streams {
	t.Helper()
	c, err := redisconn.Open(redisconn.ConnConfig{URL: url, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := NewStreams(c, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A single add, on a server with native IDMP, is HELLO and one script
// call (the upgrade guard's EXISTS and the XADD) in one round trip, as a
// new process makes it: no MULTI, WATCH, INFO or XCFGSET (docs/speed.md).
func TestNativeSingleAddOneCall(t *testing.T) {
	t.Parallel()
	srv := redistest.NewNative(t)
	add := func(iid string, reset bool) AddResult {
		s := unsettledStreams(t, srv.URL)
		if reset {
			if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
				t.Fatal(err)
			}
		}
		r, err := s.add1(context.Background(), AddRequest{Stream: "s", PID: "p", IID: iid, Fields: []string{"f", "v"}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	add("warm", false) // the server caches the script (EVAL after NOSCRIPT)
	first, again := add("a", true), add("a", false)
	if first.Duplicate || !again.Duplicate || !again.OriginalExists || again.ID != first.ID {
		t.Fatalf("outcomes: %+v then %+v", first, again)
	}
	calls := cmdCalls(t, srv)
	for _, c := range []string{"multi", "exec", "watch", "info", "xcfgset", "eval", "script|load"} {
		if calls[c] != 0 {
			t.Errorf("%s: %d calls, want none (%v)", c, calls[c], calls)
		}
	}
	if calls["hello"] != 2 || calls["evalsha"] != 2 || calls["xadd"] != 2 {
		t.Errorf("hello %d, evalsha %d, xadd %d: want one of each an add (%v)", calls["hello"], calls["evalsha"], calls["xadd"], calls)
	}
}

// Where the server has no native IDMP, a single add never loads the
// one-add script: HELLO, in its round trip, stops it before an EVAL.
func TestEmulatedSingleAddLoadsNoNativeScript(t *testing.T) {
	t.Parallel()
	if redistest.AtLeast(8, 6) && !redistest.IsValkey() {
		t.Skip("the server under test has native IDMP")
	}
	srv := redistest.New(t)
	for _, iid := range []string{"a", "b"} {
		s := unsettledStreams(t, srv.URL)
		if r, err := s.add1(context.Background(), AddRequest{Stream: "s", PID: "p", IID: iid, Fields: []string{"f", "v"}}); err != nil || r.Mode != ModeEmulated {
			t.Fatalf("%+v, %v", r, err)
		}
	}
	if v, err := srv.Do("SCRIPT", "EXISTS", nativeOneScript.Script.Hash()); err != nil || !strings.Contains(v, "0") {
		t.Fatalf("SCRIPT EXISTS of the one-add script: %q, %v", v, err)
	}
}
