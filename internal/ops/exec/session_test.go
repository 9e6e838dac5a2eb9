package exec

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// session runs lines on a fresh emulated session and returns the replies
// as redis-cli shows them on a terminal, one line each.
func session(t *testing.T, conn *redisconn.Conn, lines ...string) []string {
	t.Helper()
	return sessionIn(t, conn, stream.ModeEmulated, lines...)
}

// sessionIn is session in a mode of choice.
func sessionIn(t *testing.T, conn *redisconn.Conn, mode stream.Mode, lines ...string) []string {
	t.Helper()
	var out []byte
	s, err := Open(context.Background(), conn, Options{Mode: mode, Timeout: 5 * time.Second,
		Emit: func(r resp.Reply, _ bool) { out = render.AppendReplyTTY(out, r) }})
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
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

func want(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("replies:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// ids checks that a line is a quoted entry ID and returns it.
func id(t *testing.T, line string) string {
	t.Helper()
	s := strings.Trim(strings.TrimSpace(line[strings.Index(line, ")")+1:]), `"`)
	if !strings.HasPrefix(line, `"`) && !strings.Contains(line, ") \"") || !strings.Contains(s, "-") {
		t.Fatalf("%q is no entry ID", line)
	}
	return s
}

// R11: a repeat later in the same transaction dedupes (Redis's "XADD IDMP
// pipelined requests"), and so does one later in a run of lines.
func TestExecTransactionAndRunDedupe(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	got := session(t, conn,
		`MULTI`, `XADD mystream IDMP p1 "req-1" * field "value1"`, `XADD mystream IDMP p1 "req-2" * field "value2"`,
		`XADD mystream IDMP p1 "req-1" * field "value3"`, `XADD mystream IDMP p1 "req-3" * field "value4"`, `EXEC`,
		`XLEN mystream`,
		`XADD runs IDMP p1 a * f 1`, `XADD runs IDMP p1 b * f 2`, `XADD runs IDMP p1 a * f 3`, `XADD runs IDMPAUTO p1 * f 1`, `XADD runs IDMPAUTO p1 * f 1`,
		`XLEN runs`, `XADD gone NOMKSTREAM IDMP p1 a * f v`, `XADD gone NOMKSTREAM IDMP p1 b * f v`, `EXISTS gone`)
	if len(got) != 19 {
		t.Fatalf("replies: %q", got)
	}
	want(t, got[:5], "OK", "QUEUED", "QUEUED", "QUEUED", "QUEUED")
	id1, id2, dup, id3 := id(t, got[5]), id(t, got[6]), id(t, got[7]), id(t, got[8])
	if dup != id1 || id2 == id1 || id3 == id2 {
		t.Fatalf("EXEC: %q", got[5:9])
	}
	want(t, got[9:10], "(integer) 3")
	if id(t, got[12]) != id(t, got[10]) || id(t, got[11]) == id(t, got[10]) || id(t, got[14]) != id(t, got[13]) {
		t.Fatalf("run: %q", got[10:15])
	}
	want(t, got[15:], "(integer) 3", "(nil)", "(nil)", "(integer) 0")
}

// Errors inside MULTI come where Redis gives them: an arity error when
// queued (EXECABORT), a syntax error at EXEC in its element.
func TestExecTransactionErrors(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	got := session(t, conn,
		`MULTI`, `XADD s IDMP p1 i1 * f v`, `XADD s *`, `EXEC`, `EXISTS s`,
		`MULTI`, `XADD s IDMP p1 i1 * f v`, `XADD s IDMP p1 * f v`, `XCFGSET s IDMP-MAXSIZE 0`, `XCFGSET s IDMP-MAXSIZE 5`, `EXEC`,
		`MULTI`, `XADD s IDMP p1 i2 * f v`, `DISCARD`, `XLEN s`)
	want(t, got[:5], "OK", "QUEUED", "(error) ERR wrong number of arguments for 'xadd' command",
		"(error) EXECABORT Transaction discarded because of previous errors.", "(integer) 0")
	want(t, got[5:10], "OK", "QUEUED", "QUEUED", "QUEUED", "QUEUED")
	id(t, got[10])
	want(t, got[11:], "2) (error) ERR Invalid stream ID specified as stream command argument",
		"3) (error) ERR IDMP-MAXSIZE must be between 1 and 10000 entries", "4) OK", "OK", "QUEUED", "OK", "(integer) 1")
}

// XCFGSET with a parameter given twice is refused and changes nothing: the
// settings stay and the map is not cleared (the retry dedupes), inside
// MULTI too (issue 22, root cause 3).
func TestExecXCfgSetTwice(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	got := session(t, conn,
		`XADD s IDMP p i1 * f v`,
		`XCFGSET s IDMP-DURATION 100 IDMP-DURATION 60`, `XCFGSET s IDMP-MAXSIZE 5 IDMP-DURATION 60 IDMP-MAXSIZE 5`,
		`XADD s IDMP p i1 * f v`,
		`MULTI`, `XCFGSET s IDMP-DURATION 60 IDMP-DURATION 60`, `XADD s IDMP p i1 * f v`, `EXEC`,
		`XLEN s`, `XINFO STREAM s`)
	first := id(t, got[0])
	want(t, got[1:3], "(error) ERR IDMP-DURATION specified multiple times", "(error) ERR IDMP-MAXSIZE specified multiple times")
	if id(t, got[3]) != first {
		t.Fatalf("the retry after the refusals: %q, want %q", got[3], first)
	}
	want(t, got[4:8], "OK", "QUEUED", "QUEUED", "1) (error) ERR IDMP-DURATION specified multiple times")
	if id(t, got[8]) != first {
		t.Fatalf("the retry in MULTI: %q, want %q", got[8], first)
	}
	want(t, got[9:10], "(integer) 1")
	info := strings.Join(got[10:], "\n")
	for _, w := range []string{"15) \"idmp-duration\"\n16) (integer) 100", "17) \"idmp-maxsize\"\n18) (integer) 100",
		"21) \"iids-tracked\"\n22) (integer) 1", "25) \"iids-duplicates\"\n26) (integer) 2"} {
		if !strings.Contains(info, w) {
			t.Errorf("XINFO STREAM s lacks %q:\n%s", w, info)
		}
	}
}

// XCFGSET looks the key up before it reads its arguments, as Redis 8.6.3
// does: a missing key and another type come before an argument error, in
// MULTI too (issue 22, root cause 4).
func TestExecXCfgSetLooksUpFirst(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	got := session(t, conn,
		`XCFGSET nokey IDMP-DURATION 0`, `XCFGSET nokey`, `SET str x`, `XCFGSET str IDMP-DURATION x`,
		`XADD s 1-1 f v`, `XCFGSET s`,
		`MULTI`, `XCFGSET nokey IDMP-MAXSIZE 0`, `XCFGSET str`, `XCFGSET s IDMP-MAXSIZE 10001`, `XCFGSET s IDMP-MAXSIZE 7`, `EXEC`,
		`XCFGSET`, `EXISTS nokey`)
	wrongType := "WRONGTYPE Operation against a key holding the wrong kind of value"
	want(t, got, "(error) ERR no such key", "(error) ERR no such key", "OK", "(error) "+wrongType,
		`"1-1"`, "(error) ERR At least one parameter must be specified",
		"OK", "QUEUED", "QUEUED", "QUEUED", "QUEUED",
		"1) (error) ERR no such key", "2) (error) "+wrongType, "3) (error) ERR IDMP-MAXSIZE must be between 1 and 10000 entries", "4) OK",
		"(error) ERR wrong number of arguments for 'xcfgset' command", "(integer) 0")
}

// CONFIG GET shows a parameter named without a wildcard as it was typed,
// and a glob's match under its own name; the first pattern to match a
// parameter names it (issue 22, root cause 6), whether the server is
// asked (a pattern that may match its own parameters) or not.
func TestExecConfigGetNames(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	got := session(t, conn, `CONFIG GET STREAM-IDMP-MAXSIZE`, `CONFIG GET Stream-Idmp-Duration stream-idmp-*`,
		`CONFIG GET stream-idmp\-duration`, `CONFIG GET maxclients Stream-Idmp-MaxSize`)
	want(t, got[:7], `1) "STREAM-IDMP-MAXSIZE"`, `2) "100"`,
		`1) "Stream-Idmp-Duration"`, `2) "100"`, `3) "stream-idmp-maxsize"`, `4) "100"`,
		"(empty array)")
	// The server's own and ours, in any order (Redis 8.6 lists its own in
	// its dictionary's hash order).
	pairs := map[string]string{}
	for i := 7; i+1 < len(got); i += 2 {
		pairs[got[i][strings.Index(got[i], " ")+1:]] = got[i+1][strings.Index(got[i+1], " ")+1:]
	}
	if len(got) != 11 || pairs[`"maxclients"`] == "" || pairs[`"Stream-Idmp-MaxSize"`] != `"100"` {
		t.Fatalf("CONFIG GET maxclients Stream-Idmp-MaxSize: %q", got[7:])
	}
}

// WATCH: a watched key changed by another client makes EXEC nil, and the
// queued add writes nothing.
func TestExecWatch(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	var out []byte
	s, err := Open(context.Background(), conn, Options{Mode: stream.ModeEmulated, Timeout: 5 * time.Second,
		Emit: func(r resp.Reply, _ bool) { out = render.AppendReplyTTY(out, r) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, l := range []string{`WATCH s`, `MULTI`, `XADD s IDMP p i * f v`} {
		args, _ := SplitLine(l)
		if err := s.Do(ctx, args); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("SET", "s", "x"); err != nil {
		t.Fatal(err)
	}
	if err := s.Do(ctx, []string{"EXEC"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	want(t, strings.Split(strings.TrimSpace(string(out)), "\n"), "OK", "OK", "QUEUED", "(nil)")
}

// RENAME, RENAMENX and COPY carry the emulated state with the stream (as
// Redis 8.6.2 does natively); the old name remembers nothing.
func TestExecMoveCarriesState(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	got := session(t, conn,
		`XADD s * a b`, `XCFGSET s IDMP-MAXSIZE 7`, `XADD s IDMP p1 i1 * f v`, `RENAME s t`, `XADD t IDMP p1 i1 * f v`,
		`XADD s IDMP p1 i1 * f v`, `COPY t u`, `XADD u IDMP p1 i1 * f v`, `XADD t IDMP p1 i2 * f v`, `XADD u IDMP p1 i2 * f v`,
		`RENAMENX t u`, `RENAME nope x`, `COPY nope x`, `SET str v`, `RENAME str t`, `XADD t IDMP p1 i1 * f v`,
		`XINFO STREAM u`, `EXISTS s`)
	// The old name remembers nothing: its add wrote a new stream.
	want(t, got[len(got)-1:], "(integer) 1")
	got = got[1 : len(got)-1]
	want(t, got[0:1], "OK")
	first := id(t, got[1])
	want(t, got[2:3], "OK")
	if id(t, got[3]) != first || id(t, got[6]) != first {
		t.Fatalf("replies %q", got)
	}
	want(t, got[5:6], "(integer) 1")
	want(t, got[9:14], "(integer) 0", "(error) ERR no such key", "(integer) 0", "OK", "OK")
	want(t, got[14:15], "(error) WRONGTYPE Operation against a key holding the wrong kind of value")
	info := strings.Join(got[15:], "\n")
	for _, f := range []string{`"idmp-maxsize"`, "18) (integer) 7", `"iids-added"`} {
		if !strings.Contains(info, f) {
			t.Fatalf("XINFO STREAM u lacks %s:\n%s", f, info)
		}
	}
}

// XINFO STREAM has the six fields after recorded-first-entry-id; CONFIG
// GET has the defaults; errors are Redis's.
func TestExecInfoAndConfig(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	got := session(t, conn, `XADD plain * f v`, `XINFO STREAM plain`)
	info := strings.Join(got[1:], "\n")
	for i, f := range []string{"recorded-first-entry-id", "idmp-duration", "idmp-maxsize", "pids-tracked", "iids-tracked", "iids-added", "iids-duplicates", "groups"} {
		if at := strings.Index(info, `"`+f+`"`); at < 0 || i > 0 && at < strings.Index(info, `"recorded-first-entry-id"`) {
			t.Fatalf("field %s out of place:\n%s", f, info)
		}
	}
	want(t, session(t, conn, `SUBSCRIBE ch`, `PING`), "(error) ERR idmpctl exec runs commands that answer once: SUBSCRIBE needs redis-cli", "PONG")
	want(t, session(t, conn, `CONFIG GET stream-idmp-*`, `XINFO STREAM nope`, `XCFGSET nope IDMP-MAXSIZE 5`, `SET str x`, `XINFO STREAM str`, `XCFGSET str IDMP-MAXSIZE 5`),
		`1) "stream-idmp-duration"`, `2) "100"`, `3) "stream-idmp-maxsize"`, `4) "100"`, "(error) ERR no such key", "(error) ERR no such key", "OK",
		"(error) WRONGTYPE Operation against a key holding the wrong kind of value", "(error) WRONGTYPE Operation against a key holding the wrong kind of value")
}

// A script holds a conversation: each reply arrives before the next line
// is written (the session sends whenever stdin has nothing more ready).
func TestExecConversation(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s, err := Open(context.Background(), conn, Options{Mode: stream.ModeEmulated, Timeout: 5 * time.Second,
		Emit: func(r resp.Reply, _ bool) { _, _ = outW.Write(render.AppendReplyRaw(nil, r)) }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- RunLines(context.Background(), s, inR) }()
	replies := bufio.NewReader(outR)
	ask := func(line string) string {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() { l, _ := replies.ReadString('\n'); got <- l }()
		select {
		case l := <-got:
			return strings.TrimSpace(l)
		case <-time.After(5 * time.Second):
			t.Fatalf("no reply to %q", line)
		}
		return ""
	}
	first := ask(`XADD s IDMP p i * f v`)
	if again := ask(`XADD s IDMP p i * f v`); again != first || !strings.Contains(first, "-") {
		t.Fatalf("replies %q, %q", first, again)
	}
	if n := ask(`XLEN s`); n != "1" {
		t.Fatalf("XLEN %q", n)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A user who may not SCRIPT LOAD: when the server has the script cached
// already (another client ran it: the cache is the server's), the call
// runs, and its own reply is the command's, not the refused SCRIPT LOAD.
// Before: RENAME moved the stream and its state and replied NOPERM (exit
// 77: "nothing written"), and an XADD IDMP added and replied NOPERM. When
// the script is not cached, the call cannot run: the NOPERM, and nothing
// changed.
func TestExecScriptLoadRefused(t *testing.T) {
	t.Parallel()
	if !redistest.AtLeast(7, 0) {
		t.Skip("ACL selectors need Redis 7.0+")
	}
	conn, srv := redistest.Conn(t)
	if _, err := srv.Do("ACL", "SETUSER", "noload", "on", ">pw", "~*", "&*", "+@all", "-script"); err != nil {
		t.Fatal(err)
	}
	user := redistest.Connect(t, strings.Replace(srv.URL, "unix://", "unix://noload:pw@", 1))
	// Cached by another client's session.
	session(t, conn, `XADD s IDMP p a * f 1`, `RENAME nope x`)
	got := session(t, user, `RENAME s s2`, `XADD s2 IDMP p b * f 2`, `XLEN s2`, `EXISTS s`)
	if got[0] != "OK" || !strings.Contains(got[1], "-") || got[2] != "(integer) 2" || got[3] != "(integer) 0" {
		t.Fatalf("with the scripts cached: %q", got)
	}
	// Not cached: refused, nothing changed.
	if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	got = session(t, user, `RENAME s2 s3`, `XADD s2 IDMP p c * f 3`, `XLEN s2`, `EXISTS s3`)
	if !strings.Contains(got[0], "NOPERM") || !strings.Contains(got[1], "NOPERM") || got[2] != "(integer) 2" || got[3] != "(integer) 0" {
		t.Fatalf("with no script cached: %q", got)
	}
}
