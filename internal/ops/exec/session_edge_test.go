package exec

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// sessionWith is session with options (RESP3) and without failing on a
// session error, which it returns.
func sessionWith(t *testing.T, conn *redisconn.Conn, resp3 bool, lines ...string) ([]string, error) {
	t.Helper()
	var out []byte
	s, err := Open(context.Background(), conn, Options{Mode: stream.ModeEmulated, RESP3: resp3, Timeout: 5 * time.Second,
		Emit: func(r resp.Reply, _ bool) { out = render.AppendReplyTTY(out, r) }})
	if err != nil {
		t.Fatal(err)
	}
	err = RunLines(context.Background(), s, strings.NewReader(strings.Join(lines, "\n")))
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), err
}

// A MULTI or DISCARD the server refuses (arity, ACL) leaves the
// transaction as it was: the commands after it are not taken for queued
// ones (an emulated XADD's reply was a SCRIPT LOAD's SHA1, or "unexpected
// reply QUEUED").
func TestExecRefusedMultiAndDiscard(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	got := session(t, conn,
		`MULTI x`, `XADD m IDMP p 1 * f v`, `XINFO STREAM nope`, `XLEN m`,
		`MULTI`, `DISCARD x`, `XADD m IDMP p 2 * f v`, `EXEC`, `XLEN m`)
	want(t, got[:1], "(error) ERR wrong number of arguments for 'multi' command")
	id(t, got[1])
	want(t, got[2:], "(error) ERR no such key", "(integer) 1",
		"OK", "(error) ERR wrong number of arguments for 'discard' command", "QUEUED",
		"(error) EXECABORT Transaction discarded because of previous errors.", "(integer) 1")

	if _, err := srv.Do("ACL", "SETUSER", "nomulti", "on", ">pw", "~*", "&*", "+@all", "-multi"); err != nil {
		t.Fatal(err)
	}
	user := redistest.Connect(t, "unix://nomulti:pw@"+srv.Addr)
	got = session(t, user,
		`MULTI`, `XADD m IDMP p 3 * f v`, `XINFO STREAM nope`, `CONFIG GET stream-idmp-maxsize`,
		`XADD m IDMP p 3 0-1 f v`, `SET k v`, `EXEC`, `XLEN m`)
	if !strings.HasPrefix(got[0], "(error) NOPERM ") {
		t.Fatalf("MULTI: %q", got[0])
	}
	id(t, got[1])
	want(t, got[2:], "(error) ERR no such key", `1) "stream-idmp-maxsize"`, `2) "100"`,
		"(error) ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs", "OK",
		"(error) ERR EXEC without MULTI", "(integer) 2")
}

// RESP3 push messages (client-side caching's invalidations) are not
// replies: each command still gets its own (redis-cli drops them when its
// output is not a terminal).
func TestExecPushMessagesAreNotReplies(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	got, err := sessionWith(t, conn, true,
		`SET k v`, `CLIENT TRACKING ON`, `GET k`, `SET k v2`, `ECHO one`, `XADD s IDMP p 1 * f v`, `GET k`, `SET k v3`, `ECHO two`)
	if err != nil {
		t.Fatal(err)
	}
	want(t, got[:5], "OK", "OK", `"v"`, "OK", `"one"`)
	id(t, got[5])
	want(t, got[6:], `"v2"`, "OK", `"two"`)
}

// (P|S)UNSUBSCRIBE answer once per channel they name (RESP2 arrays, RESP3
// pushes): every one is the command's, as redis-cli prints them, and the
// next command gets its own reply.
func TestExecUnsubscribeReplies(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	for _, resp3 := range []bool{false, true} {
		got, err := sessionWith(t, conn, resp3, `PUNSUBSCRIBE x y`, `ECHO b`, `UNSUBSCRIBE`, `ECHO c`)
		if err != nil {
			t.Fatal(err)
		}
		if redistest.IsValkey() {
			// Valkey 8 refuses them outside subscribed mode: one error.
			want(t, got, "(error) NOSUB 'punsubscribe' command executed not in subscribed mode", `"b"`,
				"(error) NOSUB 'unsubscribe' command executed not in subscribed mode", `"c"`)
			continue
		}
		want(t, got, `1) "punsubscribe"`, `2) "x"`, `3) (integer) 0`, `1) "punsubscribe"`, `2) "y"`, `3) (integer) 0`,
			`"b"`, `1) "unsubscribe"`, `2) (nil)`, `3) (integer) 0`, `"c"`)
	}
}

// SCRIPT FLUSH in the stream: the emulated commands after it load their
// scripts again instead of failing with NOSCRIPT.
func TestExecScriptFlush(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	got := session(t, conn, `XADD a IDMP p 1 * f v`, `SCRIPT FLUSH`, `XADD a IDMP p 2 * f v`, `XADD b IDMP p 1 * f v`,
		`MULTI`, `SCRIPT FLUSH`, `XADD a IDMP p 3 * f v`, `EXEC`, `XLEN a`)
	id(t, got[0])
	want(t, got[1:2], "OK")
	id(t, got[2])
	id(t, got[3])
	want(t, got[4:7], "OK", "QUEUED", "QUEUED")
	want(t, got[7:8], "1) OK")
	id(t, got[8])
	want(t, got[9:], "(integer) 3")
}

// CLIENT REPLY OFF and SKIP silence the server: a session of one reply per
// command refuses them rather than wait for replies that never come.
func TestExecClientReplyRefused(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	got := session(t, conn, `CLIENT REPLY OFF`, `client reply skip`, `CLIENT REPLY ON`, `PING`)
	want(t, got, "(error) ERR idmpctl exec needs a reply to every command: CLIENT REPLY OFF needs redis-cli",
		"(error) ERR idmpctl exec needs a reply to every command: CLIENT REPLY SKIP needs redis-cli", "OK", "PONG")
}

// A CONFIG SET of the defaults the server refuses (here the ACL: no write
// to idmpctl's defaults key) sets nothing: a stream created after it in
// the same session gets the defaults in force, not the refused ones.
func TestExecRefusedConfigSetSetsNothing(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	if _, err := srv.Do("ACL", "SETUSER", "nodefaults", "on", ">pw", "~s*", "~{s}*", "%R~idmpctl:*", "&*", "+@all"); err != nil {
		t.Fatal(err)
	}
	user := redistest.Connect(t, "unix://nodefaults:pw@"+srv.Addr)
	got := session(t, user, `CONFIG SET stream-idmp-duration 7`, `XADD s IDMP p 1 * f v`, `XINFO STREAM s`, `CONFIG GET stream-idmp-duration`)
	if !strings.HasPrefix(got[0], "(error) NOPERM ") {
		t.Fatalf("CONFIG SET: %q", got[0])
	}
	info := strings.Join(got[2:], "\n")
	if !strings.Contains(info, "15) \"idmp-duration\"\n16) (integer) 100") || !strings.HasSuffix(info, "1) \"stream-idmp-duration\"\n2) \"100\"") {
		t.Fatalf("after a refused CONFIG SET:\n%s", info)
	}
	// The same user's CONFIG SET of another setting still works, and an
	// accepted one applies at once.
	got = session(t, conn, `CONFIG SET stream-idmp-duration 9`, `XADD s2 IDMP p 1 * f v`, `XINFO STREAM s2`)
	if info := strings.Join(got, "\n"); !strings.Contains(info, "15) \"idmp-duration\"\n16) (integer) 9") {
		t.Fatalf("after CONFIG SET:\n%s", info)
	}
}

// In a cluster, CONFIG GET through a node that does not hold idmpctl's
// defaults key (exec talks to one node, as redis-cli without -c) says
// the defaults in force, not Redis's 100 and 100.
func TestExecConfigGetClusterOtherNode(t *testing.T) {
	if !redistest.HaveCLI() {
		t.Skip("redis-cli is needed to create a cluster")
	}
	t.Parallel()
	conn, cl := redistest.ClusterConn(t)
	if err := conn.Client().HSet(context.Background(), idmp.DefaultsKey, ParamDuration, "300").Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range cl.Nodes {
		owner, err := n.Do("CLUSTER", "COUNTKEYSINSLOT", keySlot(t, n, idmp.DefaultsKey))
		if err != nil {
			t.Fatal(err)
		}
		if owner == "1" {
			continue // the node that holds it
		}
		got := session(t, redistest.Connect(t, n.URL), `CONFIG GET stream-idmp-*`)
		want(t, got, `1) "stream-idmp-duration"`, `2) "300"`, `3) "stream-idmp-maxsize"`, `4) "100"`)
		return
	}
	t.Fatal("no node without the defaults key")
}

func keySlot(t *testing.T, n *redistest.Server, key string) string {
	t.Helper()
	slot, err := n.Do("CLUSTER", "KEYSLOT", key)
	if err != nil {
		t.Fatal(err)
	}
	return slot
}

// An emulated XADD IDMP with more fields than a Lua script can pass on
// (unpack stops near 8,000 values) is refused before anything is written:
// it once failed inside the script, after the adds before it in its run
// were written without their IDMP state (a retry of those added again).
func TestExecTooManyFields(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	huge := `XADD s IDMP p huge *` + strings.Repeat(" f v", 4000)
	got := session(t, conn, `XADD s IDMP p small * f v`, huge, `XADD s IDMP p small * f v`, `XLEN s`, `EXISTS {s}:idmp`,
		`XADD s IDMP p ok *`+strings.Repeat(" f v", 3900), `XADD s IDMPAUTO p *`+strings.Repeat(" f v", 4000))
	first := id(t, got[0])
	want(t, got[1:2], "(error) ERR 8000 field/value arguments: emulated IDMP takes at most 7800 in one add (the script hands them to XADD with Lua's unpack, which stops near 8,000 values)")
	if id(t, got[2]) != first {
		t.Fatalf("the retry of the first add: %q, want %q", got[2], first)
	}
	want(t, got[3:5], "(integer) 1", "(integer) 1")
	id(t, got[5])
	want(t, got[6:], got[1])
}

// Thousands of small commands (PING: 14 bytes on the wire) fill the
// commands in flight before the write buffer: the session once waited
// for their replies with the commands still in its buffer, unsent, until
// --timeout (exit 69, nothing printed).
func TestExecManySmallCommands(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	n := 0
	s, err := Open(context.Background(), conn, Options{Mode: stream.ModeEmulated, Timeout: 2 * time.Second,
		Emit: func(r resp.Reply, _ bool) {
			if r.Kind == resp.Status && r.Str == "PONG" {
				n++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	err = RunLines(context.Background(), s, strings.NewReader(strings.Repeat("PING\n", 10000)))
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil || n != 10000 {
		t.Fatalf("%d PONGs of 10000: %v", n, err)
	}
}

// Managed Redis often refuses CONFIG (renamed, or an ACL without it),
// and there the defaults are idmpctl's: CONFIG GET of stream-idmp-*
// alone answers without the server's CONFIG GET, as CONFIG SET does.
func TestExecConfigGetWithoutServerConfig(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	if _, err := srv.Do("ACL", "SETUSER", "noconfig", "on", ">pw", "~*", "&*", "+@all", "-config"); err != nil {
		t.Fatal(err)
	}
	user := redistest.Connect(t, "unix://noconfig:pw@"+srv.Addr)
	got := session(t, user, `CONFIG SET stream-idmp-duration 300`, `CONFIG GET stream-idmp-duration`, `config get STREAM-IDMP-*`,
		`CONFIG GET stream-idmp-maxsize stream-idmp-m?x*`, `CONFIG GET maxmemory`)
	if len(got) != 10 {
		t.Fatalf("replies: %q", got)
	}
	want(t, got[:8], "OK", `1) "stream-idmp-duration"`, `2) "300"`,
		`1) "stream-idmp-duration"`, `2) "300"`, `3) "stream-idmp-maxsize"`, `4) "100"`, `1) "stream-idmp-maxsize"`)
	want(t, got[8:9], `2) "100"`)
	if !strings.HasPrefix(got[9], "(error) NOPERM ") {
		t.Fatalf("CONFIG GET maxmemory: %q", got[9])
	}
	// RESP3: a map, as the server's CONFIG GET is.
	got, err := sessionWith(t, user, true, `CONFIG GET stream-idmp-*`)
	if err != nil {
		t.Fatal(err)
	}
	want(t, got, `1# "stream-idmp-duration" => "300"`, `2# "stream-idmp-maxsize" => "100"`)
	// With the server's CONFIG, a pattern that matches its parameters too
	// still gets them, in any order (Redis 8.6 lists its own in its
	// dictionary's hash order).
	got = session(t, conn, `CONFIG GET stream-node-max-entries stream-idmp-duration`)
	if len(got) != 4 {
		t.Fatalf("CONFIG GET stream-node-max-entries stream-idmp-duration: %q", got)
	}
	pairs := map[string]string{}
	for i := 0; i+1 < len(got); i += 2 {
		pairs[got[i][strings.Index(got[i], " ")+1:]] = got[i+1][strings.Index(got[i+1], " ")+1:]
	}
	if pairs[`"stream-node-max-entries"`] != `"100"` || pairs[`"stream-idmp-duration"`] != `"300"` {
		t.Fatalf("CONFIG GET stream-node-max-entries stream-idmp-duration: %q", got)
	}
}

// MOVE takes a stream to another database with its emulated state, as
// MOVE does natively (R15): the retry of a message there dedupes. Any other
// key moves as it is, and MOVE's own errors stay the server's.
func TestExecMoveToAnotherDB(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	got := session(t, conn, `XADD s IDMP p 1 * f v`, `MOVE s 1`, `SET k v`, `MOVE k 1`, `XADD plain * f v`, `MOVE plain 1`,
		`MOVE nope 1`, `MOVE s x`, `SELECT 1`, `EXISTS s`, `XADD s IDMP p 1 * f v`, `EXISTS k plain`)
	first := id(t, got[0])
	want(t, got[1:4], "(integer) 1", "OK", "(integer) 1")
	id(t, got[4])
	want(t, got[5:10], "(integer) 1", "(integer) 0", "(error) ERR value is not an integer or out of range", "OK", "(integer) 1")
	if again := id(t, got[10]); again != first {
		t.Fatalf("the retry in database 1: %s, want the original %s", again, first)
	}
	want(t, got[11:], "(integer) 2")
}

// exec --mode emulated on a server with native IDMP: XINFO STREAM and
// XINFO STREAM FULL have each IDMP field once, with the emulation's
// values, where Redis 8.6 puts them (TestExecEmulatedXInfoOnNativeServer:
// pids-tracked).
func TestExecEmulatedXInfoFullOnNativeServer(t *testing.T) {
	t.Parallel()
	srv := redistest.NewNative(t)
	conn := redistest.Connect(t, srv.URL)
	got := session(t, conn, `XADD e IDMP p i * f v`, `XADD e IDMP p i * f v`, `XINFO STREAM e`, `XINFO STREAM e FULL`)
	info := strings.Join(got[2:], "\n")
	for _, f := range []string{"idmp-duration", "idmp-maxsize", "pids-tracked", "iids-tracked", "iids-added", "iids-duplicates"} {
		if n := strings.Count(info, `"`+f+`"`); n != 2 {
			t.Errorf("%s appears %d times in XINFO STREAM and FULL, want once each:\n%s", f, n, info)
		}
	}
	if !strings.Contains(info, "\"iids-added\"\n24) (integer) 1\n25) \"iids-duplicates\"\n26) (integer) 1") {
		t.Errorf("XINFO STREAM e lacks the emulation's counters:\n%s", info)
	}
}

// exec --mode emulated on a server with native IDMP: CONFIG GET of a
// pattern the server answers too lists each stream-idmp-* parameter once,
// under the name the server gives it, with the emulation's value (what
// its CONFIG SET wrote; the server's own configuration is not touched).
func TestExecEmulatedConfigGetOnNativeServer(t *testing.T) {
	t.Parallel()
	srv := redistest.NewNative(t)
	conn := redistest.Connect(t, srv.URL)
	got := session(t, conn, `CONFIG SET stream-idmp-duration 300`, `CONFIG GET maxclients Stream-Idmp-Duration`)
	want(t, got[:1], "OK")
	reply := strings.Join(got[1:], "\n")
	if n := strings.Count(strings.ToLower(reply), `"stream-idmp-duration"`); n != 1 || !strings.Contains(reply, `) "Stream-Idmp-Duration"`) {
		t.Fatalf("CONFIG GET maxclients Stream-Idmp-Duration: the parameter %d times:\n%s", n, reply)
	}
	lines := got[1:]
	for i, l := range lines {
		if strings.HasSuffix(l, `"Stream-Idmp-Duration"`) && (i+1 == len(lines) || !strings.HasSuffix(lines[i+1], `) "300"`)) {
			t.Fatalf("CONFIG GET: not the emulation's 300:\n%s", reply)
		}
	}
	if v, err := srv.Do("CONFIG", "GET", "stream-idmp-duration"); err != nil || !strings.Contains(v, "100") {
		t.Fatalf("the server's own stream-idmp-duration: %q, %v; want 100 (untouched)", v, err)
	}
}

// A DEL or UNLINK of more keys than Lua's unpack takes (near 8,000) runs
// as Redis runs it, with each stream's emulated state: the script used to
// fail ("too many results to unpack"), and a command Redis takes was
// refused in Lua's words.
func TestExecDelOfManyKeys(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	many := func(op, last string) string {
		var b strings.Builder
		b.WriteString(op)
		for i := range 10000 {
			fmt.Fprintf(&b, " k%d", i)
		}
		return b.String() + " k1 " + last // k1 twice: deleted once
	}
	got := session(t, conn, `XADD s0 IDMP p i * f v`, `XADD s1 IDMP p i * f v`, `MSET k1 v k9999 v`,
		many("DEL", "s0"), many("UNLINK", "s1"), `EXISTS s0 s1 k1 k9999`)
	id(t, got[0])
	id(t, got[1])
	want(t, got[2:], "OK", "(integer) 3", "(integer) 1", "(integer) 0")
	if keys, err := srv.Do("KEYS", "*"); err != nil || keys != "" {
		t.Errorf("left behind: %q, %v", keys, err)
	}
}

// flushAfter runs an emulated session whose input is parts[0], then, once
// n replies have come, another client's SCRIPT FLUSH, then parts[1]; it
// returns the replies as redis-cli shows them.
func flushAfter(t *testing.T, conn *redisconn.Conn, srv *redistest.Server, n int, parts ...[]byte) []string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	s, err := Open(context.Background(), conn, Options{Mode: stream.ModeEmulated, Timeout: 5 * time.Second,
		Emit: func(r resp.Reply, _ bool) {
			mu.Lock()
			got = append(got, strings.TrimSuffix(string(render.AppendReplyTTY(nil, r)), "\n"))
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	in := &linesThen{parts: parts,
		wait: func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) == n
		},
		then: func() {
			if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
				t.Error(err)
			}
		},
	}
	err = RunLines(context.Background(), s, in)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return got
}

// noLoadUser caches the emulated add script (as the default user) and
// returns a connection of a user who may call scripts but not SCRIPT LOAD.
func noLoadUser(t *testing.T, conn *redisconn.Conn, srv *redistest.Server) *redisconn.Conn {
	t.Helper()
	id(t, session(t, conn, `XADD w IDMP p 1 * f v`)[0])
	if _, err := srv.Do("ACL", "SETUSER", "noload", "on", ">pw", "~*", "&*", "+@all", "-script"); err != nil {
		t.Fatal(err)
	}
	return redistest.Connect(t, "unix://noload:pw@"+srv.Addr)
}

// linesThen is an input of two parts: the second is read once wait says
// so, after then ran (another client's command between them).
type linesThen struct {
	parts [][]byte
	wait  func() bool
	then  func()
}

func (in *linesThen) Read(b []byte) (int, error) {
	if len(in.parts) == 0 {
		return 0, io.EOF
	}
	if in.then != nil && len(in.parts) == 1 {
		for deadline := time.Now().Add(5 * time.Second); !in.wait() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		in.then()
		in.then = nil
	}
	n := copy(b, in.parts[0])
	if in.parts[0] = in.parts[0][n:]; len(in.parts[0]) == 0 {
		in.parts = in.parts[1:]
	}
	return n, nil
}

// Another client's SCRIPT FLUSH between the queueing of an emulated XADD
// IDMP in a transaction and its EXEC: the transaction loads the scripts
// it calls, so the add runs with the rest. It used to meet NOSCRIPT
// inside EXEC while the commands beside it ran: half a transaction.
func TestExecScriptFlushedBeforeExec(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	got := flushAfter(t, conn, srv, 4, // the transaction is queued, its script loaded before
		[]byte("XADD t IDMP p warm * f v\nMULTI\nXADD t IDMP p a * f v\nINCR c\n"), []byte("EXEC\nXLEN t\n"))
	id(t, got[0])
	want(t, got[1:4], "OK", "QUEUED", "QUEUED")
	if !strings.HasPrefix(got[4], `1) "`) || !strings.HasSuffix(got[4], "2) (integer) 1") {
		t.Fatalf("EXEC: %q", got[4])
	}
	want(t, got[5:], "(integer) 2")
}

// A user who may not SCRIPT LOAD runs emulated adds on the scripts another
// client cached, in a transaction too: the session queues no load there
// that would abort it (EXECABORT), even right after its first refused one.
func TestExecTransactionWithoutScriptLoad(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	user := noLoadUser(t, conn, srv)
	got := session(t, user, `XADD t IDMP p 0 * f v`, `MULTI`, `XADD t IDMP p a * f v`, `INCR c`, `EXEC`, `XLEN t`)
	id(t, got[0])
	want(t, got[1:4], "OK", "QUEUED", "QUEUED")
	if !strings.HasPrefix(got[4], `1) "`) {
		t.Fatalf("EXEC: %q", got[4:])
	}
	want(t, got[5:], "2) (integer) 1", "(integer) 2")
}

// Another client's SCRIPT FLUSH while an emulated add is in flight: the
// add did not run (NOSCRIPT), and a retry here would reorder it after the
// commands pipelined behind it. Its reply says so in idmpctl's words, not
// Redis's "Please use EVAL", which reads as the user's own mistake; a
// user's own EVALSHA keeps Redis's reply. Nothing ran twice or half.
func TestExecScriptFlushedInFlight(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	got := flushAfter(t, conn, srv, 1, // the add script is loaded
		[]byte("XADD t IDMP p warm * f v\n"),
		[]byte("XADD t IDMP p a * f v\nEVALSHA 0123456789012345678901234567890123456789 0\nXADD t IDMP p a * f v\n"))
	id(t, got[0])
	if len(got) != 4 {
		t.Fatalf("replies: %q", got)
	}
	if !strings.Contains(got[1], "script cache was emptied") || !strings.Contains(got[1], "did not run") {
		t.Fatalf("the flushed add: %q", got[1])
	}
	if !strings.Contains(got[2], "NOSCRIPT No matching script") {
		t.Fatalf("the user's own EVALSHA: %q", got[2])
	}
	if got[3] != got[1] { // pipelined behind it, before its NOSCRIPT came
		t.Fatalf("the add behind it: %q", got[3])
	}
	if n, err := srv.Do("XLEN", "t"); err != nil || n != "1" {
		t.Fatalf("XLEN t = %v, %v", n, err)
	}
}

// A user without SCRIPT whose first command of the session is a
// transaction: the session had never learned that its loads are refused,
// so it queued one in the transaction, which the server refused and then
// aborted the whole transaction (EXECABORT) although the script was
// cached and the user may call it. The session now learns it before MULTI.
func TestExecTransactionFirstWithoutScriptLoad(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	user := noLoadUser(t, conn, srv)
	got := session(t, user, `MULTI`, `XADD t IDMP p a * f v`, `INCR c`, `EXEC`, `XLEN t`, `MULTI`, `XADD t IDMP p a * f v`, `EXEC`)
	want(t, got[:3], "OK", "QUEUED", "QUEUED")
	if !strings.HasPrefix(got[3], `1) "`) {
		t.Fatalf("EXEC: %q", got[3:])
	}
	want(t, got[4:8], "2) (integer) 1", "(integer) 1", "OK", "QUEUED")
	if !strings.HasPrefix(got[8], `1) "`) || len(got) != 9 {
		t.Fatalf("the second EXEC (a repeat): %q", got[8:])
	}
	if n, err := srv.Do("XLEN", "t"); err != nil || n != "1" {
		t.Fatalf("XLEN t = %v, %v", n, err)
	}
}

// A user without SCRIPT LOAD, another client's SCRIPT FLUSH between MULTI
// and EXEC: the add went as EVALSHA, NOSCRIPT at EXEC, while the INCR
// beside it ran (half the transaction). A call queued for such a user now
// carries its script (EVAL), which no flush can take away.
func TestExecTransactionWithoutScriptLoadFlushed(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	user := noLoadUser(t, conn, srv)
	got := flushAfter(t, user, srv, 4,
		[]byte("XADD t IDMP p warm * f v\nMULTI\nXADD t IDMP p a * f v\nINCR c\n"), []byte("EXEC\nXLEN t\n"))
	id(t, got[0])
	want(t, got[1:4], "OK", "QUEUED", "QUEUED")
	if !strings.HasPrefix(got[4], `1) "`) || !strings.HasSuffix(got[4], "2) (integer) 1") {
		t.Fatalf("EXEC: %q", got[4])
	}
	want(t, got[5:], "(integer) 2")
}
