package ops

import (
	"context"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/redistest"
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
