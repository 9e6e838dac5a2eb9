package exec

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// nativeSession is session in auto mode (native on Redis 8.6.3).
func nativeSession(t *testing.T, conn *redisconn.Conn, lines ...string) []string {
	t.Helper()
	return sessionIn(t, conn, stream.ModeAuto, lines...)
}

// On a native server, XADD IDMP/IDMPAUTO through exec dedupes against the
// stream's emulated state (written before an upgrade): in a run of
// lines, inside MULTI and as one command.
func TestExecGuardsNativeAdds(t *testing.T) {
	t.Parallel()
	srv := redistest.NewNative(t)
	conn := redistest.Connect(t, srv.URL)
	old := session(t, conn, "XADD s IDMP p i1 * a 1", "XADD s IDMPAUTO p * a 2")
	i1, auto := id(t, old[0]), id(t, old[1])
	got := nativeSession(t, conn,
		"XADD s IDMP p i1 * a 9",
		"XADD s IDMPAUTO p * a 2",
		"MULTI",
		"XADD s IDMP p i1 * a 9",
		"XADD s KEEPREF IDMP p i2 MAXLEN ~ 100 * a 3",
		"XADD s IDMP p i2 * a 3",
		"EXEC",
		"XADD s NOMKSTREAM IDMP p i1 *",
		"XLEN s")
	if id(t, got[0]) != i1 || id(t, got[1]) != auto {
		t.Fatalf("retries: %q, want %s and %s", got[:2], i1, auto)
	}
	if id(t, got[6]) != i1 || id(t, got[7]) != id(t, got[8]) {
		t.Fatalf("transaction: %q", got[2:9])
	}
	want(t, got[9:], "(error) ERR wrong number of arguments for 'xadd' command", "(integer) 3")

	s, err := Open(context.Background(), conn, Options{Mode: stream.ModeAuto, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.One(context.Background(), []string{"XADD", "s", "IDMP", "p", "i1", "*", "a", "1"})
	if err != nil || r.Str != i1 {
		t.Fatalf("one command: %+v, %v", r, err)
	}
}

// A user who may not run scripts is told why, in idmpctl's words.
func TestExecGuardWithoutScripts(t *testing.T) {
	t.Parallel()
	srv := redistest.NewNative(t)
	if _, err := srv.Do("ACL", "SETUSER", "noeval", "on", ">pw", "~*", "&*", "+@all", "-@scripting"); err != nil {
		t.Fatal(err)
	}
	conn := redistest.Connect(t, strings.Replace(srv.URL, "unix://", "unix://noeval:pw@", 1))
	got := nativeSession(t, conn, "XADD s IDMP p i1 * a 1", "XLEN s")
	if !strings.HasPrefix(got[0], "(error) NOPERM idmpctl exec sends XADD IDMP/IDMPAUTO through a script") || got[1] != "(integer) 0" {
		t.Fatalf("replies %q", got)
	}
}
