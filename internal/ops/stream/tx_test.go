package stream

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// --mode native on a server without native IDMP is a usage error (64),
// whoever asks: a user who may not run EXEC too (the check's refused EXEC
// must not take the place of the reason the add stopped).
func TestSingleAddNativeModeRefusedWithoutExec(t *testing.T) {
	if redistest.AtLeast(8, 6) && !redistest.IsValkey() {
		t.Skip("the server under test has native IDMP")
	}
	t.Parallel()
	srv := redistest.New(t)
	if _, err := srv.Do("ACL", "SETUSER", "noexec", "on", ">pw", "~*", "&*", "+@all", "-exec"); err != nil {
		t.Fatal(err)
	}
	url := strings.Replace(strings.Replace(srv.URL, "unix://", "unix://noexec:pw@", 1), "redis://", "redis://noexec:pw@", 1)
	c, err := redisconn.Open(redisconn.ConnConfig{URL: url, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := NewStreams(c, ModeNative) // the mode settles on the add's HELLO
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.add1(context.Background(), AddRequest{Stream: "s", PID: "p", IID: "i", Fields: []string{"f", "v"}})
	if exit.Code(err) != exit.Usage {
		t.Fatalf("add: %v (exit %d), want the usage error (64) that the server has no native IDMP", err, exit.Code(err))
	}
	if n, _ := srv.Do("EXISTS", "s"); n != "0" {
		t.Fatal("the stream exists after a refused add")
	}
}

// A server whose EXEC is renamed away takes an emulated add by the script
// alone: an unknown EXEC leaves the check's MULTI open, which must be left
// before the connection serves the script (it failed with
// strconv.ParseInt: parsing "QUEUED", exit 70). Natively, the single add
// needs MULTI, EXEC, WATCH and EXISTS: without one, a configuration error
// (78), nothing written.
func TestSingleAddExecRenamed(t *testing.T) {
	t.Parallel()
	// EXEC DISCARD: the MULTI cannot be ended; its connection must not serve
	// another command (it would be queued: QUEUED, not PONG).
	for _, cmd := range []string{"MULTI", "EXEC", "WATCH", "EXISTS", "EXEC DISCARD"} {
		t.Run("native-"+strings.ReplaceAll(cmd, " ", "-"), func(t *testing.T) {
			t.Parallel()
			srv := redistest.NewNative(t, renamed(cmd)...)
			s := openAuto(t, srv.URL)
			_, err := s.add1(context.Background(), AddRequest{Stream: "s", PID: "p", IID: "i", Fields: []string{"f", "v"}})
			if exit.Code(err) != exit.Config || !strings.Contains(err.Error(), "renamed away") {
				t.Fatalf("add: %v (exit %d), want 78: %s renamed away", err, exit.Code(err), cmd)
			}
			if typ, _ := srv.Do("TYPE", "s"); typ != "none" {
				t.Fatal("the stream exists after a refused add")
			}
			if pong, err := s.Conn.Client().Ping(context.Background()).Result(); pong != "PONG" {
				t.Fatalf("PING after the refused add: %q, %v", pong, err)
			}
		})
	}
	// The emulated add goes on by its script, on a connection out of MULTI:
	// DISCARD renamed away, or refused (a user without it), the one the
	// check used is closed.
	for _, cmd := range []string{"EXEC", "EXEC DISCARD", "EXEC -discard"} {
		t.Run("emulated-"+strings.ReplaceAll(cmd, " ", "-"), func(t *testing.T) {
			t.Parallel()
			if redistest.AtLeast(8, 6) && !redistest.IsValkey() {
				t.Skip("the server under test has native IDMP")
			}
			srv := redistest.New(t, renamed(strings.TrimSuffix(cmd, " -discard"))...)
			url := srv.URL
			if strings.HasSuffix(cmd, "-discard") {
				if _, err := srv.Do("ACL", "SETUSER", "nodiscard", "on", ">pw", "~*", "&*", "+@all", "-discard"); err != nil {
					t.Fatal(err)
				}
				url = strings.Replace(strings.Replace(url, "unix://", "unix://nodiscard:pw@", 1), "redis://", "redis://nodiscard:pw@", 1)
			}
			s := openAuto(t, url)
			for i, dup := range []bool{false, true} {
				r, err := s.add1(context.Background(), AddRequest{Stream: "s", PID: "p", IID: "i", Fields: []string{"f", "v"}})
				if err != nil || r.Duplicate != dup {
					t.Fatalf("add %d: %+v, %v (exit %d), want duplicate=%v", i+1, r, err, exit.Code(err), dup)
				}
			}
			if n, _ := srv.Do("XLEN", "s"); n != "1" {
				t.Fatalf("XLEN s = %v, want 1", n)
			}
		})
	}
}

// renamed is the server config that renames each of cmds away.
func renamed(cmds string) []string {
	var config []string
	for _, c := range strings.Fields(cmds) {
		config = append(config, "rename-command "+c+` ""`)
	}
	return config
}

// openAuto opens streams in auto mode on a Conn of its own to url.
func openAuto(t *testing.T, url string) *Streams {
	c, err := redisconn.Open(redisconn.ConnConfig{URL: url, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := NewStreams(c, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
