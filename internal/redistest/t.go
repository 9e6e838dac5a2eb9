package redistest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

// New starts a server on a unix socket for one test, stopped when the test
// ends. config lines are added to its redis.conf.
func New(t testing.TB, config ...string) *Server {
	t.Helper()
	return NewWith(t, Options{Unix: true, Config: config})
}

// NewWith starts a server with opts for one test (Dir defaults to a
// temporary directory of the test), stopped when the test ends: a unix
// socket or a loopback port, AOF, TLS, a fixed port (see Options).
func NewWith(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	srv, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// RequireNative is NativeBinary for a test that needs a native-IDMP server
// beside the server under test. Without one it skips, or fails when
// IDMPCTL_REQUIRE_NATIVE=1 (make test sets it: CI never skips it silently).
func RequireNative(t testing.TB) string {
	t.Helper()
	b := NativeBinary()
	if b != "" {
		return b
	}
	msg := "no Redis 8.6 server: run scripts/install-redis.sh, or set IDMPCTL_TEST_NATIVE_SERVER"
	if os.Getenv("IDMPCTL_REQUIRE_NATIVE") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// NewNative starts a native-IDMP server (see RequireNative) on a unix
// socket for one test.
func NewNative(t testing.TB, config ...string) *Server {
	t.Helper()
	return NewWith(t, Options{Unix: true, Config: config, Binary: RequireNative(t)})
}

// NewCluster starts a real 3-primary cluster for one test. It skips with
// -short, or without redis-cli (which forms the cluster).
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("cluster test in -short mode")
	}
	if !HaveCLI() {
		t.Skip("redis-cli not found: cluster tests need it")
	}
	cl, err := StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop)
	return cl
}

// Dial opens a client and probes the server (see Capabilities): a failure
// to connect shows at once.
func Dial(ctx context.Context, cfg redisconn.ConnConfig) (*redisconn.Conn, error) {
	c, err := redisconn.Open(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := c.Capabilities(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Connect connects to url the way the CLI does, closed when the test ends.
func Connect(t testing.TB, url string) *redisconn.Conn {
	t.Helper()
	c, err := Dial(context.Background(), redisconn.ConnConfig{URL: url, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Conn starts a server for one test and connects to it as the CLI does.
func Conn(t testing.TB, config ...string) (*redisconn.Conn, *Server) {
	t.Helper()
	srv := New(t, config...)
	return Connect(t, srv.URL), srv
}

// ClusterConn starts a cluster for one test (see NewCluster) and connects to
// it as the CLI does: a cluster client, detected.
func ClusterConn(t testing.TB) (*redisconn.Conn, *Cluster) {
	t.Helper()
	cl := NewCluster(t)
	c := Connect(t, cl.URL)
	if _, ok := c.Client().(*redis.ClusterClient); !ok || !c.Cluster() {
		t.Fatalf("client is %T (cluster %v), want a detected cluster client", c.Client(), c.Cluster())
	}
	return c, cl
}

// Caps is what the server is, as the connection learned it.
func Caps(t testing.TB, c *redisconn.Conn) redisconn.Capabilities {
	t.Helper()
	caps, err := c.Capabilities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return caps
}
