package exec

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// roSession runs lines in read-only mode and returns each reply's text
// ("REFUSED ..." for a refusal, never sent).
func roSession(t *testing.T, conn *redisconn.Conn, lines ...string) []string {
	t.Helper()
	var out []string
	s, err := Open(context.Background(), conn, Options{Mode: stream.ModeAuto, Timeout: 5 * time.Second, ReadOnly: true,
		Emit: func(r resp.Reply, _ bool) {
			switch {
			case r.IsError() && r.Int == ReadOnlyRefused:
				out = append(out, "REFUSED "+r.Str)
			case r.IsError():
				out = append(out, "ERROR "+r.Str)
			default:
				out = append(out, "OK")
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	err = RunLines(context.Background(), s, strings.NewReader(strings.Join(lines, "\n")))
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Issue 24 item 8: read-only mode runs what the server marks readonly,
// what changes no data, and what the server does not know (it refuses
// it); it refuses the rest, and the IDMP surface exec serves itself by what
// it does.
func TestReadOnlyGate(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	if _, err := srv.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{ // line: runs
		"GET k": true, "SCAN 0": true, "XINFO STREAM nosuch": true, "EVAL_RO 'return 1' 0": true,
		"PING": true, "INFO server": true, "CONFIG GET maxmemory": true, "CLIENT LIST": true, "TIME": true,
		"NOSUCHCOMMAND": true, "OBJECT ENCODING k": true,
		"SET k x": false, "DEL k": false, "EXPIRE k 10": false, "FLUSHALL": false, "EVAL 'return 1' 0": false,
		"XADD s IDMP p i * f v": false, "XADD s * f v": false, "XCFGSET s IDMP-DURATION 5": false,
		"CONFIG SET maxmemory 1": false, "RENAME k k2": false, "COPY k k2": false, "SCRIPT FLUSH": false,
		"CLIENT KILL ID 999999": false, "SHUTDOWN": false, "PUBLISH c m": false,
	}
	for line, runs := range lines {
		got := roSession(t, conn, line)
		if len(got) != 1 || strings.HasPrefix(got[0], "REFUSED ") == runs {
			t.Errorf("%s: %v, want runs=%v", line, got, runs)
		}
	}
	if v, _ := srv.Do("GET", "k"); v != "v" {
		t.Errorf("k is %q: something wrote", v)
	}
	// In a transaction the refusal aborts EXEC: no part of it runs.
	got := roSession(t, conn, "MULTI", "GET k", "SET k x", "EXEC")
	if len(got) != 4 || got[0] != "OK" || !strings.HasPrefix(got[2], "REFUSED ") || !strings.HasPrefix(got[3], "ERROR EXECABORT") {
		t.Errorf("a transaction with a refused command: %q", got)
	}
}

// When COMMAND INFO itself is denied (an ACL user with +@read, which does
// not hold COMMAND), idmpctl's own list of read-only commands stands in,
// and every other command is refused: the mode never guesses in favour of
// a write.
func TestReadOnlyGateWithoutCommandInfo(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	if _, err := srv.Do("ACL", "SETUSER", "reader", "on", ">pw", "~*", "+@read", "+@connection", "-command", "+setrange"); err != nil {
		t.Fatal(err)
	}
	conn, err := redisconn.Open(redisconn.ConnConfig{URL: "redis://reader:pw@" + srv.Addr, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	got := roSession(t, conn, "GET k", "XLEN s", "PING", "SETRANGE k 0 x", "HSTRLEN h f")
	if len(got) != 5 || got[0] != "OK" || got[1] != "OK" || got[2] != "OK" || got[4] != "OK" ||
		!strings.Contains(got[3], "REFUSED ERR refused in read-only mode (--read-only or IDMPCTL_READ_ONLY): COMMAND INFO could not say whether SETRANGE writes (NOPERM") ||
		!strings.HasSuffix(got[3], "and it is not on idmpctl's own list of read-only commands") {
		t.Errorf("without COMMAND: %q", got)
	}
}

// Every command of knownReadOnly is one the server marks readonly.
func TestKnownReadOnlyAreReadOnly(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	s, err := Open(context.Background(), conn, Options{Mode: stream.ModeEmulated, Timeout: 5 * time.Second, Emit: func(resp.Reply, bool) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, name := range knownReadOnly {
		info, err := s.commandInfo(context.Background(), name, "")
		if err != nil || info == nil || !slices.Contains(info.flags, "readonly") {
			t.Errorf("%s: %+v %v, want a readonly command", name, info, err)
		}
	}
}
