package e2e

// Issue 24 item 5: redis-cli's -h and -p reach a server on a TCP port, over
// the URL of the environment, and -n picks its database.

import (
	"net"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

func TestRedisCLIHostPort(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	host, port, err := net.SplitHostPort(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	// The environment names a socket nothing listens on: -h and -p win.
	c := clitest.New(t, "IDMPCTL_URL=unix:///nonexistent/redis.sock")
	if r := c.Expect(0, "-h", host, "-p", port, "inspect", "--server"); !strings.Contains(r.Stdout, "role\tmaster") {
		t.Errorf("inspect --server through -h -p:\n%s", r)
	}
	c.Expect(0, "-h", host, "-p", port, "-n", "2", "xadd", "s", "--pid", "p", "--iid", "a", "f", "1")
	if r := c.Expect(0, "--port", port, "--host", host, "--db", "2", "exec", "XLEN", "s"); strings.TrimSpace(r.Stdout) != "1" {
		t.Errorf("XLEN s in db 2: %s", r)
	}
	if r := c.Expect(0, "-h", host, "-p", port, "exec", "XLEN", "s"); strings.TrimSpace(r.Stdout) != "0" {
		t.Errorf("XLEN s in db 0: %s", r)
	}
	// -p alone keeps the URL's host (here the default 127.0.0.1).
	c2 := clitest.New(t)
	c2.Expect(0, "-p", port, "inspect", "--server")
}
