package stream

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// CheckAdd adds and writes nothing, in either mode, on a new stream and on
// one with tracked iids; it refuses, with nothing written, what the add
// itself would be refused for (a command the add runs, denied).
func TestCheckAddWritesNothing(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	servers := map[Mode]*redistest.Server{ModeEmulated: srv, ModeNative: srv}
	if !redistest.Caps(t, conn).NativeIDMP {
		servers[ModeNative] = redistest.NewNative(t)
	}
	ctx := context.Background()
	for mode, srv := range servers {
		t.Run(mode.String(), func(t *testing.T) {
			admin := redistest.Connect(t, srv.URL)
			rdb := admin.Client()
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			s, err := NewStreams(admin, mode)
			if err != nil {
				t.Fatal(err)
			}
			req := AddRequest{Stream: "dl", PID: "g", IID: "1-0", Fields: []string{"f", "v"}}
			// A new stream: nothing made, the state's keys neither.
			if err := s.CheckAdd(ctx, req); err != nil {
				t.Fatalf("new stream: %v", err)
			}
			if n := rdb.DBSize(ctx).Val(); n != 0 {
				keys, _ := rdb.Keys(ctx, "*").Result()
				t.Fatalf("the check of an add to a new stream wrote %q", keys)
			}
			// A stream with a tracked iid: the check of it and of a new
			// one leave every key as it was.
			if _, err := s.Add(ctx, AddOptions{}, req); err != nil {
				t.Fatal(err)
			}
			before := serverDump(t, rdb)
			for _, iid := range []string{"1-0", "2-0"} {
				req.IID = iid
				if err := s.CheckAdd(ctx, req); err != nil {
					t.Fatalf("%s: %v", iid, err)
				}
				wantUnchanged(t, "the check of "+iid, before, rdb)
			}
			// A user who may run XADD but not all an add runs (or may run
			// later: the emulated reads of a producer's tracked iids):
			// refused, named, by the check as by the add, nothing written.
			deny := map[Mode][]string{ModeEmulated: {"rpush", "lindex", "hget", "lrange"}, ModeNative: {"multi", "xadd", "watch"}}[mode]
			for i, cmd := range deny {
				user := "u" + cmd
				if _, err := srv.Do("ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-"+cmd); err != nil {
					t.Fatal(err)
				}
				us, err := NewStreams(redistest.Connect(t, strings.Replace(srv.URL, "://", "://"+user+":pw@", 1)), mode)
				if err != nil {
					t.Fatal(err)
				}
				req.IID = fmt.Sprint("new-", i)
				err = us.CheckAdd(ctx, req)
				if exit.Code(err) != exit.Permission || !strings.Contains(strings.ToLower(strings.ReplaceAll(err.Error(), "'", "")), cmd+" command") {
					t.Errorf("check without %s: %v (exit %d), want 77 naming it", cmd, err, exit.Code(err))
				}
				wantUnchanged(t, "the check without "+cmd, before, rdb)
			}
			if mode == ModeNative {
				// A native add to a stream without emulated state touches
				// the stream and the two keys its guard watches, no more:
				// a user of those alone may add, and the check says so.
				// (DISCARD included: the add sends none.)
				if _, err := srv.Do("ACL", "SETUSER", "narrow", "on", ">pw", "~dl", "~{dl}:idmp", "~{dl}:idmp:pids", "~str", "~{str}:idmp", "~{str}:idmp:pids", "&*", "+@all", "-discard", "-type"); err != nil {
					t.Fatal(err)
				}
				us, err := NewStreams(redistest.Connect(t, strings.Replace(srv.URL, "://", "://narrow:pw@", 1)), mode)
				if err != nil {
					t.Fatal(err)
				}
				req.IID = "narrow"
				if err := us.CheckAdd(ctx, req); err != nil {
					t.Errorf("check by a user of the add's keys alone: %v", err)
				}
				if _, err := us.Add(ctx, AddOptions{}, req); err != nil {
					t.Errorf("add by a user of the add's keys alone: %v", err)
				}
				// A key of another type is refused as the add is, though
				// this user may not ask its TYPE.
				if err := rdb.Set(ctx, "str", "x", 0).Err(); err != nil {
					t.Fatal(err)
				}
				if err := us.CheckAdd(ctx, AddRequest{Stream: "str", PID: "g", IID: "1", Fields: []string{"f", "v"}}); exit.Code(err) != exit.Data {
					t.Errorf("check of a string key: %v (exit %d), want WRONGTYPE (65)", err, exit.Code(err))
				}
			}
		})
	}
}

// A user who may not UNWATCH: the single add's guard, which finds the
// stream's emulated state held and goes to the script, must not leave its
// WATCH on a pooled connection, where a change of the state keys made the
// next add's transaction probe fail ("redis: nil", 70).
func TestGuardWithoutUnwatchLeavesNoWatch(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	if !redistest.Caps(t, conn).NativeIDMP {
		srv = redistest.NewNative(t)
	}
	ctx := context.Background()
	admin := redistest.Connect(t, srv.URL)
	emu, err := NewStreams(admin, ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	add := func(s *Streams, pid, iid string) error {
		_, err := s.Add(ctx, AddOptions{}, AddRequest{Stream: "held", PID: pid, IID: iid, Fields: []string{"f", "v"}})
		return err
	}
	if err := add(emu, "a", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("ACL", "SETUSER", "nounwatch", "on", ">pw", "~*", "&*", "+@all", "-unwatch"); err != nil {
		t.Fatal(err)
	}
	us, err := NewStreams(redistest.Connect(t, strings.Replace(srv.URL, "://", "://nounwatch:pw@", 1)), ModeNative)
	if err != nil {
		t.Fatal(err)
	}
	// A user without scripts is told by the check what its add says: the
	// stream holds emulated state, whose guard needs them (78).
	if _, err := srv.Do("ACL", "SETUSER", "noscript", "on", ">pw", "~*", "&*", "+@all", "-evalsha", "-eval"); err != nil {
		t.Fatal(err)
	}
	ns, err := NewStreams(redistest.Connect(t, strings.Replace(srv.URL, "://", "://noscript:pw@", 1)), ModeNative)
	if err != nil {
		t.Fatal(err)
	}
	req := AddRequest{Stream: "held", PID: "g", IID: "n", Fields: []string{"f", "v"}}
	_, aerr := ns.Add(ctx, AddOptions{}, req)
	if cerr := ns.CheckAdd(ctx, req); exit.Code(cerr) != exit.Config || exit.Code(aerr) != exit.Config {
		t.Errorf("without scripts: check %v, add %v: want both 78", cerr, aerr)
	}
	for i := range 5 {
		if err := add(us, "g", fmt.Sprint("i", i)); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
		if err := add(emu, "b", fmt.Sprint("y", i)); err != nil { // the state keys change
			t.Fatal(err)
		}
	}
}
