package stream

import (
	"context"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The liveness token of emulated state (R13, lua/stream_common.lua): a
// consumer group on the stream that lives and dies with it.

// tokenGroups is the stream's groups that are liveness tokens, by name,
// with their last-delivered-id.
func tokenGroups(t *testing.T, rdb redis.UniversalClient, stream string) map[string]string {
	t.Helper()
	groups, err := rdb.XInfoGroups(context.Background(), stream).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range groups {
		if IsTokenGroup(g.Name) {
			out[g.Name] = g.LastDeliveredID
		}
	}
	return out
}

func tokenHarness(t *testing.T) (*streamHarness, *redistest.Server) {
	t.Helper()
	conn, srv := redistest.Conn(t)
	s, err := NewStreams(conn, ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	return newHarness(t, s, srv.URL), srv
}

func TestTokenMadeWithTheState(t *testing.T) {
	t.Parallel()
	h, _ := tokenHarness(t)
	s := h.key("s")
	h.plainXAdd(t, s)
	if g := tokenGroups(t, h.rdb, s); len(g) != 0 {
		t.Fatalf("a stream without IDMP state has tokens %v", g)
	}
	id := h.mustNew(t, s, "p", "a")
	l, _ := idmp.StateKeys(s, false)
	gen := h.rdb.HGet(h.ctx, l.Meta, "gen").Val()
	g := tokenGroups(t, h.rdb, s)
	if len(g) != 1 || g["idmpctl:"+gen] != "18446744073709551615-18446744073709551615" {
		t.Fatalf("tokens %v, meta gen %q: want one, idmpctl:<gen>, delivered up to the highest ID", g, gen)
	}
	// Later writes keep it.
	h.mustDup(t, s, "p", "a", id)
	h.mustNew(t, s, "q", "b")
	h.cfgset(t, s, 50, 0)
	if g2 := tokenGroups(t, h.rdb, s); len(g2) != 1 || h.rdb.HGet(h.ctx, l.Meta, "gen").Val() != gen {
		t.Fatalf("after more writes: tokens %v, gen %q (was %q)", g2, h.rdb.HGet(h.ctx, l.Meta, "gen").Val(), gen)
	}
	if i := h.info(t, s); i.TokenGroups != 1 || i.Mode != "emulated" {
		t.Fatalf("info: %+v, want 1 token group", i)
	}
}

// A stream deleted and rebuilt with the very same entries by another
// client: its state is another stream's, found by its missing token.
func TestTokenTellsARebuiltStream(t *testing.T) {
	t.Parallel()
	h, _ := tokenHarness(t)
	s := h.key("s")
	if err := h.rdb.XAdd(h.ctx, &redis.XAddArgs{Stream: s, ID: "99999999999999-5", Values: []string{"f", "v"}}).Err(); err != nil {
		t.Fatal(err)
	}
	id := h.mustNew(t, s, "p", "i1")
	h.cfgset(t, s, 50, 0) // a change clears the tracked iids: add it again
	h.mustNew(t, s, "p", "i1")
	h.rdb.Del(h.ctx, s)
	for _, rid := range []string{"99999999999999-5", id} {
		if err := h.rdb.XAdd(h.ctx, &redis.XAddArgs{Stream: s, ID: rid, Values: []string{"f", "v"}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if i := h.info(t, s); i.Mode != "none" || i.IDMPDuration != 100 {
		t.Fatalf("info of the rebuilt stream: %+v, want no state and the defaults", i)
	}
	h.mustNew(t, s, "p", "i1")
	if n := h.xlen(t, s); n != 3 {
		t.Fatalf("XLEN %d, want 3", n)
	}
	h.wantCounters(t, s, counters{1, 1, 1, 0})
	if g := tokenGroups(t, h.rdb, s); len(g) != 1 {
		t.Fatalf("tokens %v, want the new state's one", g)
	}
}

// A user who destroys the token forgets the state, as DEL would.
func TestTokenDestroyedForgetsTheState(t *testing.T) {
	t.Parallel()
	h, _ := tokenHarness(t)
	s := h.key("s")
	h.mustNew(t, s, "p", "a")
	for g := range tokenGroups(t, h.rdb, s) {
		h.rdb.XGroupDestroy(h.ctx, s, g)
	}
	h.mustNew(t, s, "p", "a")
	h.wantCounters(t, s, counters{1, 1, 1, 0})
}

// State written before tokens (a meta without gen) gets one at its next
// write, and keeps every iid.
func TestTokenAddedToOlderState(t *testing.T) {
	t.Parallel()
	h, _ := tokenHarness(t)
	s := h.key("s")
	id := h.mustNew(t, s, "p", "a")
	l, _ := idmp.StateKeys(s, false)
	for g := range tokenGroups(t, h.rdb, s) {
		h.rdb.XGroupDestroy(h.ctx, s, g)
	}
	h.rdb.HDel(h.ctx, l.Meta, "gen")
	h.mustDup(t, s, "p", "a", id)
	if g := tokenGroups(t, h.rdb, s); len(g) != 1 || h.rdb.HGet(h.ctx, l.Meta, "gen").Val() == "" {
		t.Fatalf("tokens %v after a write to older state, want one", g)
	}
	h.wantCounters(t, s, counters{1, 1, 1, 1})
}

// Permissions: a user who may not create groups writes the state without
// a token (R13 then rests on the snapshot, as before tokens); one who may
// not read a group's consumers checks by the snapshot. Neither is refused,
// and neither writes anything the call would not have written.
func TestTokenPermissions(t *testing.T) {
	t.Parallel()
	h, srv := tokenHarness(t)
	if !redistest.AtLeast(7, 0) {
		t.Skip("ACL checks in scripts need Redis 7.0+")
	}
	ctx := context.Background()
	user := func(name, rule string) *Streams {
		if err := h.rdb.Do(ctx, "ACL", "SETUSER", name, "on", ">pw", "~*", "+@all", rule).Err(); err != nil {
			t.Fatal(err)
		}
		conn := redistest.Connect(t, strings.Replace(srv.URL, "unix://", "unix://"+name+":pw@", 1))
		return streamsOf(conn, ModeEmulated, nil)
	}
	s := h.key("s")
	l, _ := idmp.StateKeys(s, false)

	noGroup := user("no-xgroup", "-xgroup")
	r, err := noGroup.add1(ctx, AddRequest{Stream: s, PID: "p", IID: "a", Fields: []string{"f", "v"}})
	if err != nil || r.Duplicate {
		t.Fatalf("add without XGROUP: %+v, %v", r, err)
	}
	if g := tokenGroups(t, h.rdb, s); len(g) != 0 || h.rdb.HExists(ctx, l.Meta, "gen").Val() {
		t.Fatalf("without XGROUP: tokens %v, gen %q", g, h.rdb.HGet(ctx, l.Meta, "gen").Val())
	}
	// Its state still dedupes, and a rebuilt stream of other entries is
	// still told by the snapshot.
	if r, err := noGroup.add1(ctx, AddRequest{Stream: s, PID: "p", IID: "a", Fields: []string{"f", "v"}}); err != nil || !r.Duplicate {
		t.Fatalf("repeat without XGROUP: %+v, %v", r, err)
	}
	h.rdb.Del(ctx, s)
	h.plainXAdd(t, s)
	h.plainXAdd(t, s)
	if r, err := noGroup.add1(ctx, AddRequest{Stream: s, PID: "p", IID: "a", Fields: []string{"f", "v"}}); err != nil || r.Duplicate {
		t.Fatalf("add to a rebuilt stream without XGROUP: %+v, %v", r, err)
	}

	// A token it may not read: the snapshot decides, and the state stays.
	t2 := h.key("t")
	id := h.mustNew(t, t2, "p", "a")
	noRead := user("no-xinfo", "-xinfo|consumers")
	before := serverDump(t, h.rdb)
	if r, err := noRead.add1(ctx, AddRequest{Stream: t2, PID: "p", IID: "a", Fields: []string{"f", "v"}}); err != nil || !r.Duplicate || r.ID != id {
		t.Fatalf("repeat without XINFO CONSUMERS: %+v, %v", r, err)
	}
	after := serverDump(t, h.rdb)
	l2, _ := idmp.StateKeys(t2, false)
	for k, v := range before {
		if k != l2.Meta && after[k] != v { // the meta's counters and snapshot move
			t.Errorf("without XINFO CONSUMERS: key %q changed", k)
		}
	}
}

// Trimming with ACKED (Redis 8.2+) deletes what every group has read: the
// token, delivered up to the highest ID, holds nothing back. Run with
// --mode emulated on Redis 8.6, the server at hand that has ACKED.
func TestTokenDoesNotHoldBackAckedTrimming(t *testing.T) {
	t.Parallel()
	srv := redistest.NewNative(t)
	conn := redistest.Connect(t, srv.URL)
	s, err := NewStreams(conn, ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, s, srv.URL)
	st := h.key("s")
	for _, iid := range []string{"a", "b", "c", "d"} {
		h.mustNew(t, st, "p", iid)
	}
	if len(tokenGroups(t, h.rdb, st)) != 1 {
		t.Fatal("no token")
	}
	if err := h.rdb.Do(h.ctx, "XTRIM", st, "ACKED", "MAXLEN", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if n := h.xlen(t, st); n != 1 {
		t.Fatalf("XTRIM ACKED MAXLEN 1 left %d entries, want 1", n)
	}
}
