package consume_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/consume"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// ACLs are a node's own: consume's start checks of the stream (here
// XREADGROUP, denied on the stream's primary only) run on the stream's
// primary, and those of the dead-letter stream's add (XADD, denied on its
// primary only: Streams.CheckAdd) on its own: refused, and named, before
// the group or anything else is written.
func TestPrepareChecksEachStreamOnItsNode(t *testing.T) {
	cl := redistest.NewCluster(t)
	ctx := context.Background()
	admin := redistest.Connect(t, cl.URL).Client().(*redis.ClusterClient)
	stream, dead := "{s1}jobs", "{d9}dead"
	sn, err := admin.MasterForKey(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	dn, err := admin.MasterForKey(ctx, dead)
	if err != nil {
		t.Fatal(err)
	}
	if sn.Options().Addr == dn.Options().Addr {
		t.Fatalf("%s and %s share a primary: pick keys of two", stream, dead)
	}
	for _, c := range []struct {
		denied, on string // the command refused, on the primary of on
		deadLetter []string
	}{{"xreadgroup", stream, []string{"", dead}}, {"xadd", dead, []string{dead}}} {
		for _, n := range cl.Nodes {
			rule := "+@all"
			if on, err := admin.MasterForKey(ctx, c.on); err == nil && n.Addr == on.Options().Addr {
				rule = "-" + c.denied
			}
			if _, err := n.Do("ACL", "SETUSER", "u", "reset", "on", ">pw", "~*", "&*", "+@all", rule); err != nil {
				t.Fatal(err)
			}
		}
		conn := redistest.Connect(t, strings.Replace(cl.URL, "redis://", "redis://u:pw@", 1))
		for _, dl := range c.deadLetter {
			_, err = consume.Run(ctx, conn, consume.Params{Stream: stream, Group: "g", Consumer: "c", Create: true, DeadLetter: dl,
				Workers: 1, Lease: time.Minute, MaxAttempts: 1, UntilEmpty: true, Block: 10 * time.Millisecond,
				Command: []string{"true"}, Output: io.Discard}, func(consume.Result) {}, func(string) {})
			if exit.Code(err) != exit.Permission || !strings.Contains(strings.ToLower(strings.ReplaceAll(err.Error(), "'", "")), c.denied+" command") {
				t.Errorf("%s denied, --dead-letter %q: err %v (exit %d), want its refusal named (77)", c.denied, dl, err, exit.Code(err))
			}
			if keys, err := sn.Keys(ctx, "*").Result(); err != nil || len(keys) != 0 {
				t.Errorf("%s denied, --dead-letter %q: written on the stream's primary: %q (%v)", c.denied, dl, keys, err)
			}
		}
	}
}
