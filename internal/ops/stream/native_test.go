package stream

import (
	"context"
	"maps"
	"math/rand/v2"
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

// A single add checks the stream's emulated state, then adds in a
// MULTI/EXEC: emulated state written between the two (by an emulated
// writer, for the same iid) aborts the EXEC, and the add is told the
// duplicate it is, once.
func TestNativeSingleAddStateBetweenCheckAndAdd(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{ModeAuto, ModeNative} {
		g := newGuardEnv(t)
		s, err := NewStreams(redistest.Connect(t, g.srv.URL), mode)
		if err != nil {
			t.Fatal(err)
		}
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

// A first add to a stream that another client makes, with a duplicate of
// its own, between the add's check and its MULTI is new, not a
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

// A native single add, as a new process makes it (the server not known
// yet), sends in two round trips HELLO, an empty MULTI/EXEC, WATCH and
// EXISTS, then MULTI, XADD, EXEC: no INFO, no XCFGSET the server would
// reject, no script (docs/speed.md: A single add).
func TestNativeSingleAddCommands(t *testing.T) {
	t.Parallel()
	// Native: the check's round trip (HELLO, an empty MULTI/EXEC, WATCH,
	// EXISTS), then the add's (MULTI, XINFO, XADD, XINFO, EXEC). Emulated
	// (a server without native IDMP): the same check, then the add script.
	t.Run("native", func(t *testing.T) {
		t.Parallel()
		singleAddCommands(t, redistest.NewNative(t), map[string]string{"hello": "1", "multi": "2", "exec": "2", "watch": "1", "exists": "1", "xadd": "1", "xinfo|stream": "2"})
	})
	t.Run("emulated", func(t *testing.T) {
		t.Parallel()
		if redistest.AtLeast(8, 6) && !redistest.IsValkey() {
			t.Skip("the server under test has native IDMP")
		}
		srv := redistest.New(t)
		singleAddCommands(t, srv, nil) // loads the script and the defaults
		// The script's own commands count too: those of the client only.
		singleAddCommands(t, srv, map[string]string{"hello": "1", "multi": "1", "exec": "1", "watch": "1", "evalsha": "1", "eval": "", "discard": "", "unwatch": ""})
	})
}

// singleAddCommands adds one entry to s by a new Conn, and checks the
// commands the server counted (want nil: none checked). Where want has a
// script, only the commands it names count ("": not sent).
func singleAddCommands(t *testing.T, srv *redistest.Server, want map[string]string) {
	c, err := redisconn.Open(redisconn.ConnConfig{URL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := NewStreams(c, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.add1(context.Background(), AddRequest{Stream: "s", PID: "p", IID: "a" + strconv.Itoa(rand.Int()), Fields: []string{"f", "v"}}); err != nil {
		t.Fatal(err)
	}
	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]string{}
	for k, v := range redisconn.ParseInfo(info) {
		if name, ok := strings.CutPrefix(k, "cmdstat_"); ok && name != "config|resetstat" {
			calls[name], _, _ = strings.Cut(strings.TrimPrefix(v, "calls="), ",")
		}
	}
	if _, script := want["evalsha"]; script {
		maps.DeleteFunc(calls, func(k, _ string) bool { _, ok := want[k]; return !ok })
		maps.DeleteFunc(want, func(_, v string) bool { return v == "" })
	}
	if want != nil && !maps.Equal(calls, want) {
		t.Fatalf("commands sent: %v, want %v", calls, want)
	}
}
