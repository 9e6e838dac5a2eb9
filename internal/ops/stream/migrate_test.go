package stream

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

func TestMigrateMovesLiveIIDsAndKeepsWhatCannotMove(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("m")
	rdb := g.conn.Client()
	g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i0", Fields: []string{"a", "0"}})
	if _, err := g.emu.CfgSet(g.ctx, s, 3600, 50); err != nil { // clears i0
		t.Fatal(err)
	}
	i1 := g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	gone := g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "gone", Fields: []string{"a", "2"}})
	auto := g.add(t, g.emu, AddRequest{Stream: s, PID: "q", Auto: true, Fields: []string{"k", "v", "k", "v"}})
	rdb.XDel(g.ctx, s, gone.ID)
	before := g.h.xlen(t, s)

	dry, err := g.nat.Migrate(g.ctx, s, true)
	if err != nil {
		t.Fatal(err)
	}
	if dry.Status != "kept" || dry.Settings != "set" || dry.Recorded != 2 || len(dry.Kept) != 1 || dry.Kept[0].IID != "gone" || dry.Kept[0].Why != "missing" {
		t.Fatalf("dry run: %+v", dry)
	}
	if xi := rdb.XInfoStream(g.ctx, s).Val(); xi.IIDsTracked != 0 || xi.IDMPDuration != 100 {
		t.Fatalf("the dry run changed the stream: %+v", xi)
	}
	res, err := g.nat.Migrate(g.ctx, s, false)
	if err != nil || res.Recorded != 2 || res.Status != "kept" || res.Settings != "set" {
		t.Fatalf("migrate: %+v %v", res, err)
	}
	// The server's defaults (100 s, 100) are never narrowed: 3600 s, 100.
	xi := rdb.XInfoStream(g.ctx, s).Val()
	if xi.IDMPDuration != 3600 || xi.IDMPMaxSize != 100 || xi.IIDsTracked != 2 || xi.PIDsTracked != 2 {
		t.Fatalf("native after: %+v", xi)
	}
	l, _ := idmp.StateKeys(s, false)
	if ids := rdb.HGetAll(g.ctx, l.IDs("p")).Val(); len(ids) != 1 || ids["gone"] != gone.ID || rdb.Exists(g.ctx, l.IDs("q"), l.Order("q")).Val() != 0 {
		t.Fatalf("emulated state left: p %v, q exists %d", ids, rdb.Exists(g.ctx, l.IDs("q"), l.Order("q")).Val())
	}
	// Retries in every form dedupe: natively (i1, auto) and by the guard
	// (gone, whose entry no longer exists).
	for _, r := range []struct {
		req  AddRequest
		want string
	}{
		{AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}}, i1.ID},
		{AddRequest{Stream: s, PID: "q", Auto: true, Fields: []string{"k", "v", "k", "v"}}, auto.ID},
		{AddRequest{Stream: s, PID: "p", IID: "gone", Fields: []string{"a", "2"}}, gone.ID},
	} {
		if got := g.add(t, g.nat, r.req); !got.Duplicate || got.ID != r.want {
			t.Fatalf("retry %+v = %+v, want a duplicate of %s", r.req, got, r.want)
		}
	}
	if n := g.h.xlen(t, s); n != before {
		t.Fatalf("XLEN %d, want %d", n, before)
	}
	// Again: nothing more moves, the kept iid stays.
	again, err := g.nat.Migrate(g.ctx, s, false)
	if err != nil || again.Recorded != 0 || len(again.Kept) != 1 || again.Kept[0].Why != "missing" {
		t.Fatalf("re-run: %+v %v", again, err)
	}
}

func TestMigrateLeavesStateBesideNativeTracking(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("busy")
	old := g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "i2", Fields: []string{"a", "2"}})
	res, err := g.nat.Migrate(g.ctx, s, false)
	if err != nil || res.Recorded != 0 || res.Status != "kept" || len(res.Kept) != 1 || res.Kept[0].Why != "native" {
		t.Fatalf("migrate: %+v %v", res, err)
	}
	if r := g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}}); !r.Duplicate || r.ID != old.ID {
		t.Fatalf("retry: %+v", r)
	}
}

func TestMigrateDropsExpiredAndFinishes(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("exp")
	g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "x", Fields: []string{"a", "1"}})
	if _, err := g.emu.CfgSet(g.ctx, s, 1, 0); err != nil {
		t.Fatal(err)
	}
	g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	time.Sleep(1100 * time.Millisecond)
	res, err := g.nat.Migrate(g.ctx, s, false)
	if err != nil || res.Status != "done" || res.Dropped != 1 || res.Recorded != 0 {
		t.Fatalf("migrate: %+v %v", res, err)
	}
	l, _ := idmp.StateKeys(s, false)
	if n := g.conn.Client().Exists(g.ctx, l.Meta, l.PIDs, l.IDs("p"), l.Order("p")).Val(); n != 0 {
		t.Fatalf("%d emulated keys left", n)
	}
	// The state's liveness token (a consumer group) went with it.
	if groups := g.conn.Client().XInfoGroups(g.ctx, s).Val(); len(groups) != 0 {
		t.Fatalf("groups left on the stream after the migration: %+v", groups)
	}
	if res, err := g.nat.Migrate(g.ctx, s, false); err != nil || res.Status != "none" {
		t.Fatalf("re-run: %+v %v", res, err)
	}
}

func TestMigrateErrors(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	_, err := g.nat.Migrate(g.ctx, g.h.key("nope"), false)
	wantErr(t, err, exit.NotFound, "stream does not exist")
	k := g.h.key("str")
	g.conn.Client().Set(g.ctx, k, "x", 0)
	_, err = g.nat.Migrate(g.ctx, k, false)
	wantErr(t, err, exit.Data, "WRONGTYPE")

	// A server without XIDMPRECORD: 78, nothing changed.
	old := "/usr/bin/redis-server"
	if _, err := os.Stat(old); err != nil {
		t.Skip("no Redis 7 at /usr/bin/redis-server")
	}
	srv := redistest.NewWith(t, redistest.Options{Unix: true, Binary: old})
	conn := redistest.Connect(t, srv.URL)
	if redistest.Caps(t, conn).NativeIDMP {
		t.Skip("/usr/bin/redis-server has native IDMP")
	}
	emu, _ := NewStreams(conn, ModeEmulated)
	if _, err := emu.add1(g.ctx, AddRequest{Stream: "s", PID: "p", IID: "i", Fields: []string{"a", "1"}}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, emu.CheckMigrate(g.ctx), exit.Config, "has no XIDMPRECORD")
	_, err = emu.Migrate(g.ctx, "s", false)
	wantErr(t, err, exit.Config, "has no XIDMPRECORD")
}

// A user who may not run XIDMPRECORD is told so by the dry run too, not
// promised a migration the real run refuses (77, nothing changed).
func TestMigrateWithoutXIDMPRECORD(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("acl")
	g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	if _, err := g.srv.Do("ACL", "SETUSER", "norec", "on", ">pw", "~*", "&*", "+@all", "-xidmprecord"); err != nil {
		t.Fatal(err)
	}
	nat, err := NewStreams(redistest.Connect(t, strings.Replace(g.srv.URL, "unix://", "unix://norec:pw@", 1)), ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		_, err := nat.Migrate(g.ctx, s, dry)
		wantErr(t, err, exit.Permission, "XIDMPRECORD")
	}
	if xi := g.conn.Client().XInfoStream(g.ctx, s).Val(); xi.IIDsTracked != 0 {
		t.Fatalf("native tracking %d", xi.IIDsTracked)
	}
}

// Out of memory, the migration's first write is refused: nothing moved,
// nothing removed (69), and a later run does it.
func TestMigrateOutOfMemory(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	s := g.h.key("oom")
	old := g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	g.srv.Do("CONFIG", "SET", "maxmemory", "1")
	_, err := g.nat.Migrate(g.ctx, s, false)
	wantErr(t, err, exit.Unavailable, "OOM")
	g.srv.Do("CONFIG", "SET", "maxmemory", "0")
	l, _ := idmp.StateKeys(s, false)
	if xi := g.conn.Client().XInfoStream(g.ctx, s).Val(); xi.IIDsTracked != 0 || g.conn.Client().HGet(g.ctx, l.IDs("p"), "i1").Val() != old.ID {
		t.Fatalf("after a refused migration: native %d iids, emulated state %v", xi.IIDsTracked, g.conn.Client().HGetAll(g.ctx, l.IDs("p")).Val())
	}
	if res, err := g.nat.Migrate(g.ctx, s, false); err != nil || res.Status != "done" || res.Recorded != 1 {
		t.Fatalf("again: %+v %v", res, err)
	}
}

// A stream's native settings that an operator gave it (not the server's
// defaults) are never overwritten by the emulated ones: the migration
// must not shorten a window. Natively wider settings stay, and the iids
// are recorded under them; natively narrower ones stay too, and the iids
// stay emulated (the guard answers them for their whole emulated window).
func TestMigrateNeverNarrowsNativeSettingsSetOnTheStream(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	rdb := g.conn.Client()
	for _, c := range []struct {
		name            string
		native          [2]int64
		settings, why   string
		recorded, nkept int
	}{
		{"wider", [2]int64{3600, 1000}, "native", "", 1, 0},
		{"narrower", [2]int64{10, 1000}, "blocked", "native", 0, 1},
		{"smaller", [2]int64{3600, 5}, "blocked", "native", 0, 1},
	} {
		s := g.h.key(c.name)
		first := g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
		if err := rdb.Do(g.ctx, "XCFGSET", s, "IDMP-DURATION", c.native[0], "IDMP-MAXSIZE", c.native[1]).Err(); err != nil {
			t.Fatal(err)
		}
		for _, dry := range []bool{true, false} {
			res, err := g.nat.Migrate(g.ctx, s, dry)
			if err != nil || res.Settings != c.settings || res.Recorded != int64(c.recorded) || len(res.Kept) != c.nkept ||
				(c.nkept > 0 && res.Kept[0].Why != c.why) {
				t.Fatalf("%s: migrate (dry %v): %+v %v", c.name, dry, res, err)
			}
		}
		xi := rdb.XInfoStream(g.ctx, s).Val()
		if xi.IDMPDuration != c.native[0] || xi.IDMPMaxSize != c.native[1] {
			t.Fatalf("%s: the migration changed the stream's native settings %v to %d/%d", c.name, c.native, xi.IDMPDuration, xi.IDMPMaxSize)
		}
		if r := g.add(t, g.nat, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "2"}}); !r.Duplicate || r.ID != first.ID {
			t.Fatalf("%s: retry: %+v", c.name, r)
		}
	}
}

// A user who may not CONFIG GET migrates a stream whose emulated settings
// (3600/1000, no live iids) are wider than its native ones, which are the
// server's defaults: whether those are defaults (the emulated settings go
// over them) or the stream's own (they stay) is unknown to such a user.
// The migration said 'blocked' and status 'done', and deleted the emulated
// state with its settings, so that the window stayed the defaults' for
// good: the guard of a user who may read CONFIG would have carried 3600/
// 1000 over. It now refuses (NOPERM, exit 77) and changes nothing.
func TestMigrateWithoutConfigGetKeepsEmulatedSettings(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	rdb := g.conn.Client()
	s := g.h.key("noconfig")
	g.add(t, g.emu, AddRequest{Stream: s, PID: "p", IID: "i1", Fields: []string{"a", "1"}})
	if _, err := g.emu.CfgSet(g.ctx, s, 3600, 1000); err != nil { // clears the iid, as XCFGSET does
		t.Fatal(err)
	}
	if err := rdb.Do(g.ctx, "ACL", "SETUSER", "noconfig", "on", ">pw", "~*", "&*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	user := redistest.Connect(t, strings.Replace(g.srv.URL, "://", "://noconfig:pw@", 1))
	nat, err := NewStreams(user, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	l, err := idmp.StateKeys(s, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		res, err := nat.Migrate(g.ctx, s, dry)
		if exit.Code(err) != exit.Permission || !strings.Contains(err.Error(), "CONFIG GET") {
			t.Fatalf("migrate (dry %v) without CONFIG GET: %+v, %v (exit %d); want a refusal, exit 77", dry, res, err, exit.Code(err))
		}
		if n := rdb.Exists(g.ctx, l.Meta).Val(); n != 1 {
			t.Fatalf("migrate (dry %v) deleted the emulated settings", dry)
		}
	}
	res, err := g.nat.Migrate(g.ctx, s, false)
	if err != nil || res.Settings != "set" || res.Status != "done" {
		t.Fatalf("migrate with CONFIG GET: %+v, %v", res, err)
	}
	if xi := rdb.XInfoStream(g.ctx, s).Val(); xi.IDMPDuration != 3600 || xi.IDMPMaxSize != 1000 {
		t.Fatalf("native settings %d/%d, want 3600/1000", xi.IDMPDuration, xi.IDMPMaxSize)
	}
}
