package stream

import (
	"context"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/redis/go-redis/v9"
)

// allDBs is every key of databases 0-3 with its DUMP.
func allDBs(t *testing.T, url string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for db := range 4 {
		rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: strings.TrimPrefix(url, "unix://"), DB: db})
		for k, v := range serverDump(t, rdb) {
			out[string(rune('0'+db))+":"+k] = v
		}
		rdb.Close()
	}
	return out
}

// The MOVE / COPY ... DB script's checks trip before any write, in either
// database; the same calls go through once nothing trips them.
func TestMoveDBScriptChecksBeforeWriting(t *testing.T) {
	t.Parallel()
	f := newChecksFixture(t)
	rdb := f.h.rdb
	ctx := context.Background()
	// Old state of a stream gone from database 1, under the same names.
	db1 := redis.NewClient(&redis.Options{Network: "unix", Addr: strings.TrimPrefix(f.srv.URL, "unix://"), DB: 1})
	defer db1.Close()
	db1.HSet(ctx, f.l.Meta, "stream", f.stream, "gen", "000000000000")
	db1.SAdd(ctx, f.l.PIDs, "old")
	db1.HSet(ctx, f.l.IDs("old"), "i", "1-1")
	db1.RPush(ctx, f.l.Order("old"), "i")

	move, err := f.h.s.MoveDBCall("MOVE", f.stream, f.stream, false, "1", 0)
	if err != nil {
		t.Fatal(err)
	}
	wrongFrom, _ := f.h.s.MoveDBCall("MOVE", f.stream, f.stream, false, "1", 2)
	before := allDBs(t, f.srv.URL)
	if err := rawRun(moveDBScript.Script, ctx, rdb, wrongFrom.Keys, wrongFrom.Args...).Err(); err == nil || !strings.Contains(err.Error(), "needs the database") {
		t.Errorf("MOVE with the wrong database: %v", err)
	}
	if got := allDBs(t, f.srv.URL); !sameDump(before, got) {
		t.Error("MOVE with the wrong database changed keys")
	}
	for _, cmd := range []string{"move", "copy", "del", "select"} {
		user := "mv-no-" + cmd
		if err := rdb.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "allcommands", "-"+cmd).Err(); err != nil {
			t.Fatal(err)
		}
		uc := redis.NewClient(&redis.Options{Network: "unix", Addr: strings.TrimPrefix(f.srv.URL, "unix://"), Username: user, Password: "pw"})
		err := rawRun(moveDBScript.Script, ctx, uc, move.Keys, move.Args...).Err()
		uc.Close()
		if exit.Classify(err) != exit.Permission {
			t.Errorf("MOVE without %s: %v, want a permission error", cmd, err)
		}
		if got := allDBs(t, f.srv.URL); !sameDump(before, got) {
			t.Errorf("MOVE without %s changed keys", cmd)
		}
	}
	// A destination that exists: 0, nothing moves.
	db1.Set(ctx, f.stream, "x", 0)
	before = allDBs(t, f.srv.URL)
	if n, err := rawRun(moveDBScript.Script, ctx, rdb, move.Keys, move.Args...).Int(); err != nil || n != 0 {
		t.Errorf("MOVE onto a key: %d, %v", n, err)
	}
	if got := allDBs(t, f.srv.URL); !sameDump(before, got) {
		t.Error("MOVE onto a key changed keys")
	}
	db1.Del(ctx, f.stream)
	// It goes through: the state is in database 1, the old one there gone.
	if n, err := rawRun(moveDBScript.Script, ctx, rdb, move.Keys, move.Args...).Int(); err != nil || n != 1 {
		t.Fatalf("MOVE: %d, %v", n, err)
	}
	if left := serverDump(t, rdb); len(left) != 0 {
		t.Fatalf("left in database 0: %v", left)
	}
	if db1.Exists(ctx, f.l.IDs("old"), f.l.Order("old")).Val() != 0 || db1.HGet(ctx, f.l.IDs("p"), "a").Val() == "" {
		t.Fatal("database 1 holds the old state, or not the moved one")
	}
}

func sameDump(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
