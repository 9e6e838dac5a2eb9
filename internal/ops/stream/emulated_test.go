package stream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Emulated mode only: the state layout, its lifetime, and the places where it
// differs from native IDMP.

func emulatedHarness(t *testing.T) *streamHarness {
	t.Helper()
	conn, srv := redistest.Conn(t)
	s, err := NewStreams(conn, ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	return newHarness(t, s, srv.URL)
}

func TestEmulatedStateLayout(t *testing.T) {
	t.Parallel()
	h := emulatedHarness(t)
	s := h.key("s")
	a := h.mustNew(t, s, "p1", "a")
	b := h.mustNew(t, s, "p1", "b")
	h.mustNew(t, s, "p\x002", "c")
	h.mustDup(t, s, "p1", "a", a)
	l, _ := idmp.StateKeys(s, false)
	if l.Meta != "{"+s+"}:idmp" {
		t.Fatalf("meta key %q", l.Meta)
	}
	meta := h.rdb.HGetAll(h.ctx, l.Meta).Val()
	if meta["stream"] != s || meta["iids-added"] != "3" || meta["iids-duplicates"] != "1" || meta["snap-id"] == "" {
		t.Fatalf("meta = %q", meta)
	}
	if ttl := h.rdb.PTTL(h.ctx, l.Meta).Val(); ttl != -1 {
		t.Fatalf("meta TTL %v, want none: settings must not revert on an idle stream", ttl)
	}
	pids := h.rdb.SMembers(h.ctx, l.PIDs).Val()
	slices.Sort(pids)
	if !slices.Equal(pids, []string{"p\x002", "p1"}) {
		t.Fatalf("pids = %q", pids)
	}
	if ids := h.rdb.HGetAll(h.ctx, l.IDs("p1")).Val(); len(ids) != 2 || ids["a"] != a || ids["b"] != b {
		t.Fatalf("ids:p1 = %v", ids)
	}
	if order := h.rdb.LRange(h.ctx, l.Order("p1"), 0, -1).Val(); !slices.Equal(order, []string{"a", "b"}) {
		t.Fatalf("order:p1 = %q", order)
	}
	if meta["pids"] != "2" {
		t.Fatalf("meta pids = %q, want 2 (the size of the pids set, which tells an evicted set)", meta["pids"])
	}
	// No TTLs: maxmemory-policy volatile-* evicts keys with a TTL first, and
	// would take this state while the stream stays.
	for _, k := range []string{l.PIDs, l.IDs("p1"), l.Order("p1"), l.IDs("p\x002"), l.Order("p\x002")} {
		if ttl := h.rdb.PTTL(h.ctx, k).Val(); ttl != -1 {
			t.Fatalf("%q TTL %v, want none", k, ttl)
		}
	}
}

// TestEmulatedStateExpires: expired iids stop counting at once, and their
// keys go at the next add to the stream (the state has no TTLs: the scripts
// expire it); the meta hash (settings) stays.
func TestEmulatedStateExpires(t *testing.T) {
	t.Parallel()
	h := emulatedHarness(t)
	s := h.key("s")
	h.mustNew(t, s, "p1", "x")
	h.cfgset(t, s, 1, 0)
	h.mustNew(t, s, "p1", "a")
	h.mustNew(t, s, "p2", "b")
	h.wantCounters(t, s, counters{pids: 2, tracked: 2, added: 3})
	time.Sleep(1100 * time.Millisecond)
	h.wantCounters(t, s, counters{pids: 0, tracked: 0, added: 3})
	l, _ := idmp.StateKeys(s, false)
	h.mustNew(t, s, "p3", "c") // drops the idle producers' expired state
	if n := h.rdb.Exists(h.ctx, l.IDs("p1"), l.Order("p1"), l.IDs("p2"), l.Order("p2")).Val(); n != 0 {
		t.Fatalf("%d expired state keys left after the next add", n)
	}
	if pids := h.rdb.SMembers(h.ctx, l.PIDs).Val(); !slices.Equal(pids, []string{"p3"}) {
		t.Fatalf("pids = %q", pids)
	}
	if i := h.info(t, s); i.Mode != "emulated" || i.IDMPDuration != 1 || i.IIDsAdded != 4 || i.Inconsistent != "" {
		t.Fatalf("after expiry: %+v", i)
	}
}

// TestEmulatedDeletedStreamState: a deleted stream's state is dropped by the
// next call on its name, whatever the call.
func TestEmulatedDeletedStreamState(t *testing.T) {
	t.Parallel()
	h := emulatedHarness(t)
	for _, drop := range []func(s string) error{
		func(s string) error { _, err := h.s.ClearTracking(h.ctx, s, ""); return err },
		func(s string) error { _, err := h.s.CfgSet(h.ctx, s, 5, 0); return err },
		func(s string) error {
			_, err := h.s.add1(h.ctx, AddRequest{Stream: s, PID: "p9", IID: "z", Fields: []string{"f", "v"}, NoMkStream: true})
			return err
		},
	} {
		s := h.key(fmt.Sprint("s", h.rdb.Incr(h.ctx, h.key("n")).Val()))
		h.mustNew(t, s, "p1", "a")
		h.cfgset(t, s, 30, 0)
		h.mustNew(t, s, "p2", "b")
		h.rdb.Del(h.ctx, s)
		l, _ := idmp.StateKeys(s, false)
		keys := []string{l.Meta, l.PIDs, l.IDs("p2"), l.Order("p2")}
		if n := h.rdb.Exists(h.ctx, keys...).Val(); n != 4 {
			t.Fatalf("%d of 4 state keys before the next call", n)
		}
		if err := drop(s); exit.Code(err) != exit.NotFound {
			t.Fatalf("call on the deleted stream: %v", err)
		}
		if n := h.rdb.Exists(h.ctx, keys...).Val(); n != 0 {
			t.Fatalf("%d state keys left of a deleted stream", n)
		}
	}
}

// TestEmulatedNameConflict: "c" and "{c}" share state keys; the second one
// is refused rather than deduped against the first.
func TestEmulatedNameConflict(t *testing.T) {
	t.Parallel()
	h := emulatedHarness(t)
	plain := h.key("c")
	h.mustNew(t, plain, "p1", "a")
	_, err := h.s.add1(h.ctx, AddRequest{Stream: "{" + plain + "}", PID: "p1", IID: "a", Fields: []string{"f", "v"}})
	wantErr(t, err, exit.Data, "belongs to stream "+plain)
	if h.rdb.Exists(h.ctx, "{"+plain+"}").Val() != 0 {
		t.Fatal("the refused add wrote an entry")
	}
}

// TestEmulatedAutoIIDRepeatedPair documents a deliberate difference: Redis
// XORs pair hashes, so a pair sent twice cancels out and {a:1, a:1, b:2}
// dedupes against {b:2}; the emulation's sorted-digest hash keeps them apart.
func TestEmulatedAutoIIDRepeatedPair(t *testing.T) {
	t.Parallel()
	h := emulatedHarness(t)
	s := h.key("s")
	for _, f := range [][]string{{"b", "2"}, {"a", "1", "a", "1", "b", "2"}} {
		r, err := h.s.add1(h.ctx, AddRequest{Stream: s, PID: "p", Auto: true, Fields: f})
		if err != nil || r.Duplicate {
			t.Fatalf("%q: %+v, %v; want a new entry", f, r, err)
		}
	}
}

// TestEmulatedPIDSetStaysBounded: pids whose keys have expired leave the set.
func TestEmulatedPIDSetStaysBounded(t *testing.T) {
	t.Parallel()
	h := emulatedHarness(t)
	s := h.key("s")
	l, _ := idmp.StateKeys(s, false)
	for i := range 10 {
		h.mustNew(t, s, fmt.Sprint("gone-", i), "x")
		h.rdb.Del(h.ctx, l.IDs(fmt.Sprint("gone-", i)), l.Order(fmt.Sprint("gone-", i))) // as if expired
	}
	for i := 0; h.rdb.SCard(h.ctx, l.PIDs).Val() > 1; i++ {
		if i == 300 {
			t.Fatalf("pids set still holds %d members", h.rdb.SCard(h.ctx, l.PIDs).Val())
		}
		h.mustNew(t, s, "live", fmt.Sprint(i))
	}
}

// TestEmulatedIDsAheadOfClock: entries stamped in the future are remembered
// until their time + duration (as R6 reads), and Info flags the stream.
func TestEmulatedIDsAheadOfClock(t *testing.T) {
	t.Parallel()
	h := emulatedHarness(t)
	s := h.key("s")
	future := time.Now().Add(24 * time.Hour).UnixMilli()
	h.rdb.XAdd(h.ctx, &redis.XAddArgs{Stream: s, ID: fmt.Sprint(future, "-0"), Values: []string{"f", "v"}})
	h.cfgset(t, s, 1, 0)
	id := h.mustNew(t, s, "p1", "a")
	if id != fmt.Sprint(future, "-1") {
		t.Fatalf("id %s", id)
	}
	time.Sleep(1100 * time.Millisecond)
	h.mustDup(t, s, "p1", "a", id)
	if i := h.info(t, s); !i.LastIDAheadOfClock(1000) || i.IIDsTracked != 1 {
		t.Fatalf("info = %+v", i)
	}
}

// TestEmulatedScriptFlush: scripts are re-sent after SCRIPT FLUSH (EVALSHA
// falls back to EVAL on NOSCRIPT).
func TestEmulatedScriptFlush(t *testing.T) {
	t.Parallel()
	h := emulatedHarness(t)
	s := h.key("s")
	id := h.mustNew(t, s, "p", "a")
	h.rdb.ScriptFlush(h.ctx)
	h.mustDup(t, s, "p", "a", id)
}

func TestEmulatedCluster(t *testing.T) {
	t.Parallel()
	if !redistest.HaveCLI() {
		t.Skip("redis-cli not found: the cluster test needs it")
	}
	c, err := redistest.StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	conn := redistest.Connect(t, c.URL)
	if !redistest.Caps(t, conn).Cluster {
		t.Fatal("cluster not detected")
	}
	s, err := NewStreams(conn, ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, s, c.URL)
	ctx := context.Background()
	for _, name := range []string{"{orders}.s", "orders", "a{b", h.key("x")} {
		id := h.mustNew(t, name, "p1", "a")
		h.mustDup(t, name, "p1", "a", id)
		if r := h.cfgset(t, name, 50, 0); !r.Changed || r.ClearedIIDs != 1 {
			t.Fatalf("%s: cfgset %+v", name, r)
		}
		h.mustNew(t, name, "p1", "a")
		h.wantCounters(t, name, counters{pids: 1, tracked: 1, added: 2, dups: 1})
		l, _ := idmp.StateKeys(name, true)
		slot := conn.Client().ClusterKeySlot(ctx, name).Val()
		for _, k := range []string{l.Meta, l.PIDs, l.IDs("p1"), l.Order("p1")} {
			if ks := conn.Client().ClusterKeySlot(ctx, k).Val(); ks != slot {
				t.Fatalf("%q is in slot %d, the stream %q in %d", k, ks, name, slot)
			}
			if conn.Client().Exists(ctx, k).Val() != 1 {
				t.Fatalf("%q missing", k)
			}
		}
		if n, err := s.ClearTracking(ctx, name, "p1"); err != nil || n != 1 {
			t.Fatalf("%s: clear %d %v", name, n, err)
		}
	}
	_, err = s.add1(ctx, AddRequest{Stream: "a}b", PID: "p", IID: "i", Fields: []string{"f", "v"}})
	wantErr(t, err, exit.Usage, "hash tag")
	// A batch over streams in many slots: one script call per run, in order.
	var batch []AddRequest
	for i := range 40 {
		batch = append(batch, reqs(fmt.Sprint("stream-", i%7), "p", "m-%d", i/7)...)
	}
	res, err := s.AddBatch(ctx, append(batch, batch...))
	if err != nil || len(res) != 80 {
		t.Fatalf("%d results, %v", len(res), err)
	}
	for k := range 40 {
		if res[k].Duplicate || !res[40+k].Duplicate || res[40+k].ID != res[k].ID {
			t.Fatalf("result %d: %+v then %+v", k, res[k], res[40+k])
		}
	}
}

// A user the ACL lets run XADD but not a command the state needs (a
// producer role of +@stream +@scripting, say) gets NOPERM (exit 77) and
// nothing is written: the add used to be written, then the script
// stopped at its first state write, so a retry added the message again.
func TestEmulatedACLDeniedStateCommand(t *testing.T) {
	if !redistest.AtLeast(7, 0) {
		t.Skip("redis.acl_check_cmd needs Redis 7.0")
	}
	t.Parallel()
	_, srv := redistest.Conn(t)
	// The add must refuse with nothing written, whichever of its commands
	// is denied; XCFGSET refuses (77) or succeeds, never fails halfway.
	for _, deny := range []string{"rpush", "hset", "sadd", "hincrby", "srandmember", "xrange", "time", "hmget"} {
		user := "no" + deny
		if _, err := srv.Do("ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-"+deny); err != nil {
			t.Fatal(err)
		}
		conn := redistest.Connect(t, strings.Replace(srv.URL, "unix://", "unix://"+user+":pw@", 1))
		s, err := NewStreams(conn, ModeEmulated)
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, s, srv.URL)
		st := h.key("s")
		if _, err := h.s.add1(h.ctx, AddRequest{Stream: st, PID: "p", IID: "i", ID: "*", Fields: []string{"f", "v"}}); exit.Code(err) != exit.Permission {
			t.Fatalf("-%s: add: %v (exit %d), want NOPERM (77)", deny, err, exit.Code(err))
		}
		if n, _ := srv.Do("EXISTS", st); n != "0" {
			t.Fatalf("-%s: the stream exists after a refused add", deny)
		}
		if _, err := srv.Do("XADD", st, "*", "a", "b"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.s.CfgSet(h.ctx, st, 0, 7); err != nil && exit.Code(err) != exit.Permission {
			t.Fatalf("-%s: cfgset: %v (exit %d)", deny, err, exit.Code(err))
		}
	}
}
