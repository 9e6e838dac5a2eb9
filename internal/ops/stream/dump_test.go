package stream

import (
	"context"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/redis/go-redis/v9"
)

// DumpCall takes the state with the payload; RestoreCall writes it back
// under another name, and its checks (RESTORE's own errors among them)
// change nothing.
func TestDumpRestoreScripts(t *testing.T) {
	t.Parallel()
	f := newChecksFixture(t)
	rdb := f.h.rdb
	ctx := context.Background()
	s := f.h.s
	dc, err := s.DumpCall(f.stream)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rawRun(dumpScript.Script, ctx, rdb, dc.Keys, dc.Args...).Result()
	if err != nil {
		t.Fatal(err)
	}
	payload, st, ok, err := ParseDumpReply(v)
	if err != nil || !ok || st == nil || len(st.PIDs) != 2 || st.Added != 3 || st.Gen == "" {
		t.Fatalf("dump: %+v, %v, %v", st, ok, err)
	}
	if PayloadToken(payload) != tokenPrefix+st.Gen {
		t.Fatalf("the payload's token %q, want %q", PayloadToken(payload), tokenPrefix+st.Gen)
	}
	dst := f.h.key("copy")
	rc, err := s.RestoreCall(dst, []string{"0", payload}, st)
	if err != nil {
		t.Fatal(err)
	}
	// Checks: a malformed call, a key of another type, RESTORE's own
	// errors, and every permission; nothing changes.
	rdb.Set(ctx, dst, "x", 0)
	bad := func(name string, run func() error, want string) {
		t.Helper()
		before := serverDump(t, rdb)
		if err := run(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
		wantUnchanged(t, name, before, rdb)
	}
	bad("a key too many", func() error { return rawRun(restoreScript.Script, ctx, rdb, append(rc.Keys, "x"), rc.Args...).Err() }, "malformed")
	bad("an argument too many", func() error { return rawRun(restoreScript.Script, ctx, rdb, rc.Keys, append(rc.Args, "x")...).Err() }, "malformed")
	bad("the key exists (BUSYKEY)", func() error { return rawRun(restoreScript.Script, ctx, rdb, rc.Keys, rc.Args...).Err() }, "BUSYKEY")
	rdb.Del(ctx, dst)
	bad("a bad payload", func() error {
		c, _ := s.RestoreCall(dst, []string{"0", "nonsense"}, st)
		return rawRun(restoreScript.Script, ctx, rdb, c.Keys, c.Args...).Err()
	}, "payload")
	for _, cmd := range []string{"restore", "hset", "rpush", "sadd", "hdel", "ltrim"} {
		user := "rs-no-" + cmd
		if err := rdb.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-"+cmd).Err(); err != nil {
			t.Fatal(err)
		}
		uc := redis.NewClient(&redis.Options{Network: "unix", Addr: strings.TrimPrefix(f.srv.URL, "unix://"), Username: user, Password: "pw"})
		before := serverDump(t, rdb)
		err := rawRun(restoreScript.Script, ctx, uc, rc.Keys, rc.Args...).Err()
		uc.Close()
		if exit.Classify(err) != exit.Permission {
			t.Errorf("RESTORE without %s: %v, want a permission error", cmd, err)
		}
		wantUnchanged(t, "RESTORE without "+cmd, before, rdb)
	}
	// It goes through: the copy dedupes the source's iids.
	if err := rawRun(restoreScript.Script, ctx, rdb, rc.Keys, rc.Args...).Err(); err != nil {
		t.Fatal(err)
	}
	orig := rdb.HGet(ctx, f.l.IDs("p"), "a").Val()
	r, err := s.add1(ctx, AddRequest{Stream: dst, PID: "p", IID: "a", Fields: []string{"f", "v"}})
	if err != nil || !r.Duplicate || r.ID != orig {
		t.Fatalf("the retry on the copy: %+v, %v (want a duplicate of %s)", r, err, orig)
	}
}
