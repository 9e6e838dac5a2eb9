package stream

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// bothInfos reads stream with the info script and with plain reads, and
// checks they agree on everything but the clock and NotAtomic.
func bothInfos(t *testing.T, h *streamHarness, stream string) Info {
	t.Helper()
	script, serr := emulated{h.s}.info(context.Background(), stream)
	plain, perr := h.s.emulatedInfoPlain(context.Background(), stream)
	if exit.Code(serr) != exit.Code(perr) || (serr == nil) != (perr == nil) ||
		serr != nil && !strings.Contains(perr.Error(), strings.TrimPrefix(serr.Error(), "inspect ")) {
		t.Fatalf("%s: script: %v (exit %d); plain reads: %v (exit %d)", stream, serr, exit.Code(serr), perr, exit.Code(perr))
	}
	if serr != nil {
		return Info{}
	}
	if !plain.NotAtomic || script.NotAtomic {
		t.Errorf("%s: NotAtomic script %v, plain %v", stream, script.NotAtomic, plain.NotAtomic)
	}
	if d := plain.ServerTimeMS - script.ServerTimeMS; d < 0 || d > 5000 {
		t.Errorf("%s: server times %d and %d", stream, script.ServerTimeMS, plain.ServerTimeMS)
	}
	script.ServerTimeMS, plain.ServerTimeMS, plain.NotAtomic = 0, 0, false
	if !reflect.DeepEqual(script, plain) {
		t.Errorf("%s:\nscript %+v\nplain  %+v", stream, script, plain)
	}
	return plain
}

// The plain-read view of emulated state is the script's view, for every
// state the script tells apart: live and expired iids of several producers,
// no state, a stream deleted and recreated by others, a missing stream, a
// key of another type, and two names of one state.
func TestEmulatedInfoPlainMatchesScript(t *testing.T) {
	t.Parallel()
	h := emulatedHarness(t)
	s := h.key("s")
	for i := range 40 {
		h.mustNew(t, s, "p1", "a"+string(rune('0'+i%10))+string(rune('a'+i/10)))
	}
	h.mustNew(t, s, "p2", "x")
	h.mustNew(t, s, "p\x003", "y")
	h.mustDup(t, s, "p2", "x", h.add(t, s, "p2", "x").ID)
	if got := bothInfos(t, h, s); got.PIDsTracked != 3 || got.IIDsTracked != 42 || got.IIDsAdded != 42 || got.IIDsDuplicates != 2 {
		t.Errorf("live state: %+v", got)
	}

	// Expired iids: a 1 s duration, some added before the wait, some after.
	e := h.key("expiring")
	h.mustNew(t, e, "p", "old-1")
	h.cfgset(t, e, 1, 100)
	for _, iid := range []string{"old-2", "old-3", "old-4"} {
		h.mustNew(t, e, "p", iid)
	}
	h.mustNew(t, e, "q", "old-5")
	time.Sleep(1100 * time.Millisecond)
	h.mustNew(t, e, "p", "new-1")
	if got := bothInfos(t, h, e); got.IIDsTracked != 1 || got.PIDsTracked != 1 {
		t.Errorf("expiring: %+v", got)
	}

	// Out of entry order (XIDMPRECORD of older entries): the list is
	// scanned for its expired prefix, not searched. In write order x, y,
	// z, w: all but y are entries of before the wait, so expire first.
	u := h.key("unordered")
	var old []string
	for range 3 {
		old = append(old, h.rdb.XAdd(h.ctx, &redis.XAddArgs{Stream: u, Values: []string{"f", "v"}}).Val())
	}
	h.mustNew(t, u, "p", "first")
	h.cfgset(t, u, 2, 100)
	record := func(iid, id string) {
		if err := h.s.RecordIID(h.ctx, u, "p", iid, id); err != nil {
			t.Fatal(err)
		}
	}
	record("x", old[0])
	time.Sleep(1200 * time.Millisecond)
	h.mustNew(t, u, "p", "y")
	record("z", old[1])
	record("w", old[2])
	time.Sleep(1000 * time.Millisecond)
	if got := bothInfos(t, h, u); got.PIDsTracked != 1 || got.IIDsTracked != 3 {
		t.Errorf("unordered: %+v", got)
	}

	// No state: a stream never written idempotently.
	n := h.key("plain")
	h.plainXAdd(t, n)
	if got := bothInfos(t, h, n); got.Mode != "none" || got.IDMPDuration != idmp.DefaultDuration {
		t.Errorf("no state: %+v", got)
	}

	// Server-level defaults (CONFIG SET stream-idmp-* through exec): a
	// stream without state shows them, in both views.
	h.rdb.HSet(h.ctx, idmp.DefaultsKey, idmp.ParamDuration, "300", idmp.ParamMaxSize, "50")
	h.s.Defaults = nil
	if got := bothInfos(t, h, n); got.Mode != "none" || got.IDMPDuration != 300 || got.IDMPMaxSize != 50 {
		t.Errorf("no state, server defaults: %+v", got)
	}
	h.rdb.Del(h.ctx, idmp.DefaultsKey)
	h.s.Defaults = nil

	// Deleted and recreated by another client: the old state is stale.
	r := h.key("recreated")
	h.mustNew(t, r, "p", "a")
	h.mustNew(t, r, "p", "b")
	h.rdb.Del(h.ctx, r)
	h.plainXAdd(t, r)
	if got := bothInfos(t, h, r); got.Mode != "none" {
		t.Errorf("recreated: %+v", got)
	}

	// State with parts missing (evicted, deleted by hand): the same
	// inconsistencies named, a producer's name quoted as the script does.
	bad := h.key("broken")
	for _, pid := range []string{"p\x00\"q\"\n", "p2", "p3"} {
		h.mustNew(t, bad, pid, "a")
		h.mustNew(t, bad, pid, "b")
	}
	l, _ := idmp.StateKeys(bad, false)
	h.rdb.LPop(h.ctx, l.Order("p\x00\"q\"\n"))
	h.rdb.SRem(h.ctx, l.PIDs, "p3")
	if got := bothInfos(t, h, bad); !strings.Contains(got.Inconsistent, "names 2 of the 3 producers") ||
		!strings.Contains(got.Inconsistent, `producer "p\000\"q\"\`+"\n"+`" has 2 iids but 1 in its order list`) {
		t.Errorf("inconsistent state: %q", got.Inconsistent)
	}
	h.rdb.Del(h.ctx, l.Meta)
	if got := bothInfos(t, h, bad); got.Mode != "emulated" || !strings.Contains(got.Inconsistent, "the settings hash") {
		t.Errorf("no settings hash: %+v", got)
	}

	// Errors: missing (66), another type (65), two names of one state (65).
	bothInfos(t, h, h.key("missing"))
	h.rdb.Set(h.ctx, h.key("str"), "x", 0)
	bothInfos(t, h, h.key("str"))
	c := h.key("c")
	h.mustNew(t, c, "p", "a")
	h.plainXAdd(t, "{"+c+"}")
	bothInfos(t, h, "{"+c+"}")
}

func TestEmulatedInfoPlainCluster(t *testing.T) {
	conn, _ := redistest.ClusterConn(t)
	s, err := NewStreams(conn, ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, s, "")
	for _, name := range []string{"orders", "payments", "{x}.events"} {
		h.mustNew(t, name, "p1", "a")
		h.mustNew(t, name, "p2", "b")
		if got := bothInfos(t, h, name); got.IIDsTracked != 2 {
			t.Errorf("%s: %+v", name, got)
		}
	}
}

// A user who may not run scripts: Info falls back to plain reads by itself
// and says so; a user who may not read either gets the permission error.
func TestEmulatedInfoWithoutScripting(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{Config: []string{
		"user mon on >mon-pw ~* -@all +@read +@connection +info +time",
		"user blind on >blind-pw ~* -@all +@connection +info +time"}})
	admin := redistest.Connect(t, srv.URL)
	as, _ := NewStreams(admin, ModeEmulated)
	h := newHarness(t, as, srv.URL)
	h.mustNew(t, "orders", "p1", "a")
	h.mustNew(t, "orders", "p2", "b")
	want := h.info(t, "orders")

	// Emulated mode asked for: on a server with IDMP, auto would read
	// the stream's native state (below).
	monConn := redistest.Connect(t, "redis://mon:mon-pw@"+srv.Addr+"/0")
	mon, _ := NewStreams(monConn, ModeEmulated)
	for range 2 { // the second read goes straight to plain reads
		got, err := mon.Info(context.Background(), "orders")
		if err != nil {
			t.Fatal(err)
		}
		if !got.NotAtomic || !mon.plainReads {
			t.Errorf("not marked as plain reads: %+v", got)
		}
		got.NotAtomic, got.ServerTimeMS, want.ServerTimeMS = false, 0, 0
		if !reflect.DeepEqual(got, want) {
			t.Errorf("as mon:\n%+v\nwant\n%+v", got, want)
		}
	}
	for _, mode := range []Mode{ModeAuto, ModeEmulated} {
		blind, _ := NewStreams(redistest.Connect(t, "redis://blind:blind-pw@"+srv.Addr+"/0"), mode)
		if _, err := blind.Info(context.Background(), "orders"); exit.Code(err) != exit.Permission {
			t.Errorf("as blind, %v mode: %v (exit %d), want 77", mode, err, exit.Code(err))
		}
	}
	// Auto mode on a server with IDMP reads the native view (XINFO STREAM,
	// one command: no scripts needed), naming the emulated state beside it.
	if !redistest.Caps(t, admin).NativeIDMP {
		return
	}
	auto, _ := NewStreams(monConn, ModeAuto)
	got, err := auto.Info(context.Background(), "orders")
	if err != nil || got.Mode != "native" || got.NotAtomic || got.OtherMode != "emulated" || got.Length != 2 {
		t.Errorf("as mon, auto mode on a native server: %+v, %v", got, err)
	}
}
