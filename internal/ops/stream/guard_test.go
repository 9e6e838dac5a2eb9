package stream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// The upgrade guard (guard.go) on Redis 8.6.3: emulated state written on
// the native server (--mode emulated, as a fleet's state is after an
// upgrade), then adds in auto mode.

type guardEnv struct {
	ctx      context.Context
	srv      *redistest.Server
	conn     *redisconn.Conn
	emu, nat *Streams
	h        *streamHarness
}

func newGuardEnv(t *testing.T) *guardEnv {
	t.Helper()
	srv := redistest.NewNative(t)
	conn := redistest.Connect(t, srv.URL)
	emu, err := NewStreams(conn, ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	nat, err := NewStreams(conn, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	return &guardEnv{ctx: context.Background(), srv: srv, conn: conn, emu: emu, nat: nat, h: newHarness(t, nat, srv.URL)}
}

func (g *guardEnv) add(t *testing.T, s *Streams, req AddRequest) AddResult {
	t.Helper()
	r, err := s.add1(g.ctx, req)
	if err != nil {
		t.Fatalf("add %+v: %v", req, err)
	}
	return r
}

func TestGuardRetryAfterUpgradeIsADuplicate(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("orders")
	first := g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	again := g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "2"}})
	if !again.Duplicate || again.ID != first.ID || !again.OriginalExists || again.Mode != ModeNative {
		t.Fatalf("retry in auto mode = %+v, want a duplicate of %s", again, first.ID)
	}
	if n := g.h.xlen(t, s); n != 1 {
		t.Fatalf("XLEN %d, want 1", n)
	}
	// A new iid goes natively, and dedupes natively.
	n1 := g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "i2", Fields: []string{"a", "3"}})
	n2 := g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "i2", Fields: []string{"a", "3"}})
	if n1.Duplicate || !n2.Duplicate || n2.ID != n1.ID {
		t.Fatalf("native adds %+v %+v", n1, n2)
	}
	// Counters: the emulated state's duplicate counts on its side, the
	// native add and duplicate on the server's.
	xi := g.conn.Client().XInfoStream(g.ctx, s).Val()
	if xi.IIDsAdded != 1 || xi.IIDsDuplicates != 1 || xi.IIDsTracked != 1 {
		t.Fatalf("native counters %+v", xi)
	}
	ei, err := g.emu.Info(g.ctx, s)
	if err != nil || ei.IIDsAdded != 1 || ei.IIDsDuplicates != 1 {
		t.Fatalf("emulated counters %+v %v", ei, err)
	}
	if n := g.h.xlen(t, s); n != 2 {
		t.Fatalf("XLEN %d, want 2", n)
	}
}

func TestGuardAutoIIDs(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("auto")
	first := g.add(t, g.emu, AddRequest{Stream: s, PID: "p", Auto: true, Fields: []string{"a", "1", "b", "2"}})
	// The same pairs in another order: the same message (R3).
	again := g.add(t, g.nat, AddRequest{Stream: s, PID: "p", Auto: true, Fields: []string{"b", "2", "a", "1"}})
	if !again.Duplicate || again.ID != first.ID {
		t.Fatalf("auto retry = %+v, want a duplicate of %s", again, first.ID)
	}
	other := g.add(t, g.nat, AddRequest{Stream: s, PID: "p", Auto: true, Fields: []string{"a", "1"}})
	if other.Duplicate {
		t.Fatalf("other content = %+v, want new", other)
	}
	// An explicit iid never matches the content hash of another add.
	if r := g.add(t, g.nat, AddRequest{Stream: s, PID: "q", IID: first.IID, Fields: []string{"a", "1"}}); r.Duplicate {
		t.Fatalf("other producer: %+v", r)
	}
	if n := g.h.xlen(t, s); n != 3 {
		t.Fatalf("XLEN %d, want 3", n)
	}
}

func TestGuardBatchRunAndRepeats(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("batch")
	old, err := g.emu.AddBatch(g.ctx, reqs(s, "p", "i%d", 1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.nat.AddBatch(g.ctx, reqs(s, "p", "i%d", 2, 4, 1, 4, 5, 3))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		dup bool
		id  string
	}{{true, old[1].ID}, {false, ""}, {true, old[0].ID}, {true, res[1].ID}, {false, ""}, {true, old[2].ID}}
	for i, w := range want {
		if res[i].Duplicate != w.dup || w.id != "" && res[i].ID != w.id {
			t.Fatalf("item %d = %+v, want dup %v of %q", i, res[i], w.dup, w.id)
		}
	}
	if n := g.h.xlen(t, s); n != 5 {
		t.Fatalf("XLEN %d, want 5", n)
	}
}

func TestGuardForgetsExpiredAndStaleState(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("exp")
	g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	if _, err := g.emu.CfgSet(g.ctx, s, 1, 0); err != nil {
		t.Fatal(err)
	}
	first := g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i2", Fields: []string{"a", "1"}})
	if r := g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "i2", Fields: []string{"a", "1"}}); !r.Duplicate || r.ID != first.ID {
		t.Fatalf("within DURATION: %+v", r)
	}
	time.Sleep(1100 * time.Millisecond)
	if r := g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "i2", Fields: []string{"a", "1"}}); r.Duplicate {
		t.Fatalf("past DURATION 1: %+v, want a new entry", r)
	}

	// A stream deleted and created again: its old state counts for
	// nothing (R13).
	d := g.h.key("del")
	g.add(t, g.emu, AddRequest{Stream: d, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	g.conn.Client().Del(g.ctx, d)
	g.h.plainXAdd(t, d)
	g.h.plainXAdd(t, d)
	if r := g.add(t, g.nat, AddRequest{Stream: d, PID: "p", IID: "i1", Fields: []string{"a", "1"}}); r.Duplicate {
		t.Fatalf("recreated stream: %+v, want a new entry", r)
	}
}

func TestGuardCarriesSettingsWhileNativeTrackingIsEmpty(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("cfg")
	g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	if _, err := g.emu.CfgSet(g.ctx, s, 3600, 50); err != nil {
		t.Fatal(err)
	}
	g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "i2", Fields: []string{"a", "1"}})
	// Native settings equal to the server's defaults (100 s, 100) may be
	// an operator's: never narrowed, each the wider (issue 30 item 6).
	xi := g.conn.Client().XInfoStream(g.ctx, s).Val()
	if xi.IDMPDuration != 3600 || xi.IDMPMaxSize != 100 || xi.IIDsTracked != 1 {
		t.Fatalf("native settings %d/%d tracked %d, want 3600/100 and i2", xi.IDMPDuration, xi.IDMPMaxSize, xi.IIDsTracked)
	}
	// Once native tracking holds iids, a change would clear them: the
	// guard leaves the settings alone.
	if _, err := g.emu.CfgSet(g.ctx, s, 7200, 0); err != nil {
		t.Fatal(err)
	}
	g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "i3", Fields: []string{"a", "1"}})
	xi = g.conn.Client().XInfoStream(g.ctx, s).Val()
	if xi.IDMPDuration != 3600 || xi.IIDsTracked != 2 {
		t.Fatalf("native settings %d tracked %d, want 3600 and 2 iids", xi.IDMPDuration, xi.IIDsTracked)
	}
}

func TestGuardDurableAdd(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	g.srv.Do("CONFIG", "SET", "appendonly", "yes")
	s := g.h.key("durable")
	first := g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	var r AddResult
	var err error
	for range 50 { // WAITAOF needs the AOF rewrite CONFIG SET started to finish
		r, _, err = g.nat.addDurably(g.ctx, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}},
			redisconn.Durability{AOF: true, Timeout: time.Second})
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || !r.Duplicate || r.ID != first.ID {
		t.Fatalf("durable retry = %+v, %v", r, err)
	}
	if n := g.h.xlen(t, s); n != 1 {
		t.Fatalf("XLEN %d, want 1", n)
	}
}

func TestGuardWithoutScripts(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	if _, err := g.srv.Do("ACL", "SETUSER", "noeval", "on", ">pw", "~*", "&*", "+@all", "-@scripting"); err != nil {
		t.Fatal(err)
	}
	url := strings.Replace(g.srv.URL, "unix://", "unix://noeval:pw@", 1)
	conn := redistest.Connect(t, url)
	// No emulated state: native single adds need no script, exact
	// duplicates, through WATCH.
	nat, err := NewStreams(conn, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	plain := g.h.key("plain")
	a := g.add(t, nat, AddRequest{Stream: plain, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	b := g.add(t, nat, AddRequest{Stream: plain, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	if a.Duplicate || !b.Duplicate || a.ID != b.ID {
		t.Fatalf("without scripts: %+v %+v", a, b)
	}
	// Emulated state: refused with nothing written, whatever the iid.
	s := g.h.key("held")
	g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	for _, iid := range []string{"i1", "new"} {
		_, err = nat.add1(g.ctx, AddRequest{Stream: s, PID: "p", IID: iid, Fields: []string{"a", "1"}})
		wantErr(t, err, exit.Config, "holds emulated IDMP state")
	}
	var e *exit.Error
	if !errors.As(err, &e) || !strings.Contains(e.Hint, "idmpctl migrate") {
		t.Fatalf("hint of %v", err)
	}
	if n := g.h.xlen(t, s); n != 1 {
		t.Fatalf("XLEN %d, want 1", n)
	}
}

func TestGuardScriptRefusesBadCalls(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("bad")
	g.conn.Client().Set(g.ctx, s, "x", 0)
	_, err := g.nat.add1(g.ctx, AddRequest{Stream: s, PID: "p", IID: "i", Fields: []string{"a", "1"}})
	wantErr(t, err, exit.Data, "WRONGTYPE")
	// A state key of another type: refused before anything is written.
	w := g.h.key("{w}")
	l, _ := idmp.StateKeys(w, false)
	g.conn.Client().Set(g.ctx, l.PIDs, "x", 0)
	_, err = g.nat.add1(g.ctx, AddRequest{Stream: w, PID: "p", IID: "i", Fields: []string{"a", "1"}})
	wantErr(t, err, exit.Data, "WRONGTYPE")
	if n, _ := g.conn.Client().Exists(g.ctx, w).Result(); n != 0 {
		t.Fatalf("the stream was created")
	}
	// NOMKSTREAM on a missing stream.
	_, err = g.nat.add1(g.ctx, AddRequest{Stream: g.h.key("none"), PID: "p", IID: "i", NoMkStream: true, Fields: []string{"a", "1"}})
	wantErr(t, err, exit.NotFound, "stream does not exist")
}

func TestGuardNativeBatch(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("{b}")
	if _, err := g.emu.AddBatch(g.ctx, reqs(s, "p", "i%d", 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	tmpl := AddRequest{Stream: s, PID: "p"}
	var got []BatchResult
	sum, err := g.nat.RunBatch(g.ctx, BatchSpec{Template: tmpl, ID: "b1", Chunk: 2}, &iidLines{lines: iids("i", 5), tmpl: tmpl},
		func(r BatchResult) error { got = append(got, r); return nil })
	if err != nil || sum.Added != 2 || sum.Duplicates != 3 {
		t.Fatalf("batch: %+v, %v", sum, err)
	}
	if n := g.h.xlen(t, s); n != 5 {
		t.Fatalf("XLEN %d, want 5", n)
	}
	// Without scripting rights: refused (77), nothing written, no progress.
	if _, err := g.srv.Do("ACL", "SETUSER", "noeval", "on", ">pw", "~*", "&*", "+@all", "-@scripting"); err != nil {
		t.Fatal(err)
	}
	nat, err := NewStreams(redistest.Connect(t, strings.Replace(g.srv.URL, "unix://", "unix://noeval:pw@", 1)), ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	_, err = nat.RunBatch(g.ctx, BatchSpec{Template: tmpl, ID: "b2", Chunk: 2}, &iidLines{lines: iids("j", 3), tmpl: tmpl},
		func(BatchResult) error { return nil })
	wantErr(t, err, exit.Permission, "NOPERM")
	l, _ := idmp.StateKeys(s, false)
	if n := g.h.xlen(t, s); n != 5 || g.conn.Client().Exists(g.ctx, l.Batch("p", "b2")).Val() != 0 {
		t.Fatalf("XLEN %d after a refused batch, or its progress record written", n)
	}
}

// Settings an operator gave the stream natively (cfgset, which clears
// native tracking) are not overwritten by the emulated ones at the next add.
func TestGuardKeepsNativeSettingsSetByHand(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("hand")
	g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	if _, err := g.nat.CfgSet(g.ctx, s, 500, 0); err != nil {
		t.Fatal(err)
	}
	for _, iid := range []string{"i1", "i2"} {
		g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: iid, Fields: []string{"a", "1"}})
		if xi := g.conn.Client().XInfoStream(g.ctx, s).Val(); xi.IDMPDuration != 500 {
			t.Fatalf("after %s: native IDMP-DURATION %d, want the 500 set by hand", iid, xi.IDMPDuration)
		}
	}
}

// A user who may neither run scripts nor write is told so (77): the
// WATCH path failed before its transaction and read replies that never
// came (a panic).
func TestGuardReaderIsRefused(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	if _, err := g.srv.Do("ACL", "SETUSER", "reader", "on", ">pw", "~*", "&*", "+@read", "+@connection"); err != nil {
		t.Fatal(err)
	}
	nat, err := NewStreams(redistest.Connect(t, strings.Replace(g.srv.URL, "unix://", "unix://reader:pw@", 1)), ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	_, err = nat.add1(g.ctx, AddRequest{Stream: g.h.key("r"), PID: "p", IID: "i", Fields: []string{"a", "1"}})
	wantErr(t, err, exit.Permission, "NOPERM")
}

// A user who may run scripts, but not a command the guard runs, is refused
// for that command (77), nothing written: not told that it may not run
// scripts (78, "grant EVALSHA and EVAL"), as a single add was.
func TestGuardNamesTheCommandRefused(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("held")
	g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	for _, cmd := range []string{"xinfo", "xadd"} {
		if _, err := g.srv.Do("ACL", "SETUSER", "no-"+cmd, "on", ">pw", "~*", "&*", "+@all", "-"+cmd); err != nil {
			t.Fatal(err)
		}
		nat, err := NewStreams(redistest.Connect(t, strings.Replace(g.srv.URL, "unix://", "unix://no-"+cmd+":pw@", 1)), ModeAuto)
		if err != nil {
			t.Fatal(err)
		}
		_, err = nat.add1(g.ctx, AddRequest{Stream: s, PID: "p", IID: "new", Fields: []string{"a", "1"}})
		wantErr(t, err, exit.Permission, "run the "+strings.ToUpper(cmd)+" command")
	}
	if n := g.h.xlen(t, s); n != 1 {
		t.Fatalf("XLEN %d, want 1", n)
	}
}

// A native retry on a stream whose last ID was set back (XTRIM, then
// XSETID below the tracked original) is still told a duplicate: the
// original's ID is above the last ID, but the add did not make it.
func TestGuardTellsDuplicateAfterLastIDSetBack(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("setback")
	rdb := g.conn.Client()
	first := g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "a", Fields: []string{"f", "1"}})
	if first.Duplicate {
		t.Fatalf("first add: %+v", first)
	}
	rdb.XTrimMaxLen(g.ctx, s, 0)
	if err := rdb.Do(g.ctx, "XSETID", s, "0-1").Err(); err != nil {
		t.Fatal(err)
	}
	again := g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "a", Fields: []string{"f", "1"}})
	if !again.Duplicate || again.ID != first.ID {
		t.Fatalf("retry after XSETID back = %+v, want a duplicate of %s", again, first.ID)
	}
	if fresh := g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "b", Fields: []string{"f", "2"}}); fresh.Duplicate {
		t.Fatalf("a new iid after XSETID back = %+v, want a new entry", fresh)
	}
}

// A guarded batch chunk (the stream holds emulated state) on a server out
// of memory is the server's OOM (69, nothing written), as every other
// path says it: not the EXECABORT of the MULTI it was refused in (70).
func TestGuardNativeBatchOutOfMemory(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("{oom}")
	if _, err := g.emu.AddBatch(g.ctx, reqs(s, "p", "i%d", 1, 2)); err != nil {
		t.Fatal(err)
	}
	g.srv.Do("CONFIG", "SET", "maxmemory", "1")
	tmpl := AddRequest{Stream: s, PID: "p"}
	_, err := g.nat.RunBatch(g.ctx, BatchSpec{Template: tmpl, ID: "b1", Chunk: 2}, &iidLines{lines: iids("i", 4), tmpl: tmpl},
		func(BatchResult) error { return nil })
	g.srv.Do("CONFIG", "SET", "maxmemory", "0")
	wantErr(t, err, exit.Unavailable, "OOM")
	l, _ := idmp.StateKeys(s, false)
	if n := g.h.xlen(t, s); n != 2 || g.conn.Client().Exists(g.ctx, l.Batch("p", "b1")).Val() != 0 {
		t.Fatalf("XLEN %d after a refused batch, or its progress record written", n)
	}
}

// A state with a part missing (its settings hash evicted under an
// allkeys-* policy, or deleted by hand) still dedupes what is left
// (docs/emulated.md): a native batch is guarded by the pids set too, as a
// single add is, and adds none of the iids again.
func TestGuardNativeBatchStateWithoutItsSettingsHash(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("{nometa}")
	if _, err := g.emu.AddBatch(g.ctx, reqs(s, "p", "i%d", 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	l, _ := idmp.StateKeys(s, false)
	g.conn.Client().Del(g.ctx, l.Meta)
	if r := g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"f", "v"}}); !r.Duplicate {
		t.Fatalf("single add: %+v", r)
	}
	tmpl := AddRequest{Stream: s, PID: "p"}
	sum, err := g.nat.RunBatch(g.ctx, BatchSpec{Template: tmpl, ID: "b1", Chunk: 2}, &iidLines{lines: iids("i", 4), tmpl: tmpl},
		func(BatchResult) error { return nil })
	if err != nil || sum.Added != 1 || sum.Duplicates != 3 {
		t.Fatalf("batch: %+v, %v", sum, err)
	}
	if n := g.h.xlen(t, s); n != 4 {
		t.Fatalf("XLEN %d, want 4", n)
	}
}

// Emulated state outlives its DURATION as keys (they have no TTL: a
// script removes expired iids), so a user without scripting rights is
// refused after the DURATION too: the hint must not promise that waiting
// helps. A migration by a user who may run scripts drops the expired
// state, and the adds go on.
func TestGuardWithoutScriptsAfterTheStateExpired(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	if _, err := g.srv.Do("ACL", "SETUSER", "noeval", "on", ">pw", "~*", "&*", "+@all", "-@scripting"); err != nil {
		t.Fatal(err)
	}
	nat, err := NewStreams(redistest.Connect(t, strings.Replace(g.srv.URL, "unix://", "unix://noeval:pw@", 1)), ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	s := g.h.key("expired")
	g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i0", Fields: []string{"a", "0"}})
	if _, err := g.emu.CfgSet(g.ctx, s, 1, 0); err != nil {
		t.Fatal(err)
	}
	g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	time.Sleep(1100 * time.Millisecond)
	_, err = nat.add1(g.ctx, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	wantErr(t, err, exit.Config, "holds emulated IDMP state")
	var e *exit.Error
	if !errors.As(err, &e) || strings.Contains(e.Hint, "wait until") || !strings.Contains(e.Hint, "idmpctl migrate") {
		t.Fatalf("hint of a refusal after the DURATION: %q", e.Hint)
	}
	if res, err := g.nat.Migrate(g.ctx, s, false); err != nil || res.Status != "done" {
		t.Fatalf("migrate: %+v %v", res, err)
	}
	if r, err := nat.add1(g.ctx, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}}); err != nil || r.Duplicate {
		t.Fatalf("after the migration: %+v %v", r, err)
	}
}
