package exec

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// Emulated mode on purpose on a native server (--mode emulated on Redis
// 8.6): XINFO STREAM shows the emulation's IDMP fields once, in place of
// the server's own, which describe tracking the emulation does not use
// (Redis's "XINFO STREAM returns pids-tracked field" read the server's 0).
func TestExecEmulatedXInfoOnNativeServer(t *testing.T) {
	t.Parallel()
	srv := redistest.NewNative(t)
	conn := redistest.Connect(t, srv.URL)
	got := session(t, conn, "XADD s IDMP p1 i1 * f v", "XADD s IDMP p2 i1 * f v", "XINFO STREAM s")
	text := strings.Join(got, "\n")
	if n := strings.Count(text, `"pids-tracked"`); n != 1 {
		t.Fatalf("pids-tracked %d times in\n%s", n, text)
	}
	for i, l := range got {
		if strings.HasSuffix(l, `"pids-tracked"`) {
			if i+1 >= len(got) || !strings.HasSuffix(got[i+1], "(integer) 2") {
				t.Fatalf("pids-tracked is not 2 in\n%s", text)
			}
		}
	}
}

var entryIDs = regexp.MustCompile(`\b\d+-\d+\b`)

// numberIDs replaces each entry ID by its number in order of first
// appearance: two servers' replies compare although their clocks differ.
func numberIDs(lines []string) []string {
	seen := map[string]int{}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = entryIDs.ReplaceAllStringFunc(l, func(id string) string {
			n, ok := seen[id]
			if !ok {
				n = len(seen) + 1
				seen[id] = n
			}
			return "<id" + strconv.Itoa(n) + ">"
		})
	}
	return out
}

// agree runs lines through exec natively on Redis 8.6.3 (the reference)
// and emulated on the server under test (--mode emulated), each on a
// server of its own, and fails unless their replies agree line by line
// (entry IDs numbered). It returns the emulated replies.
func agree(t *testing.T, lines ...string) []string {
	t.Helper()
	nr, e := both(t, lines...)
	n, en := numberIDs(nr), numberIDs(e)
	if strings.Join(n, "\n") != strings.Join(en, "\n") {
		var b strings.Builder
		for i := range max(len(n), len(en)) {
			get := func(l []string) string {
				if i < len(l) {
					return l[i]
				}
				return "(none)"
			}
			mark := "  "
			if get(n) != get(en) {
				mark = "! "
			}
			fmt.Fprintf(&b, "%s%-50s | %s\n", mark, get(n), get(en))
		}
		t.Fatalf("native (8.6.3) | emulated replies differ:\n%s", b.String())
	}
	return e
}

// both runs lines as agree does and returns the replies of each.
func both(t *testing.T, lines ...string) (native, emulated []string) {
	t.Helper()
	nc := redistest.Connect(t, redistest.NewNative(t).URL)
	ec, _ := redistest.Conn(t)
	return sessionIn(t, nc, stream.ModeAuto, lines...), sessionIn(t, ec, stream.ModeEmulated, lines...)
}

// Root cause 1 of issue 22: a stream deleted and rebuilt with the same
// entries by a plain client kept its old IDMP state, and the next add of a
// tracked iid was dropped as a duplicate of the old stream's entry (its
// settings and counters carried over too). The state's liveness token, a
// consumer group of the stream's own, goes with the stream.
func TestAgreeDeletedStreamRebuiltSameIDs(t *testing.T) {
	t.Parallel()
	got := agree(t,
		"XADD s 99999999999999-5 f v",
		"XADD s IDMP p i1 * f v",
		"DEL s",
		"XADD s 99999999999999-5 f v",
		"XADD s 99999999999999-6 f v",
		"XADD s IDMP p i1 * f v",
		"XLEN s",
	)
	if got[len(got)-1] != "(integer) 3" {
		t.Fatalf("XLEN %s, want 3", got[len(got)-1])
	}
}

// ... and its settings and counters did not carry over either.
func TestAgreeDeletedStreamRebuiltSettings(t *testing.T) {
	t.Parallel()
	agree(t,
		"XADD s 99999999999999-5 f v",
		"XADD s IDMP p i1 * f v",
		"XCFGSET s IDMP-DURATION 50",
		"DEL s",
		"XADD s 99999999999999-5 f v",
		"XADD s 99999999999999-6 f v",
		"XADD s IDMP p i1 * f v",
		"XLEN s",
		"XINFO STREAM s",
		"XINFO GROUPS s",
	)
}

// The same with XADD * rebuilt in one transaction (most likely within one
// millisecond of the first, where the old state's snapshot matched): the
// add after it is new in both modes (the IDs depend on each server's clock).
func TestAgreeDeletedStreamRebuiltSameMillisecond(t *testing.T) {
	t.Parallel()
	native, emulated := both(t,
		"MULTI",
		"XADD s * f v",
		"XADD s IDMP p i1 * f v",
		"DEL s",
		"XADD s * f v",
		"XADD s * f v",
		"EXEC",
		"XADD s IDMP p i1 * f v",
		"XLEN s",
	)
	for mode, got := range map[string][]string{"native": native, "emulated": emulated} {
		if got[len(got)-1] != "(integer) 3" {
			t.Errorf("%s: XLEN %s, want 3: the add after the rebuild was dropped", mode, got[len(got)-1])
		}
	}
}

// The liveness token of emulated state is a consumer group of idmpctl's:
// exec leaves it out of XINFO GROUPS and of XINFO STREAM's groups, which
// show the user's groups only, as natively.
func TestAgreeGroupsWithoutTokens(t *testing.T) {
	t.Parallel()
	got := agree(t,
		"XADD s 99999999999999-5 f v",
		"XGROUP CREATE s mine 0",
		"XADD s IDMP p i1 * f v",
		"XINFO GROUPS s",
		"XINFO STREAM s",
	)
	if !strings.Contains(strings.Join(got, "\n"), `"mine"`) {
		t.Fatalf("the user's group is not shown:\n%s", strings.Join(got, "\n"))
	}
}

// XIDMPRECORD (Redis 8.6.2+), emulated: its grammar and every error in
// Redis's order, an entry missing or deleted, the same triple again, the
// conflict, and what a recorded pair does to adds and counters.
func TestAgreeXIdmpRecord(t *testing.T) {
	t.Parallel()
	agree(t,
		"XIDMPRECORD s p i1",
		"XIDMPRECORD s p i1 1-1 extra",
		"XIDMPRECORD nosuch p i1 bad",
		"XIDMPRECORD nosuch '' i1 1-1",
		"XIDMPRECORD nosuch p '' 1-1",
		"XIDMPRECORD nosuch p i1 1-1",
		"SET str x",
		"XIDMPRECORD str p i1 1-1",
		"XADD s 99999999999999-0 a 1",
		"XADD s 99999999999999-3 b 2",
		"XADD s 99999999999999-7 c 3",
		"XIDMPRECORD s p i1 1-",
		"XIDMPRECORD s p i1 -1",
		"XIDMPRECORD s p i1 +",
		"XIDMPRECORD s p i1 -",
		"XIDMPRECORD s p i1 99999999999999-*",
		"XIDMPRECORD s p i1 999-999",
		"XINFO STREAM s",
		"XIDMPRECORD s p i1 99999999999999",
		"XIDMPRECORD s p i1 0099999999999999-0",
		"XIDMPRECORD s p i1 99999999999999-3",
		"XDEL s 99999999999999-7",
		"XIDMPRECORD s p i2 99999999999999-7",
		"XIDMPRECORD s q i1 99999999999999-3",
		"XADD s IDMP p i1 * f dup",
		"XADD s IDMP q i1 * f dup",
		"XADD s IDMP q i2 * f new",
		"XLEN s",
		"XINFO STREAM s",
		"XIDMPRECORD s q i2 99999999999999-0",
	)
}

// In a transaction: an arity error aborts it at EXEC, any other error is
// its element of EXEC's reply.
func TestAgreeXIdmpRecordInMulti(t *testing.T) {
	t.Parallel()
	agree(t,
		"XADD s 99999999999999-0 a 1",
		"MULTI",
		"XIDMPRECORD s p i1",
		"XIDMPRECORD s p i1 99999999999999-0",
		"EXEC",
		"MULTI",
		"XIDMPRECORD s p i1 99999999999999-0",
		"XIDMPRECORD s p '' 99999999999999-0",
		"XIDMPRECORD s p i1 9-9",
		"XIDMPRECORD s p i1 99999999999999-0",
		"XADD s IDMP p i1 * f v",
		"EXEC",
	)
}

// MAXSIZE evicts the pid's oldest recorded pair; a pair recorded for an
// entry older than the pid's newest sits behind it, and is tracked as
// long as an iid before it is (Redis expires from the front of the list).
func TestAgreeXIdmpRecordEvictionAndOrder(t *testing.T) {
	t.Parallel()
	agree(t,
		"XADD s 99999999999999-1 a 1",
		"XADD s 99999999999999-2 b 2",
		"XADD s 99999999999999-3 c 3",
		"XADD s 99999999999999-4 d 4",
		"XCFGSET s IDMP-MAXSIZE 2",
		"XIDMPRECORD s p i1 99999999999999-1",
		"XIDMPRECORD s p i2 99999999999999-2",
		"XIDMPRECORD s p i3 99999999999999-3",
		"XADD s IDMP p i1 * f new",
		"XADD s IDMP p i3 * f dup",
		"XINFO STREAM s",
		"XCFGSET s IDMP-MAXSIZE 5 IDMP-DURATION 60",
		"XADD s IDMP p live * f v",
		"XIDMPRECORD s p old 99999999999999-1",
		"XADD s IDMP p old * f dup",
		"XINFO STREAM s",
	)
}

// Tracking follows the key to other databases (R15): MOVE, COPY ... DB,
// SWAPDB; FLUSHDB and FLUSHALL drop it.
func TestAgreeTrackingAcrossDatabases(t *testing.T) {
	t.Parallel()
	agree(t,
		"XADD s 99999999999999-1 f v",
		"XADD s IDMP p i1 * f v",
		"XCFGSET s IDMP-DURATION 60",
		"XADD s IDMP p i2 * f v",
		"MOVE s 1",
		"MOVE s 1",
		"SELECT 1",
		"XADD s IDMP p i2 * f dup",
		"XINFO STREAM s",
		"MOVE s 1",
		"MOVE s 100000",
		"MOVE s 0",
		"SELECT 0",
		"XADD s IDMP p i2 * f dup",
		"COPY s c DB 2",
		"COPY s c DB 2",
		"SELECT 2",
		"XADD c IDMP p i2 * f dup",
		"XADD c IDMP p i3 * f new",
		"XINFO STREAM c",
		"SELECT 0",
		"XADD s IDMP p i3 * f new",
		"XADD t 99999999999999-1 f v",
		"XADD t IDMP q x * f v",
		"SELECT 3",
		"XADD t 99999999999999-1 other v",
		"SELECT 0",
		"MOVE t 3",
		"COPY t t DB 3 REPLACE",
		"SELECT 3",
		"XADD t IDMP q x * f dup",
		"XINFO STREAM t",
		"SWAPDB 0 3",
		"XADD s IDMP p i2 * f dup",
		"XLEN s",
		"FLUSHDB",
		"XADD s 99999999999999-1 f v",
		"XADD s IDMP p i2 * f new",
		"SELECT 1",
		"XADD s 99999999999999-1 f v",
		"XADD s IDMP p i2 * f v",
		"FLUSHALL",
		"XADD s 99999999999999-1 f v",
		"XADD s IDMP p i2 * f new",
		"XINFO STREAM s",
	)
}

// MOVE inside a transaction after a SELECT: the script follows it.
func TestAgreeMoveInTransaction(t *testing.T) {
	t.Parallel()
	agree(t,
		"SELECT 1",
		"XADD s 99999999999999-1 f v",
		"XADD s IDMP p i1 * f v",
		"SELECT 0",
		"MULTI",
		"SELECT 1",
		"MOVE s 2",
		"EXEC",
		"SELECT 2",
		"XADD s IDMP p i1 * f dup",
		"MULTI",
		"SELECT 0",
		"DISCARD",
		"MOVE s 1",
		"SELECT 1",
		"XADD s IDMP p i1 * f dup",
	)
}

// Where exec cannot know the database (a SELECT in a transaction that the
// server refuses at EXEC), MOVE of a stream with emulated state is
// refused, naming the way that works; it never moves the stream without
// its state.
func TestExecMoveDatabaseUnknown(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	got := session(t, conn, "XADD s IDMP p i1 * f v", "MULTI", "SELECT 100000", "MOVE s 1", "EXEC", "EXISTS s", "SELECT 1", "EXISTS s")
	text := strings.Join(got, "\n")
	if !strings.Contains(text, "needs the database the connection is in") || !strings.Contains(text, "outside the transaction") {
		t.Fatalf("replies:\n%s", text)
	}
	want(t, got[len(got)-3:], "(integer) 1", "OK", "(integer) 0")
}

// converse opens a session and returns a function that sends one command
// and waits for its reply (a conversation: a later command may use an
// earlier reply, as a DUMP payload).
func converse(t *testing.T, conn *redisconn.Conn, mode stream.Mode) func(args ...string) resp.Reply {
	t.Helper()
	replies := make(chan resp.Reply, 16)
	s, err := Open(context.Background(), conn, Options{Mode: mode, Timeout: 5 * time.Second,
		Emit: func(r resp.Reply, _ bool) { replies <- r }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return func(args ...string) resp.Reply {
		t.Helper()
		if err := s.Do(context.Background(), args); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-replies:
			return r
		case <-time.After(10 * time.Second):
			t.Fatalf("no reply to %q", args)
		}
		return resp.Reply{}
	}
}

// show is a reply as redis-cli prints it, entry IDs numbered.
func show(r resp.Reply) string {
	return string(render.AppendReplyTTY(nil, r))
}

// RESTORE of a DUMP carries the stream's tracking and settings (R15,
// Redis's "tracking survives RESTORE"): the emulation keeps the state of
// each DUMP the session served for a RESTORE of that payload.
func TestAgreeDumpRestore(t *testing.T) {
	t.Parallel()
	run := func(conn *redisconn.Conn, mode stream.Mode) []string {
		r := converse(t, conn, mode)
		var out []string
		var dump string
		do := func(args ...string) resp.Reply {
			rep := r(args...)
			shown := make([]string, len(args))
			for i, a := range args {
				shown[i] = a
				if a == dump && dump != "" {
					shown[i] = "<payload>"
				}
			}
			out = append(out, strings.Join(shown, " ")+" -> "+show(rep))
			return rep
		}
		do("XADD", "s", "99999999999999-1", "f", "v")
		do("XADD", "s", "IDMP", "p", "i1", "*", "f", "v")
		do("XCFGSET", "s", "IDMP-DURATION", "60")
		do("XADD", "s", "IDMP", "p", "i2", "*", "f", "v")
		dump = r("DUMP", "s").Str
		do("XADD", "s", "IDMP", "p", "i3", "*", "f", "after the dump")
		do("RESTORE", "c", "0", dump)
		do("RESTORE", "c", "0", dump)
		do("XINFO", "STREAM", "c")
		do("XADD", "c", "IDMP", "p", "i2", "*", "f", "dup")
		do("XADD", "c", "IDMP", "p", "i3", "*", "f", "new in the copy")
		do("XGROUP", "CREATE", "s", "g", "0")
		do("RESTORE", "s", "0", dump, "REPLACE")
		do("XINFO", "STREAM", "s")
		do("XINFO", "GROUPS", "s")
		do("XADD", "s", "IDMP", "p", "i3", "*", "f", "new again")
		do("DUMP", "nosuch")
		return numberIDs(out)
	}
	native := run(redistest.Connect(t, redistest.NewNative(t).URL), stream.ModeAuto)
	ec, _ := redistest.Conn(t)
	emulated := run(ec, stream.ModeEmulated)
	if strings.Join(native, "\n") != strings.Join(emulated, "\n") {
		t.Fatalf("native:\n%s\n\nemulated:\n%s", strings.Join(native, "\n"), strings.Join(emulated, "\n"))
	}
}

// A payload of a stream that had emulated state, which this session did
// not DUMP (another session's, or redis-cli's), cannot carry the state:
// RESTORE refuses it, naming the ways that work, and writes nothing; a
// payload of any other key restores as it is.
func TestExecRestoreOfAnotherSessionsDump(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	a := converse(t, conn, stream.ModeEmulated)
	a("XADD", "s", "IDMP", "p", "i1", "*", "f", "v")
	a("XADD", "plain", "*", "f", "v")
	dump, plain := a("DUMP", "s").Str, a("DUMP", "plain").Str
	b := converse(t, conn, stream.ModeEmulated)
	r := b("RESTORE", "c", "0", dump)
	if !r.IsError() || !strings.Contains(r.Str, "in the idmpctl exec session that took the DUMP") || !strings.Contains(r.Str, "redis-cli") {
		t.Fatalf("RESTORE of another session's DUMP: %s", show(r))
	}
	if n := b("EXISTS", "c"); n.Int != 0 {
		t.Fatal("the refused RESTORE wrote the key")
	}
	if r := b("RESTORE", "p2", "0", plain); r.Str != "OK" {
		t.Fatalf("RESTORE of a plain stream: %s", show(r))
	}
	// The session that took it restores it with its state.
	if r := a("RESTORE", "c", "0", dump); r.Str != "OK" {
		t.Fatalf("RESTORE in the session of the DUMP: %s", show(r))
	}
	if r := a("XADD", "c", "IDMP", "p", "i1", "*", "f", "v"); r.Str != a("XRANGE", "s", "-", "+").Elems[0].Elems[0].Str {
		t.Fatalf("the retry on the restored copy: %s", show(r))
	}
}

// Root cause 2 of issue 22: a stream takes the server-level defaults in
// force when it was created (Redis 8.6.3 sets them in streamNew), not
// those of its first idempotent add.
func TestAgreeDefaultsOfTheStreamsCreation(t *testing.T) {
	t.Parallel()
	agree(t,
		"XADD s 99999999999999-1 f v",
		"XADD t 99999999999999-1 f v",
		"XCFGSET t IDMP-DURATION 50",
		"CONFIG SET stream-idmp-maxsize 2",
		"XADD s IDMP p a * f v",
		"XADD s IDMP p b * f v",
		"XADD s IDMP p c * f v",
		"XADD s IDMP p a * f v",
		"XINFO STREAM s",
		"XINFO STREAM t",
		"XADD new 99999999999999-1 f v",
		"XINFO STREAM new",
		"CONFIG SET stream-idmp-duration 7 stream-idmp-maxsize 3",
		"XINFO STREAM new",
		"XADD new2 IDMP p a * f v",
		"XINFO STREAM new2",
		"CONFIG SET stream-idmp-maxsize 3",
		"XINFO STREAM s",
	)
}

// ... and so does a stream created again after the one of its name
// expired (PEXPIREAT in the past: it expires at once).
func TestAgreeDefaultsOfAnExpiredStreamsSuccessor(t *testing.T) {
	t.Parallel()
	agree(t,
		"XADD s IDMP p a * f v",
		"XCFGSET s IDMP-DURATION 50",
		"PEXPIREAT s 1",
		"XADD s 99999999999999-1 f v",
		"CONFIG SET stream-idmp-maxsize 2",
		"XADD s IDMP p a * f v",
		"XADD s IDMP p b * f v",
		"XADD s IDMP p c * f v",
		"XADD s IDMP p a * f v",
		"XINFO STREAM s",
	)
}

// ... and one deleted and created again (the same entries) after the
// change takes the new defaults.
func TestAgreeDefaultsOfARecreatedStream(t *testing.T) {
	t.Parallel()
	agree(t,
		"XADD s 99999999999999-1 f v",
		"CONFIG SET stream-idmp-maxsize 2",
		"DEL s",
		"XADD s 99999999999999-1 f v",
		"XADD s IDMP p a * f v",
		"XINFO STREAM s",
		"UNLINK s",
		"XADD s 99999999999999-1 f v",
		"CONFIG SET stream-idmp-maxsize 5",
		"DEL s nothing",
		"XADD s 99999999999999-1 f v",
		"XADD s IDMP p a * f v",
		"XINFO STREAM s",
	)
}

// CONFIG SET of the defaults first gives the streams of the database the
// defaults they were created with; where that fails (a user who may not
// SCAN), it is refused, and nothing changes.
func TestExecConfigSetMarkRefused(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	if _, err := srv.Do("ACL", "SETUSER", "noscan", "on", ">pw", "~*", "&*", "+@all", "-scan"); err != nil {
		t.Fatal(err)
	}
	session(t, conn, "XADD s 99999999999999-1 f v")
	user := redistest.Connect(t, "unix://noscan:pw@"+srv.Addr)
	got := session(t, user, "CONFIG SET stream-idmp-maxsize 2", "CONFIG GET stream-idmp-maxsize", "XADD s IDMP p a * f v", "XINFO STREAM s")
	if !strings.Contains(got[0], "the defaults it was created with") || !strings.Contains(got[0], "nothing was changed") {
		t.Fatalf("CONFIG SET without SCAN: %q", got[0])
	}
	text := strings.Join(got[1:], "\n")
	if !strings.Contains(text, "2) \"100\"") || !strings.Contains(text, "17) \"idmp-maxsize\"\n18) (integer) 100") {
		t.Fatalf("after the refused CONFIG SET:\n%s", text)
	}
}
