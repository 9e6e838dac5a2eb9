package redisconn_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestConnectProbesStandalone(t *testing.T) {
	c, _ := redistest.Conn(t)
	caps := redistest.Caps(t, c)
	if caps.Cluster || caps.Mode != "standalone" || c.Cluster() {
		t.Fatalf("caps = %+v, want standalone", caps)
	}
	if caps.Version == "" {
		t.Fatal("no version probed")
	}
}

// A server that refuses HELLO (renamed away), to a user who may not run
// COMMAND either, is known from INFO server: Redis 8.6 has native IDMP.
// Before: its version stayed unknown and auto mode went emulated on it.
func TestProbeWithoutHELLO(t *testing.T) {
	t.Parallel()
	srv := redistest.NewNative(t, `rename-command HELLO ""`)
	if _, err := srv.Do("ACL", "SETUSER", "nocmd", "on", ">pw", "~*", "&*", "+@all", "-command"); err != nil {
		t.Fatal(err)
	}
	caps := redistest.Caps(t, redistest.Connect(t, strings.Replace(srv.URL, "unix://", "unix://nocmd:pw@", 1)))
	if !caps.NativeIDMP || !strings.HasPrefix(caps.Version, "8.") || caps.Mode != "standalone" {
		t.Fatalf("caps = %+v, want Redis 8.6 with native IDMP", caps)
	}
}

// Open touches no server; the first command dials, and a bare HELLO 2 is
// answered without a round trip: the server sees the command alone.
func TestOpenSendsNoHandshake(t *testing.T) {
	srv := redistest.New(t)
	c, err := redisconn.Open(redisconn.ConnConfig{URL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := commandCalls(t, srv)
	ctx := context.Background()
	if err := c.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	after := commandCalls(t, srv)
	if after["set"] != before["set"]+1 || after["hello"] != before["hello"] || after["client|setinfo"] != before["client|setinfo"] {
		t.Errorf("commands sent for one SET: before %v, after %v; want one SET and no HELLO or CLIENT SETINFO", before, after)
	}
	if c.Cluster() {
		t.Error("a standalone server made a cluster client")
	}
}

// commandCalls reads INFO commandstats: calls by command name.
func commandCalls(t *testing.T, srv *redistest.Server) map[string]int {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		calls[name] = n
	}
	return calls
}

// A plain client that reaches a cluster node learns from MOVED and switches
// to a cluster client, running the command again.
func TestDoFollowsTheCluster(t *testing.T) {
	cl := redistest.NewCluster(t)
	ctx := context.Background()
	for _, node := range cl.Nodes {
		c, err := redisconn.Open(redisconn.ConnConfig{URL: node.URL, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 { // keys on every node
			key := "k" + strconv.Itoa(i)
			if err := c.Do(func(rc redis.UniversalClient) error { return rc.Set(ctx, key, "v", 0).Err() }); err != nil {
				t.Fatalf("%s via %s: %v", key, node.Addr, err)
			}
		}
		if !c.Cluster() {
			t.Errorf("via %s: no switch to a cluster client", node.Addr)
		}
		c.Close()
	}
}

func TestConnectErrorsAreClassified(t *testing.T) {
	ctx := context.Background()
	_, err := redistest.Dial(ctx, redisconn.ConnConfig{URL: "redis://127.0.0.1:1/0", Timeout: time.Second})
	if got := exit.Code(err); got != exit.Unavailable {
		t.Errorf("refused: code %d (%v), want %d", got, err, exit.Unavailable)
	}
	_, err = redistest.Dial(ctx, redisconn.ConnConfig{URL: "http://u:hunter2@x/0"})
	if got := exit.Code(err); got != exit.Config {
		t.Errorf("bad URL: code %d (%v), want %d", got, err, exit.Config)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("password leaked into %q", err)
	}
}

func TestConnectWrongPassword(t *testing.T) {
	srv := redistest.New(t, "requirepass s3cret")
	ctx := context.Background()
	_, err := redistest.Dial(ctx, redisconn.ConnConfig{URL: srv.URL, Timeout: time.Second})
	if got := exit.Code(err); got != exit.Permission {
		t.Errorf("no password: code %d (%v)", got, err)
	}
	_, err = redistest.Dial(ctx, redisconn.ConnConfig{URL: srv.URL, Password: "nope", Timeout: time.Second})
	if got := exit.Code(err); got != exit.Permission {
		t.Errorf("wrong password: code %d (%v)", got, err)
	}
	c, err := redistest.Dial(ctx, redisconn.ConnConfig{URL: srv.URL, Password: "s3cret", Timeout: time.Second})
	if err != nil {
		t.Fatalf("right password: %v", err)
	}
	c.Close()
}

// Issue 24 item 6: a password on a server that asks for none. Every path
// (go-redis's pool, exec's raw connection, a batch's pipe) goes on and
// tells the caller, as redis-cli warns and goes on; the URL's database is
// still selected (after the AUTH: go-redis would SELECT before it).
func TestPasswordNotNeeded(t *testing.T) {
	srv := redistest.NewWith(t, redistest.Options{})
	var told atomic.Int32
	cfg := redisconn.ConnConfig{URL: "redis://:nosuch@" + srv.Addr + "/2", Timeout: 5 * time.Second,
		PasswordNotNeeded: func(err error) {
			if !redisconn.PasswordNotNeeded(err) {
				t.Errorf("told of %v", err)
			}
			told.Add(1)
		}}
	c, err := redisconn.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the pool: %v", err)
	}
	if told.Load() == 0 {
		t.Error("the pool's connection did not tell")
	}
	p, err := c.OpenPipe(ctx, "k", "")
	if err != nil {
		t.Fatalf("a pipe: %v", err)
	}
	if err := p.Send([][]any{{"get", "k"}}); err != nil {
		t.Fatal(err)
	}
	if v, err := p.Recv(); err != nil || v != "v" {
		t.Errorf("GET k through the pipe (db 2) = %v, %v", v, err)
	}
	p.Close()
	before := told.Load()
	ep, opening, err := c.DialPipe(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ep.Close()
	if len(opening) != 2 || opening[0][0] != "AUTH" || len(opening[0]) != 2 || strings.Join(opening[1], " ") != "SELECT 2" {
		t.Errorf("exec's opening commands: %q", opening)
	}
	if told.Load() < before {
		t.Error("count went down")
	}
	// db 0 holds nothing: the SELECT came after the tolerated AUTH.
	plain := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer plain.Close()
	if n, err := plain.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("k in db 0: %d %v", n, err)
	}
	for _, msg := range []string{
		"ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
		"ERR Client sent AUTH, but no password is set",
	} {
		if !redisconn.PasswordNotNeeded(errors.New(msg)) {
			t.Errorf("not recognised: %s", msg)
		}
	}
	if redisconn.PasswordNotNeeded(errors.New("WRONGPASS invalid username-password pair or user is disabled.")) {
		t.Error("WRONGPASS taken for a password not needed")
	}
}
