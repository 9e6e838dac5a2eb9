package stream

import (
	"context"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/redis/go-redis/v9"
)

// The mark script gives a stream without state the defaults it names, and
// leaves one with settings of its own alone; its checks change nothing.
func TestMarkScript(t *testing.T) {
	t.Parallel()
	f := newChecksFixture(t)
	rdb := f.h.rdb
	ctx := context.Background()
	s := f.h.s
	old := idmp.Defaults{Duration: 100, MaxSize: 7}
	plain := f.h.key("plain")
	f.h.plainXAdd(t, plain)
	run := func(c redis.UniversalClient, stream string) (int64, error) {
		call, err := s.MarkCall(stream, old)
		if err != nil {
			t.Fatal(err)
		}
		return rawRun(markScript.Script, ctx, c, call.Keys, call.Args...).Int64()
	}
	// Refusals first: a user who may not write the meta, or drop the
	// state of a stream gone under the name.
	gone := f.h.key("gone")
	f.h.mustNew(t, gone, "p", "a")
	for _, k := range tokenGroupsList(t, rdb, gone) {
		rdb.XGroupDestroy(ctx, gone, k) // as if deleted and rebuilt
	}
	for _, c := range []struct{ cmd, stream string }{{"hset", plain}, {"del", gone}} {
		user := "mark-no-" + c.cmd
		if err := rdb.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-"+c.cmd).Err(); err != nil {
			t.Fatal(err)
		}
		uc := redis.NewClient(&redis.Options{Network: "unix", Addr: strings.TrimPrefix(f.srv.URL, "unix://"), Username: user, Password: "pw"})
		before := serverDump(t, rdb)
		_, err := run(uc, c.stream)
		uc.Close()
		if exit.Classify(err) != exit.Permission {
			t.Errorf("mark without %s: %v, want a permission error", c.cmd, err)
		}
		wantUnchanged(t, "mark without "+c.cmd, before, rdb)
	}
	for stream, want := range map[string]int64{plain: 1, f.stream: 0, gone: 1, f.h.key("none"): 0} {
		if n, err := run(rdb, stream); err != nil || n != want {
			t.Errorf("mark %s: %d, %v; want %d", stream, n, err, want)
		}
	}
	if i := f.h.info(t, plain); i.IDMPMaxSize != 7 || i.Mode != "emulated" || i.IIDsAdded != 0 {
		t.Fatalf("marked stream: %+v", i)
	}
	if i := f.h.info(t, f.stream); i.IDMPMaxSize != 100 || i.IIDsAdded != 3 {
		t.Fatalf("a stream with state of its own: %+v", i)
	}
	if i := f.h.info(t, gone); i.IDMPMaxSize != 7 || i.IIDsAdded != 0 || i.PIDsTracked != 0 {
		t.Fatalf("a stream whose state was another's: %+v", i)
	}
}

func tokenGroupsList(t *testing.T, rdb redis.UniversalClient, stream string) []string {
	var out []string
	for g := range tokenGroups(t, rdb, stream) {
		out = append(out, g)
	}
	return out
}

// The DEL script deletes the keys and the state each owns (not the state
// of another name sharing its keys); its checks change nothing.
func TestDelScript(t *testing.T) {
	t.Parallel()
	f := newChecksFixture(t)
	rdb := f.h.rdb
	ctx := context.Background()
	s := f.h.s
	other := f.h.key("other")
	f.h.mustNew(t, other, "p", "a")
	str := f.h.key("str")
	rdb.Set(ctx, str, "x", 0)
	call, err := s.DelCall("DEL", []string{f.stream, str, f.h.key("none")})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"del"} {
		user := "del-no-" + cmd
		if err := rdb.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-"+cmd).Err(); err != nil {
			t.Fatal(err)
		}
		uc := redis.NewClient(&redis.Options{Network: "unix", Addr: strings.TrimPrefix(f.srv.URL, "unix://"), Username: user, Password: "pw"})
		before := serverDump(t, rdb)
		err := rawRun(delScript.Script, ctx, uc, call.Keys, call.Args...).Err()
		uc.Close()
		if exit.Classify(err) != exit.Permission {
			t.Errorf("DEL without %s: %v, want a permission error", cmd, err)
		}
		wantUnchanged(t, "DEL without "+cmd, before, rdb)
	}
	before := serverDump(t, rdb)
	if err := rawRun(delScript.Script, ctx, rdb, call.Keys[:4], call.Args...).Err(); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("a malformed call: %v", err)
	}
	wantUnchanged(t, "a malformed call", before, rdb)
	n, err := rawRun(delScript.Script, ctx, rdb, call.Keys, call.Args...).Int()
	if err != nil || n != 2 {
		t.Fatalf("DEL: %d, %v; want 2", n, err)
	}
	if left := rdb.Keys(ctx, f.l.Base+"*").Val(); len(left) != 0 {
		t.Fatalf("left of the deleted stream's state: %v", left)
	}
	if f.h.info(t, other).IIDsTracked != 1 {
		t.Fatal("the other stream's state went too")
	}
}

// The checks that only some calls need: HDEL of the meta's unordered flag
// (cfgset and clear of a state that has it) and UNLINK; each refused one
// changes nothing.
func TestConditionalChecks(t *testing.T) {
	t.Parallel()
	f := newChecksFixture(t)
	rdb := f.h.rdb
	ctx := context.Background()
	s := f.h.s
	rdb.HSet(ctx, f.l.Meta, "unordered", "1")
	if err := rdb.Do(ctx, "ACL", "SETUSER", "cc-no-hdel", "on", ">pw", "~*", "+@all", "-hdel", "-unlink").Err(); err != nil {
		t.Fatal(err)
	}
	uc := redis.NewClient(&redis.Options{Network: "unix", Addr: strings.TrimPrefix(f.srv.URL, "unix://"), Username: "cc-no-hdel", Password: "pw"})
	defer uc.Close()
	_, keys, args, err := s.stateCall(f.stream)
	if err != nil {
		t.Fatal(err)
	}
	del, err := s.DelCall("UNLINK", []string{f.stream})
	if err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func() error{
		"cfgset": func() error {
			return rawRun(cfgsetScript.Script, ctx, uc, keys, append(append([]any{}, args...), 5, 0, 100, 100)...).Err()
		},
		"clear": func() error {
			return rawRun(clearScript.Script, ctx, uc, keys, append(append([]any{}, args...), "", 100, 100)...).Err()
		},
		"unlink": func() error { return rawRun(delScript.Script, ctx, uc, del.Keys, del.Args...).Err() },
	} {
		before := serverDump(t, rdb)
		if err := run(); exit.Classify(err) != exit.Permission {
			t.Errorf("%s without HDEL/UNLINK: %v, want a permission error", name, err)
		}
		wantUnchanged(t, name+" without HDEL/UNLINK", before, rdb)
	}
	// Without the flag, cfgset needs no HDEL.
	rdb.HDel(ctx, f.l.Meta, "unordered")
	if err := rawRun(cfgsetScript.Script, ctx, uc, keys, append(append([]any{}, args...), 5, 0, 100, 100)...).Err(); err != nil {
		t.Errorf("cfgset without HDEL of a state without the flag: %v", err)
	}
}
