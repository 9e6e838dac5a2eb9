package redisconn_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// setScript writes value at key: a write for WAIT to wait for.
type setArgs struct {
	Key   string `lua:"key,key"`
	Value string `lua:"value"`
}

var setScript = redisconn.NewLua[setArgs, any](redisconn.CommandReply, "return redis.call('SET', key, value)\n")

func setCall(key, value string) []*redisconn.Call {
	return []*redisconn.Call{setScript.Call(&setArgs{Key: key, Value: value})}
}

// primaryWithReplica starts a primary on a loopback port and one replica.
func primaryWithReplica(t *testing.T) (*redistest.Server, *redistest.Server, *redisconn.Conn) {
	t.Helper()
	primary := redistest.NewWith(t, redistest.Options{})
	replica := redistest.NewReplica(t, primary)
	return primary, replica, redistest.Connect(t, primary.URL)
}

// The WAIT covers the write it follows: with the replica frozen (still
// listed online, its last acknowledgement standing), a WAIT before any new
// write counts it at once, while the WAIT after this write waits out its
// timeout and counts none. And it runs on the connection that wrote: the
// connection whose CLIENT ID the pipeline read ran WAIT last.
func TestRunDurableWaitsForItsOwnWrite(t *testing.T) {
	primary, replica, c := primaryWithReplica(t)
	ctx := context.Background()
	d := redisconn.Durability{Replicas: 1, Timeout: 5 * time.Second}

	ack, err := c.Run(ctx, redisconn.RunOpts{Key: "k", Durability: d}, setCall("k", "1")...)
	if err != nil || d.Check(ack) != nil {
		t.Fatalf("replica up: ack %+v, err %v", ack, err)
	}
	if got, _ := replica.Do("GET", "k"); got != "1" {
		t.Fatalf("acknowledged, but the replica has k = %q", got)
	}

	var id *redis.IntCmd
	if _, err := c.PipelinedDurable(ctx, "k", d, func(p redis.Pipeliner, ctx context.Context) {
		id = p.ClientID(ctx)
		p.Set(ctx, "k", "1", 0)
	}); err != nil {
		t.Fatal(err)
	}
	list, err := primary.Do("CLIENT", "LIST", "ID", strconv.FormatInt(id.Val(), 10))
	if err != nil || !strings.Contains(list, " cmd=wait ") {
		t.Fatalf("CLIENT LIST ID %d: %q %v: want its last command to be wait", id.Val(), list, err)
	}

	t.Cleanup(func() { _ = replica.Thaw() })
	if err := replica.Freeze(); err != nil {
		t.Fatal(err)
	}
	if got, err := primary.Do("WAIT", "1", "2000"); err != nil || got != "1" {
		t.Fatalf("control: WAIT before any new write replied %q %v, want 1 at once", got, err)
	}
	d.Timeout = 300 * time.Millisecond
	start := time.Now()
	calls := setCall("k", "2")
	ack, err = c.Run(ctx, redisconn.RunOpts{Key: "k", Durability: d}, calls...)
	took := time.Since(start)
	if err != nil || calls[0].Cmd.Err() != nil {
		t.Fatalf("replica frozen: %v / %v", err, calls[0].Cmd.Err())
	}
	var na *redisconn.NotAckedError
	if cerr := d.Check(ack); !errors.As(cerr, &na) || na.Code() != exit.Unavailable || ack.Replicas != 0 {
		t.Fatalf("replica frozen: ack %+v, check %v", ack, cerr)
	}
	if took < 250*time.Millisecond || took > 3*time.Second {
		t.Errorf("replica frozen: the wait took %s, want about 300ms", took)
	}
	if want := "0 of 1 replicas acknowledged the write within 300ms"; d.Check(ack).Error() != want {
		t.Errorf("message %q, want %q", d.Check(ack), want)
	}
	if redisconn.Retryable(d.Check(ack)) {
		t.Error("a write that was not acknowledged counts as retryable")
	}
	if got, _ := primary.Do("GET", "k"); got != "2" {
		t.Errorf("the write is not on the primary: %q", got)
	}
}

// A wait longer than the per-command timeout fits in the round trip.
func TestRunDurableOutlastsTheCommandTimeout(t *testing.T) {
	srv := redistest.NewWith(t, redistest.Options{Unix: true})
	c, err := redistest.Dial(context.Background(), redisconn.ConnConfig{URL: srv.URL, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d := redisconn.Durability{Replicas: 1, Timeout: 600 * time.Millisecond}
	start := time.Now()
	ack, err := c.Run(context.Background(), redisconn.RunOpts{Key: "k", Durability: d}, setCall("k", "v")...)
	if err != nil || ack.Err != nil || ack.Replicas != 0 {
		t.Fatalf("ack %+v, err %v: want 0 replicas, no error", ack, err)
	}
	if took := time.Since(start); took < 550*time.Millisecond {
		t.Errorf("WAIT returned after %s, before its 600ms", took)
	}
}

// A script the server has not cached goes as EVAL the first time, and
// after a SCRIPT FLUSH the NOSCRIPT is answered with EVAL again.
func TestRunDurableScriptCache(t *testing.T) {
	srv := redistest.NewWith(t, redistest.Options{Unix: true})
	c := redistest.Connect(t, srv.URL)
	type incrArgs struct {
		Key string `lua:"key,key"`
	}
	script := redisconn.NewLua[incrArgs, int64](redisconn.Int64Reply, "return redis.call('INCR', key)\n")
	d := redisconn.Durability{Replicas: 1, Timeout: 10 * time.Millisecond} // no replica: WAIT answers 0 after 10ms
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		if i == 3 {
			if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
		calls := []*redisconn.Call{script.Call(&incrArgs{Key: "n"})}
		if _, err := c.Run(ctx, redisconn.RunOpts{Key: "n", Durability: d}, calls...); err != nil {
			t.Fatal(err)
		}
		if n, err := calls[0].Cmd.Int(); err != nil || n != i {
			t.Fatalf("call %d: %d %v", i, n, err)
		}
	}
}

// WAITAOF where the server lacks it (Redis before 7.2) or has no AOF: the
// server's configuration (78), before anything is written.
func TestWaitAOFRefusedBeforeTheWrite(t *testing.T) {
	srv := redistest.NewWith(t, redistest.Options{Unix: true})
	c := redistest.Connect(t, srv.URL)
	d := redisconn.Durability{AOF: true, Timeout: 100 * time.Millisecond}
	_, err := c.Run(context.Background(), redisconn.RunOpts{Key: "k", Durability: d}, setCall("k", "v")...)
	if exit.Code(err) != exit.Config {
		t.Fatalf("err %v (exit %d), want a configuration error (78)", err, exit.Code(err))
	}
	t.Logf("%s: %v", srv.Addr, err)
	if got, _ := srv.Do("EXISTS", "k"); got != "0" {
		t.Errorf("k was written before WAITAOF was refused")
	}
}

// A user who may not run WAIT: refused (77) before the write, on both
// paths (a pipeline, and a connection for MULTI/EXEC). Before: the write
// was made, then WAIT's NOPERM came back. The probe is sent once per Conn,
// and only for a write that waits.
func TestWaitRefusedBeforeTheWrite(t *testing.T) {
	srv := redistest.NewWith(t, redistest.Options{Unix: true})
	if _, err := srv.Do("ACL", "SETUSER", "nowait", "on", ">pw", "~*", "&*", "+@all", "-wait"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d := redisconn.Durability{Replicas: 1, Timeout: 10 * time.Millisecond}
	c := redistest.Connect(t, strings.Replace(srv.URL, "unix://", "unix://nowait:pw@", 1))
	_, err := c.Run(ctx, redisconn.RunOpts{Key: "k", Durability: d}, setCall("k", "v")...)
	if exit.Code(err) != exit.Permission {
		t.Fatalf("Run: err %v (exit %d), want a permission error (77)", err, exit.Code(err))
	}
	err = c.OnNode(ctx, "k", d, func(ctx context.Context, cn *redis.Conn) error { return cn.Set(ctx, "k", "v", 0).Err() })
	if exit.Code(err) != exit.Permission {
		t.Fatalf("OnNode: err %v (exit %d), want a permission error (77)", err, exit.Code(err))
	}
	if got, _ := srv.Do("EXISTS", "k"); got != "0" {
		t.Errorf("k was written before WAIT was refused")
	}

	c = redistest.Connect(t, srv.URL)
	before := commandCalls(t, srv)["wait"]
	for _, d := range []redisconn.Durability{{}, d, d} {
		if _, err := c.Run(ctx, redisconn.RunOpts{Key: "k", Durability: d}, setCall("k", "v")...); err != nil {
			t.Fatal(err)
		}
	}
	if n := commandCalls(t, srv)["wait"] - before; n != 3 {
		t.Errorf("%d WAITs for two writes that wait and one that does not, want 3 (one probe)", n)
	}
}

func TestWaitAOF(t *testing.T) {
	if !redistest.AtLeast(7, 2) {
		t.Skip("WAITAOF needs Redis 7.2 or later; the test server is older (TestWaitAOFRefusedBeforeTheWrite covers it)")
	}
	primary := redistest.NewWith(t, redistest.Options{AOF: true})
	replica := redistest.NewReplica(t, primary, "appendonly yes", "appendfsync always")
	c := redistest.Connect(t, primary.URL)
	d := redisconn.Durability{AOF: true, Replicas: 1, Timeout: 5 * time.Second}
	ack, err := c.Run(context.Background(), redisconn.RunOpts{Key: "k", Durability: d}, setCall("k", "v")...)
	if err != nil || d.Check(ack) != nil || !ack.LocalAOF || ack.Replicas != 1 {
		t.Fatalf("ack %+v, err %v", ack, err)
	}
	replica.Kill()
	if err := primary.WaitReplicas(0, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	d.Timeout = 100 * time.Millisecond
	ack, err = c.Run(context.Background(), redisconn.RunOpts{Key: "k", Durability: d}, setCall("k", "w")...)
	if err != nil || !ack.LocalAOF || ack.Replicas != 0 || d.Check(ack) == nil {
		t.Fatalf("replica gone: ack %+v, err %v", ack, err)
	}
}

// In a cluster the WAIT goes to the primary that holds the key, on the
// connection that wrote: with a replica under one primary only, keys of
// that primary are acknowledged by 1 and keys of the others by 0.
func TestRunDurableCluster(t *testing.T) {
	cl := redistest.NewCluster(t)
	if _, err := cl.AddReplica(filepath.Join(t.TempDir(), "replica"), 0); err != nil {
		t.Fatal(err)
	}
	c := redistest.Connect(t, cl.URL)
	ctx := context.Background()
	owner := cl.Nodes[0].Addr
	cc := c.Client().(*redis.ClusterClient)
	seen := map[bool]int{}
	for i := range 30 {
		key := "k" + strconv.Itoa(i)
		node, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		replicated := node.Options().Addr == owner
		// Long enough for a loaded machine where the replica acknowledges,
		// short where none can.
		d := redisconn.Durability{Replicas: 1, Timeout: 200 * time.Millisecond}
		if replicated {
			d.Timeout = 10 * time.Second
		}
		ack, err := c.Run(ctx, redisconn.RunOpts{Key: key, Durability: d}, setCall(key, "v")...)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if want := map[bool]int{true: 1, false: 0}[replicated]; ack.Replicas != want || ack.Err != nil {
			t.Errorf("%s (on %s, replicated %v): ack %+v, want %d replicas", key, node.Options().Addr, replicated, ack, want)
		}
		seen[replicated]++
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Fatalf("keys on the replicated primary: %d, elsewhere: %d; want both", seen[true], seen[false])
	}
}

// ACLs are a node's own: in a cluster where one primary denies the user
// WAIT, a write to a key of that primary is refused before it is written,
// though a probe of another primary passed.
func TestWaitRefusedOnOneClusterNode(t *testing.T) {
	cl := redistest.NewCluster(t)
	for i, n := range cl.Nodes {
		rule := "+wait"
		if i == 1 {
			rule = "-wait"
		}
		if _, err := n.Do("ACL", "SETUSER", "w", "on", ">pw", "~*", "&*", "+@all", rule); err != nil {
			t.Fatal(err)
		}
	}
	c := redistest.Connect(t, strings.Replace(cl.URL, "redis://", "redis://w:pw@", 1))
	cc := c.Client().(*redis.ClusterClient)
	ctx := context.Background()
	d := redisconn.Durability{Replicas: 1, Timeout: 10 * time.Millisecond}
	on := map[string]string{} // node address: a key it holds
	for i := 0; len(on) < len(cl.Nodes) && i < 1000; i++ {
		key := "k" + strconv.Itoa(i)
		node, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		on[node.Options().Addr] = key
	}
	allowed, denied := on[cl.Nodes[0].Addr], on[cl.Nodes[1].Addr]
	if err := c.CheckDurable(ctx, allowed, d); err != nil {
		t.Fatalf("%s on the primary that allows WAIT: %v", allowed, err)
	}
	_, err := c.Run(ctx, redisconn.RunOpts{Key: denied, Durability: d}, setCall(denied, "v")...)
	if exit.Code(err) != exit.Permission {
		t.Fatalf("Run on the primary that denies WAIT: err %v (exit %d), want a permission error (77)", err, exit.Code(err))
	}
	if got, _ := cl.Nodes[1].Do("EXISTS", denied); got != "0" {
		t.Errorf("%s was written before WAIT was refused", denied)
	}
}
