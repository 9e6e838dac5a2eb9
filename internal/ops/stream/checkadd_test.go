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
				if _, err := srv.Do("ACL", "SETUSER", "narrow", "on", ">pw", "~dl", "~{dl}:idmp", "~{dl}:idmp:pids", "&*", "+@all"); err != nil {
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
			}
		})
	}
}
