package ops

import (
	"context"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// startServer starts a real redis-server on a unix socket for one test.
func startServer(t testing.TB, config ...string) *redistest.Server {
	t.Helper()
	srv, err := redistest.Start(redistest.Options{Dir: t.TempDir(), Unix: true, Config: config})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// testConn starts a server and connects to it the way the CLI does.
func testConn(t testing.TB, config ...string) (*Conn, *redistest.Server) {
	t.Helper()
	srv := startServer(t, config...)
	return connectTo(t, srv.URL), srv
}

func connectTo(t testing.TB, url string) *Conn {
	t.Helper()
	c, err := Connect(context.Background(), ConnConfig{URL: url, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// clusterConn starts a real 3-primary cluster for one test and connects to
// it as the CLI does (a cluster client, detected). It skips with -short or
// without redis-cli, which forms the cluster.
func clusterConn(t testing.TB) (*Conn, *redistest.Cluster) {
	t.Helper()
	if testing.Short() {
		t.Skip("cluster test in -short mode")
	}
	if !redistest.HaveCLI() {
		t.Skip("redis-cli not found: cluster tests need it")
	}
	cl, err := redistest.StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop)
	c := connectTo(t, cl.URL)
	if _, ok := c.Client.(*redis.ClusterClient); !ok || !c.Caps.Cluster {
		t.Fatalf("client is %T (cluster %v), want a detected cluster client", c.Client, c.Caps.Cluster)
	}
	return c, cl
}
