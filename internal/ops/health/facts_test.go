package health

import (
	"context"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// How the facts are collected, on real servers: the settings as configured,
// the version INFO reports, a refused CONFIG GET kept as a fact, and every
// primary of a cluster. The lints are then the pure functions above; this
// server has no native IDMP, so they are asked as if it were Redis 8.6.1.
func TestReadServerFactsFromRealServers(t *testing.T) {
	ctx := context.Background()
	srv := redistest.NewWith(t, redistest.Options{AOF: true, Config: []string{
		"aof-use-rdb-preamble no", "repl-diskless-load swapdb",
		"user mon on >mon-pw ~* +@read +@connection +info +time",
	}})
	c := redistest.Connect(t, srv.URL)
	f, err := redisconn.ReadServerFacts(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	caps := redistest.Caps(t, c)
	if f.Version != caps.Version || f.Version == "" || f.Product != caps.Product || f.NativeIDMP != caps.NativeIDMP {
		t.Errorf("facts %+v, capabilities %+v", f, caps)
	}
	if len(f.Nodes) != 1 {
		t.Fatalf("nodes %+v", f.Nodes)
	}
	want := map[string]string{"appendonly": "yes", "aof-use-rdb-preamble": "no", "repl-diskless-load": "swapdb"}
	for k, v := range want {
		if got := f.Nodes[0].Config[k]; got != v {
			t.Errorf("%s = %q, want %q (%+v)", k, got, v, f.Nodes[0])
		}
	}
	if f.Nodes[0].Role != "master" || f.Nodes[0].Replicas != 0 {
		t.Errorf("role %q, %d replicas (INFO replication): %+v", f.Nodes[0].Role, f.Nodes[0].Replicas, f.Nodes[0])
	}
	as861 := f
	as861.Product, as861.Version, as861.NativeIDMP = "redis", "8.6.1", true
	if got := codes(Server(as861)); got != "aof-rewrite-idmp,swapdb-idmp,idmp-expiry-unlogged" {
		t.Errorf("lints of these facts as 8.6.1: %q", got)
	}
	if !caps.NativeIDMP && len(Server(f)) != 0 {
		t.Errorf("a server without native IDMP got lints: %+v", Server(f))
	}

	// A monitoring user without CONFIG: the facts say so, nothing fails.
	mon := redistest.Connect(t, "redis://mon:mon-pw@"+srv.Addr+"/0")
	mf, err := redisconn.ReadServerFacts(ctx, mon)
	if err != nil {
		t.Fatal(err)
	}
	if len(mf.Nodes) != 1 || mf.Nodes[0].Config != nil || !strings.Contains(mf.Nodes[0].ConfigError, "NOPERM") {
		t.Errorf("facts as mon: %+v", mf.Nodes)
	}
	mf.Product, mf.Version, mf.NativeIDMP = "redis", "8.6.1", true
	if got := codes(Server(mf)); got != "idmp-bugs-unchecked" {
		t.Errorf("lints without CONFIG: %q", got)
	}
}

// A primary counts its replicas, and a replica knows it is one (INFO
// replication): both get the lint of expiries that replication does not
// carry, whatever their AOF.
func TestReadServerFactsReplication(t *testing.T) {
	ctx := context.Background()
	primary := redistest.NewWith(t, redistest.Options{})
	replica := redistest.NewReplica(t, primary)
	for _, c := range []struct {
		srv      *redistest.Server
		role     string
		replicas int
	}{{primary, "master", 1}, {replica, "slave", 0}} {
		f, err := redisconn.ReadServerFacts(ctx, redistest.Connect(t, c.srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Nodes) != 1 || f.Nodes[0].Role != c.role || f.Nodes[0].Replicas != c.replicas {
			t.Fatalf("%s: facts %+v, want role %s with %d replicas", c.srv.Addr, f.Nodes, c.role, c.replicas)
		}
		f.Product, f.Version, f.NativeIDMP = "redis", "8.6.3", true
		if got := codes(Server(f)); got != "idmp-expiry-unlogged" {
			t.Errorf("%s (%s): lints %q", c.srv.Addr, c.role, got)
		}
	}
}

func TestReadServerFactsCluster(t *testing.T) {
	c, cl := redistest.ClusterConn(t)
	if _, err := cl.Nodes[1].Do("CONFIG", "SET", "repl-diskless-load", "swapdb"); err != nil {
		t.Fatal(err)
	}
	f, err := redisconn.ReadServerFacts(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes) != 3 {
		t.Fatalf("nodes %+v", f.Nodes)
	}
	swapdb := 0
	for _, n := range f.Nodes {
		if n.Addr == "" || n.Config["appendonly"] == "" {
			t.Errorf("node %+v", n)
		}
		if n.Config["repl-diskless-load"] == "swapdb" {
			swapdb++
			if n.Addr != cl.Nodes[1].Addr {
				t.Errorf("swapdb on %s, set on %s", n.Addr, cl.Nodes[1].Addr)
			}
		}
	}
	f.Product, f.Version, f.NativeIDMP = "redis", "8.6.1", true
	l := Server(f)
	if swapdb != 1 || codes(l) != "swapdb-idmp" || !strings.HasPrefix(l[0].Message, "node "+cl.Nodes[1].Addr+": ") {
		t.Errorf("swapdb nodes %d, lints %+v", swapdb, l)
	}
}
