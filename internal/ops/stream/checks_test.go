package stream

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Scripts that cannot half-happen: each emulated script gets the input
// that trips each of its checks (argument counts and sizes, key types,
// permissions, the progress record's compare-and-set), and the server must
// hold exactly what it held before, byte for byte.

// serverDump is every key with its DUMP and whether it has a TTL.
func serverDump(t *testing.T, rdb redis.UniversalClient) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		d, err := rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("DUMP %q: %v", k, err)
		}
		out[k] = d + fmt.Sprint(rdb.PTTL(ctx, k).Val() > 0)
	}
	return out
}

func wantUnchanged(t *testing.T, what string, before map[string]string, rdb redis.UniversalClient) {
	t.Helper()
	after := serverDump(t, rdb)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: key %q changed", what, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: key %q created", what, k)
		}
	}
}

// checksFixture is a server with a stream holding emulated state of two
// pids and a committed batch chunk.
type checksFixture struct {
	h      *streamHarness
	srv    *redistest.Server
	stream string
	l      idmp.StateLayout
	cp     *chunkProgress
}

func newChecksFixture(t *testing.T) *checksFixture {
	t.Helper()
	conn, srv := redistest.Conn(t)
	s, err := NewStreams(conn, ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, s, srv.URL)
	f := &checksFixture{h: h, srv: srv, stream: h.key("s")}
	f.l, _ = idmp.StateKeys(f.stream, false)
	h.mustNew(t, f.stream, "p", "a")
	h.mustNew(t, f.stream, "q", "b")
	// A committed chunk: the record at line 1.
	f.cp = &chunkProgress{Key: f.l.Batch("p", "b1"), Index: f.l.Batches, ID: "b1", PID: "p", From: 0, To: 1,
		Digest: "d", DropReplies: -1, TTL: time.Hour, Lines: []int64{1}, Run: "r1"}
	if _, err := f.run(t, []AddRequest{f.req("p", "c")}, f.cp); err != nil {
		t.Fatal(err)
	}
	f.cp.From, f.cp.To, f.cp.Lines = 1, 2, []int64{2}
	return f
}

func (f *checksFixture) req(pid, iid string, fields ...string) AddRequest {
	if len(fields) == 0 {
		fields = []string{"f", "v"}
	}
	return AddRequest{Stream: f.stream, PID: pid, IID: iid, Fields: fields}
}

// run sends one add call as the client builds it.
func (f *checksFixture) run(t *testing.T, reqs []AddRequest, cp *chunkProgress) (any, error) {
	t.Helper()
	call, _, err := emulated{f.h.s}.addCall(reqs, cp, replyOutcomes)
	if err != nil {
		t.Fatal(err)
	}
	return rawRun(addScript.Script, context.Background(), f.h.rdb, call.Keys, call.Args...).Result()
}

// runRaw sends keys and arguments as given.
func (f *checksFixture) runRaw(script *redisconn.Script, keys []string, args ...any) (any, error) {
	return rawRun(script, context.Background(), f.h.rdb, keys, args...).Result()
}

func TestAddScriptChecksBeforeWriting(t *testing.T) {
	t.Parallel()
	f := newChecksFixture(t)
	rdb := f.h.rdb
	ctx := context.Background()
	call, _, err := emulated{f.h.s}.addCall([]AddRequest{f.req("p", "new1"), f.req("q", "new2")}, f.cp, replyOutcomes)
	if err != nil {
		t.Fatal(err)
	}
	keys, args := call.Keys, call.Args
	big := make([]string, 0, idmp.MaxEmulatedFieldArgs+2)
	for i := range idmp.MaxEmulatedFieldArgs/2 + 1 {
		big = append(big, "f"+strconv.Itoa(i), "v")
	}
	type trip struct {
		name string
		run  func() (any, error)
		want string // in the error, or the refusal's first element
	}
	with := func(i int, v any) []any {
		a := append([]any(nil), args...)
		a[i] = v
		return a
	}
	trips := []trip{
		{"a key too few", func() (any, error) { return f.runRaw(addScript.Script, keys[:len(keys)-1], args...) }, "malformed"},
		{"an argument too few", func() (any, error) { return f.runRaw(addScript.Script, keys, args[:len(args)-1]...) }, "malformed"},
		{"an argument too many", func() (any, error) { return f.runRaw(addScript.Script, keys, append(args, "x")...) }, "malformed"},
		{"no pids", func() (any, error) {
			return f.runRaw(addScript.Script, keys, with(addScript.ArgIndex("NPIDs"), "0")...)
		}, "malformed"},
		{"an odd field count", func() (any, error) {
			// Items are not uniform (two pids): pid index, iid, nfields, fields.
			return f.runRaw(addScript.Script, keys, with(len(args)-5, "3")...) // the last item's field count (the defaults come last)
		}, "malformed"},
		{"no TTL for the record", func() (any, error) { return f.runRaw(addScript.Script, keys, with(addScript.ArgIndex("TTL"), "")...) }, "malformed"},
		{"an empty pid", func() (any, error) {
			return f.runRaw(addScript.Script, keys, with(addScript.ArgIndex("NPIDs")+1, "")...)
		}, "non-empty producer ID"},
		{"an empty iid", func() (any, error) {
			return f.run(t, []AddRequest{f.req("p", "x"), {Stream: f.stream, PID: "p", Fields: []string{"f", "v"}}}, nil)
		}, "non-empty idempotent ID"},
		{"too many fields for unpack", func() (any, error) {
			return f.run(t, []AddRequest{f.req("p", "small"), f.req("p", "big", big...)}, nil)
		}, "F"},
		{"the record moved on", func() (any, error) {
			cp := *f.cp
			cp.From, cp.To = 0, 1
			return f.run(t, []AddRequest{f.req("p", "z")}, &cp)
		}, "P"},
		{"another stream's state", func() (any, error) {
			return f.runRaw(addScript.Script, keys, with(2, "other")...)
		}, "IDMPCONFLICT"},
	}
	for _, tr := range trips {
		before := serverDump(t, rdb)
		v, err := tr.run()
		got := fmt.Sprint(err)
		if err == nil {
			got = fmt.Sprint(v)
		}
		if !strings.Contains(got, tr.want) {
			t.Errorf("%s: got %s, want %q", tr.name, got, tr.want)
		}
		wantUnchanged(t, tr.name, before, rdb)
	}

	// A key of another type, each in turn.
	for _, k := range []struct {
		key  string
		make func(string)
	}{
		{f.stream, nil},
		{f.l.Meta, func(k string) { rdb.Set(ctx, k, "x", 0) }},
		{f.l.PIDs, func(k string) { rdb.Set(ctx, k, "x", 0) }},
		{f.l.IDs("q"), func(k string) { rdb.RPush(ctx, k, "x") }},
		{f.l.Order("q"), func(k string) { rdb.HSet(ctx, k, "x", "y") }},
		{f.cp.Key, func(k string) { rdb.Set(ctx, k, "x", 0) }},
		{f.l.Batches, func(k string) { rdb.Set(ctx, k, "x", 0) }},
	} {
		saved, err := rdb.Dump(ctx, k.key).Result()
		if err != nil {
			t.Fatal(err)
		}
		rdb.Del(ctx, k.key)
		if k.make == nil {
			rdb.Set(ctx, k.key, "x", 0)
		} else {
			k.make(k.key)
		}
		before := serverDump(t, rdb)
		_, err = f.run(t, []AddRequest{f.req("p", "w1"), f.req("q", "w2")}, f.cp)
		if err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			t.Errorf("%s of another type: %v, want WRONGTYPE", k.key, err)
		}
		wantUnchanged(t, k.key+" of another type", before, rdb)
		rdb.Del(ctx, k.key)
		if err := rdb.RestoreReplace(ctx, k.key, 0, saved).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// Every permission the writes need.
	for _, cmd := range []string{"xadd", "xrange", "hset", "hincrby", "hdel", "del", "sadd", "srem", "persist", "rpush", "ltrim", "zadd", "zrem"} {
		user := "no-" + cmd
		if err := rdb.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-"+cmd).Err(); err != nil {
			t.Fatal(err)
		}
		opt := &redis.Options{Network: "unix", Addr: strings.TrimPrefix(f.srv.URL, "unix://"), Username: user, Password: "pw"}
		uc := redis.NewClient(opt)
		before := serverDump(t, rdb)
		_, err := rawRun(addScript.Script, ctx, uc, keys, args...).Result()
		uc.Close()
		// XRANGE is also a read of the first part: the server refuses it
		// there, before any write, in its own words.
		if exit.Classify(err) != exit.Permission || cmd != "xrange" && !strings.Contains(err.Error(), strings.ToUpper(cmd)) {
			t.Errorf("without %s: %v, want a permission error naming it", cmd, err)
		}
		wantUnchanged(t, "without "+cmd, before, rdb)
	}

	// And the same call goes through once nothing trips it.
	if _, err := f.runRaw(addScript.Script, keys, args...); err != nil {
		t.Fatal(err)
	}
	if n := rdb.XLen(ctx, f.stream).Val(); n != 5 {
		t.Fatalf("XLEN %d, want 5", n)
	}
}

func TestCfgSetAndClearScriptsCheckBeforeWriting(t *testing.T) {
	t.Parallel()
	f := newChecksFixture(t)
	rdb := f.h.rdb
	ctx := context.Background()
	_, keys, args, err := f.h.s.stateCall(f.stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := func(d, n any) func() (any, error) {
		return func() (any, error) { return f.runRaw(cfgsetScript.Script, keys, append(args, d, n, "", "")...) }
	}
	clearOne := func() (any, error) {
		return f.runRaw(clearScript.Script, append(keys, f.l.IDs("q"), f.l.Order("q")), append(args, "q", "", "")...)
	}
	for _, tr := range []struct {
		name string
		run  func() (any, error)
		want string
	}{
		{"cfgset: not an integer", cfg("x", 0), "not an integer"},
		{"cfgset: nothing to set", cfg(0, 0), "At least one parameter"},
		{"cfgset: duration out of range", cfg(86401, 0), "IDMP-DURATION must be between"},
		{"cfgset: maxsize out of range", cfg(0, 10001), "IDMP-MAXSIZE must be between"},
		{"clear: keys of one pid without the pid", func() (any, error) {
			return f.runRaw(clearScript.Script, append(keys, f.l.IDs("q"), f.l.Order("q")), append(args, "", "", "")...)
		}, "malformed"},
		{"clear: a pid without its keys", func() (any, error) { return f.runRaw(clearScript.Script, keys, append(args, "q", "", "")...) }, "malformed"},
	} {
		before := serverDump(t, rdb)
		_, err := tr.run()
		if err == nil || !strings.Contains(err.Error(), tr.want) {
			t.Errorf("%s: %v, want %q", tr.name, err, tr.want)
		}
		wantUnchanged(t, tr.name, before, rdb)
	}
	// Types.
	for _, k := range []string{f.l.Meta, f.l.PIDs} {
		saved, _ := rdb.Dump(ctx, k).Result()
		rdb.Del(ctx, k)
		rdb.Set(ctx, k, "x", 0)
		for name, run := range map[string]func() (any, error){"cfgset": cfg(5, 0), "clear": clearOne} {
			before := serverDump(t, rdb)
			if _, err := run(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
				t.Errorf("%s with %s of another type: %v", name, k, err)
			}
			wantUnchanged(t, name+" with "+k+" of another type", before, rdb)
		}
		rdb.Del(ctx, k)
		if err := rdb.RestoreReplace(ctx, k, 0, saved).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Permissions.
	for _, cmd := range []string{"hset", "del", "srem", "xrange"} {
		user := "no-" + cmd
		if err := rdb.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-"+cmd).Err(); err != nil {
			t.Fatal(err)
		}
		uc := redis.NewClient(&redis.Options{Network: "unix", Addr: strings.TrimPrefix(f.srv.URL, "unix://"), Username: user, Password: "pw"})
		runs := map[string]func() (any, error){
			"cfgset": func() (any, error) {
				return rawRun(cfgsetScript.Script, ctx, uc, keys, append(args, 5, 0, "", "")...).Result()
			},
			"clear": func() (any, error) {
				return rawRun(clearScript.Script, ctx, uc, append(keys, f.l.IDs("q"), f.l.Order("q")), append(args, "q", "", "")...).Result()
			},
		}
		for name, run := range runs {
			if (cmd == "srem" && name == "cfgset") || (cmd == "xrange" && name == "clear") {
				continue // not a command it writes with
			}
			before := serverDump(t, rdb)
			if _, err := run(); exit.Classify(err) != exit.Permission {
				t.Errorf("%s without %s: %v, want a permission error", name, cmd, err)
			}
			wantUnchanged(t, name+" without "+cmd, before, rdb)
		}
		uc.Close()
	}
}

func TestPruneScript(t *testing.T) {
	t.Parallel()
	f := newChecksFixture(t)
	rdb := f.h.rdb
	ctx := context.Background()
	// A record whose time is up goes, one that has time left stays, an
	// index entry of a key that is gone goes, and a record written before
	// records carried their time (a TTL) is scored by it.
	now := time.Now().UnixMilli()
	old := f.l.BatchPrefix + "old"
	legacy := f.l.BatchPrefix + "legacy"
	gone := f.l.BatchPrefix + "gone"
	rdb.HSet(ctx, old, "line", 5, "expires", now-1000)
	rdb.HSet(ctx, legacy, "line", 6)
	rdb.PExpire(ctx, legacy, time.Hour)
	rdb.ZAdd(ctx, f.l.Batches, redis.Z{Score: float64(now - 1000), Member: old},
		redis.Z{Score: float64(now - 1000), Member: legacy}, redis.Z{Score: float64(now - 1000), Member: gone})
	n, err := rawRun(pruneScript.Script, ctx, rdb, []string{f.l.Batches}, 100).Int()
	if err != nil || n != 1 {
		t.Fatalf("prune: %d, %v; want 1 dropped", n, err)
	}
	if rdb.Exists(ctx, old).Val() != 0 || rdb.Exists(ctx, f.cp.Key, legacy).Val() != 2 {
		t.Fatal("prune dropped the wrong records")
	}
	members := rdb.ZRangeWithScores(ctx, f.l.Batches, 0, -1).Val()
	if len(members) != 2 {
		t.Fatalf("index: %v", members)
	}
	for _, m := range members {
		if m.Score <= float64(now) {
			t.Fatalf("index entry %v not scored by its time", m)
		}
	}
	// Its checks.
	rdb.HSet(ctx, old, "line", 5, "expires", now-1000)
	rdb.ZAdd(ctx, f.l.Batches, redis.Z{Score: float64(now - 1000), Member: old})
	if err := rdb.Do(ctx, "ACL", "SETUSER", "no-del", "on", ">pw", "~*", "+@all", "-del").Err(); err != nil {
		t.Fatal(err)
	}
	uc := redis.NewClient(&redis.Options{Network: "unix", Addr: strings.TrimPrefix(f.srv.URL, "unix://"), Username: "no-del", Password: "pw"})
	defer uc.Close()
	before := serverDump(t, rdb)
	if err := rawRun(pruneScript.Script, ctx, uc, []string{f.l.Batches}, 100).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("prune without DEL: %v", err)
	}
	wantUnchanged(t, "prune without DEL", before, rdb)
	rdb.Set(ctx, f.h.key("notindex"), "x", 0)
	before = serverDump(t, rdb)
	if err := rawRun(pruneScript.Script, ctx, rdb, []string{f.h.key("notindex")}, 100).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Errorf("prune of a string: %v", err)
	}
	wantUnchanged(t, "prune of a string", before, rdb)
}

// The orphaned-state drop (purge --match --orphan-state) deletes a deleted
// stream's whole state, and nothing while the stream, or the other name
// that shares its state keys, exists; its checks change nothing.
func TestDropOrphanScript(t *testing.T) {
	t.Parallel()
	f := newChecksFixture(t)
	rdb := f.h.rdb
	ctx := context.Background()
	s := f.h.s
	names := idmp.StateStreams(f.l.Meta)
	// The stream exists: kept.
	before := serverDump(t, rdb)
	if n, kept, err := s.DropOrphanedState(ctx, names, nil); err != nil || !kept || n != 0 {
		t.Fatalf("drop with the stream there: %d, %v, %v", n, kept, err)
	}
	wantUnchanged(t, "drop with the stream there", before, rdb)
	rdb.Del(ctx, f.stream)
	// The other name of the same state keys exists as a stream: kept.
	other := names[0]
	if other == f.stream {
		other = names[1]
	}
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: other, Values: []string{"f", "v"}})
	before = serverDump(t, rdb)
	if _, kept, err := s.DropOrphanedState(ctx, names, nil); err != nil || !kept {
		t.Fatalf("drop with %q there: %v, %v", other, kept, err)
	}
	wantUnchanged(t, "drop with the other name there", before, rdb)
	rdb.Del(ctx, other)
	// A key of another kind under the name is no stream: the state is
	// orphaned (a scan flags it so), and goes; the key stays.
	rdb.Set(ctx, other, "x", 0)
	defer rdb.Del(ctx, other)
	// A key that is not of the state, and a user who may not DEL.
	before = serverDump(t, rdb)
	if _, _, err := s.DropOrphanedState(ctx, names, []string{f.h.key("elsewhere")}); err == nil {
		t.Error("drop of a key outside the state: no error")
	}
	wantUnchanged(t, "drop of a key outside the state", before, rdb)
	if redistest.AtLeast(7, 0) {
		if err := rdb.Do(ctx, "ACL", "SETUSER", "no-del-orphan", "on", ">pw", "~*", "+@all", "-del").Err(); err != nil {
			t.Fatal(err)
		}
		conn := redistest.Connect(t, strings.Replace(f.srv.URL, "unix://", "unix://no-del-orphan:pw@", 1))
		us := streamsOf(conn, ModeEmulated, s.Defaults)
		if _, _, err := us.DropOrphanedState(ctx, names, nil); exit.Classify(err) != exit.Permission {
			t.Errorf("drop without DEL: %v, want a permission error", err)
		}
		wantUnchanged(t, "drop without DEL", before, rdb)
	}
	// A per-pid key its pids set no longer names goes too.
	stray := f.l.IDs("stray")
	rdb.HSet(ctx, stray, "i", "1-1")
	n, kept, err := s.DropOrphanedState(ctx, names, []string{stray})
	if err != nil || kept {
		t.Fatalf("drop: %d, %v, %v", n, kept, err)
	}
	if left := serverDump(t, rdb); len(left) != 1 {
		t.Fatalf("dropped %d keys, left %d: %v (want only %q)", n, len(left), left, other)
	}
}

// An orphaned state of many pids, every key of it named by the scan: one
// drop (before: "too many results to unpack", 70, for any state of more
// than about 4,000 pids).
func TestDropOrphanManyKeys(t *testing.T) {
	t.Parallel()
	f := newChecksFixture(t)
	rdb := f.h.rdb
	ctx := context.Background()
	var reqs []AddRequest
	for i := range 5000 {
		reqs = append(reqs, f.req("p"+strconv.Itoa(i), "i"))
	}
	for i := 0; i < len(reqs); i += 500 {
		if _, err := f.run(t, reqs[i:i+500], nil); err != nil {
			t.Fatal(err)
		}
	}
	rdb.Del(ctx, f.stream)
	keys := rdb.Keys(ctx, f.l.Base+":idmp*").Val()
	n, kept, err := f.h.s.DropOrphanedState(ctx, idmp.StateStreams(f.l.Meta), keys)
	if err != nil || kept || int(n) != len(keys) {
		t.Fatalf("drop of %d keys: %d, %v, %v", len(keys), n, kept, err)
	}
	if left := rdb.Keys(ctx, f.l.Base+":idmp*").Val(); len(left) != 0 {
		t.Fatalf("%d keys left", len(left))
	}
}
