package stream

import (
	"context"
	"slices"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The move script (RENAME/RENAMENX/COPY carrying emulated state) checks
// before it writes: each refusal leaves every key as it was.
func TestMoveScriptRefusesBeforeWriting(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	ctx := context.Background()
	s := streamsOf(conn, ModeEmulated, &idmp.Defaults{Duration: 100, MaxSize: 100})
	if _, err := s.add1(ctx, AddRequest{Stream: "src", PID: "p", IID: "i", Fields: []string{"f", "v"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.add1(ctx, AddRequest{Stream: "dst", PID: "q", IID: "j", Fields: []string{"f", "v"}}); err != nil {
		t.Fatal(err)
	}
	dump := func(c redis.UniversalClient) []string {
		keys, err := conn.Client().Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(keys)
		out := keys
		for _, k := range keys {
			v, _ := conn.Client().Dump(ctx, k).Result()
			out = append(out, v)
		}
		return out
	}
	move := func(c redis.UniversalClient, op, src, dst string, replace bool, db string) (any, error) {
		call, err := s.MoveCall(op, src, dst, replace, db)
		if err != nil {
			t.Fatal(err)
		}
		return rawRun(call.Script, ctx, c, call.Keys, call.Args...).Result()
	}
	before := dump(conn.Client())
	for _, c := range []struct {
		op, src, dst string
		replace      bool
		db           string
		reply        any
		err          string
	}{
		{"COPY", "src", "other", false, "1", nil, "ERR COPY to another database of a stream with emulated IDMP state is not emulated: copy within the database, or XADD the entries anew"},
		{"COPY", "src", "src", false, "", nil, "ERR source and destination objects are the same"},
		// The names are checked before the key (Redis's copyCommand).
		{"COPY", "nope", "nope", false, "", nil, "ERR source and destination objects are the same"},
		{"RENAME", "nope", "x", false, "", nil, "ERR no such key"},
		{"RENAMENX", "src", "dst", false, "", int64(0), ""},
		{"COPY", "src", "dst", false, "", int64(0), ""},
		{"COPY", "nope", "x", false, "", int64(0), ""},
	} {
		got, err := move(conn.Client(), c.op, c.src, c.dst, c.replace, c.db)
		if c.err != "" && (err == nil || err.Error() != c.err) || c.err == "" && (err != nil || got != c.reply) {
			t.Errorf("%s %s %s: %v, %v; want %v, %q", c.op, c.src, c.dst, got, err, c.reply, c.err)
		}
		if after := dump(conn.Client()); !slices.Equal(before, after) {
			t.Fatalf("%s %s %s wrote: %q -> %q", c.op, c.src, c.dst, before, after)
		}
	}
	// A user who may rename the stream but not write the state keys.
	if !redistest.AtLeast(7, 0) {
		t.Skip("redis.acl_check_cmd needs Redis 7.0+")
	}
	if _, err := srv.Do("ACL", "SETUSER", "mover", "on", ">pw", "+@all", "~src", "~dst", "~{src}:*", "-hset"); err != nil {
		t.Fatal(err)
	}
	mover := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Addr, Username: "mover", Password: "pw"})
	defer mover.Close()
	if got, err := move(mover, "RENAME", "src", "dst", false, ""); err == nil {
		t.Fatalf("RENAME without rights to the state keys: %v, want NOPERM", got)
	}
	if after := dump(conn.Client()); !slices.Equal(before, after) {
		t.Fatalf("the refused RENAME wrote: %q -> %q", before, after)
	}
	// And with every right, the state follows: dst now dedupes src's iid.
	if got, err := move(conn.Client(), "RENAME", "src", "dst", false, ""); err != nil || got != "OK" {
		t.Fatalf("RENAME: %v, %v", got, err)
	}
	r, err := s.add1(ctx, AddRequest{Stream: "dst", PID: "p", IID: "i", Fields: []string{"f", "v"}})
	if err != nil || !r.Duplicate {
		t.Fatalf("add to the renamed stream: %+v, %v; want a duplicate", r, err)
	}
	if n, _ := conn.Client().Exists(ctx, "{src}:idmp", "{src}:idmp:pids", "{dst}:idmp:ids:q").Result(); n != 0 {
		t.Fatalf("%d keys of the old state are left", n)
	}
}

// The move script's writes never half-happen: a user who may run the
// command on both streams, and every state key but one the move writes,
// is refused before anything changes (before: the destination's old state
// was deleted and the stream renamed before the refusal), and so is a
// COPY between two names that share their state keys ("s" and "{s}").
func TestMoveScriptHalfHappens(t *testing.T) {
	t.Parallel()
	if !redistest.AtLeast(7, 0) {
		t.Skip("redis.acl_check_cmd needs Redis 7.0+")
	}
	conn, srv := redistest.Conn(t)
	ctx := context.Background()
	s := streamsOf(conn, ModeEmulated, &idmp.Defaults{Duration: 100, MaxSize: 100})
	add := func(stream, pid, iid string) {
		t.Helper()
		if _, err := s.add1(ctx, AddRequest{Stream: stream, PID: pid, IID: iid, Fields: []string{"f", "v"}}); err != nil {
			t.Fatal(err)
		}
	}
	add("src", "p", "i")
	add("dst", "q", "j")
	add("dst", "p", "k")
	move := func(c redis.UniversalClient, op, src, dst string, replace bool) (any, error) {
		call, err := s.MoveCall(op, src, dst, replace, "")
		if err != nil {
			t.Fatal(err)
		}
		return rawRun(call.Script, ctx, c, call.Keys, call.Args...).Result()
	}
	for _, u := range []struct {
		name string
		keys []string
	}{
		// Each lacks one kind of key the move writes or deletes.
		{"no-src-order", []string{"~src", "~dst", "~{src}:idmp", "~{src}:idmp:pids", "~{src}:idmp:ids:*", "~{src}:idmp:batch*", "~{dst}:*"}},
		{"no-src-ids", []string{"~src", "~dst", "~{src}:idmp", "~{src}:idmp:pids", "~{src}:idmp:order:*", "~{src}:idmp:batch*", "~{dst}:*"}},
		{"no-dst-ids", []string{"~src", "~dst", "~{src}:*", "~{dst}:idmp", "~{dst}:idmp:pids", "~{dst}:idmp:order:*", "~{dst}:idmp:batch*"}},
		{"no-dst-pids", []string{"~src", "~dst", "~{src}:*", "~{dst}:idmp", "~{dst}:idmp:ids:*", "~{dst}:idmp:order:*", "~{dst}:idmp:batch*"}},
	} {
		args := append([]string{"ACL", "SETUSER", u.name, "on", ">pw", "+@all"}, u.keys...)
		if _, err := srv.Do(args...); err != nil {
			t.Fatal(err)
		}
		uc := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Addr, Username: u.name, Password: "pw"})
		for _, op := range []string{"RENAME", "COPY"} {
			before := serverDump(t, conn.Client())
			got, err := move(uc, op, "src", "dst", true)
			if exit.Classify(err) != exit.Permission {
				t.Errorf("%s by %s: %v, %v; want a permission error", op, u.name, got, err)
			}
			wantUnchanged(t, op+" by "+u.name, before, conn.Client())
		}
		uc.Close()
	}
	// "s" and "{s}" share their state keys: a COPY of s's state to {s}
	// would copy each key onto itself, which Redis refuses mid-way.
	add("s", "p", "i")
	before := serverDump(t, conn.Client())
	if got, err := move(conn.Client(), "COPY", "s", "{s}", false); err == nil {
		t.Errorf("COPY s {s}: %v, want a refusal", got)
	}
	wantUnchanged(t, "COPY s {s}", before, conn.Client())
	// A RENAME between them keeps the state, now the destination's.
	if got, err := move(conn.Client(), "RENAME", "s", "{s}", false); err != nil || got != "OK" {
		t.Fatalf("RENAME s {s}: %v, %v", got, err)
	}
	r, err := s.add1(ctx, AddRequest{Stream: "{s}", PID: "p", IID: "i", Fields: []string{"f", "v"}})
	if err != nil || !r.Duplicate {
		t.Fatalf("add to {s} after RENAME s {s}: %+v, %v; want a duplicate", r, err)
	}
}
