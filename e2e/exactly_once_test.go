//go:build unix

package e2e

// Exactly once under the faults of issue 15: a batch line too big for one
// script call, an ACL user who may XADD but not write the state, an
// eviction policy that drops state, and the exit codes that tell a caller
// what to do next. Each test runs the real binary against real servers
// (ACL users, maxmemory, a replica, renamed commands) and counts the
// stream's entries: 0 duplicates and 0 losses.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// writeLines writes an NDJSON batch of n lines m-1..m-n (field n = i), and
// then the lines of extra as they are.
func writeLines(t *testing.T, path string, n int, extra ...string) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "{\"iid\":\"m-%d\",\"fields\":{\"n\":\"%d\"}}\n", i, i)
	}
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// keyDump is every key of the server with its DUMP and TTL: a state to
// compare before and after a refusal that must change nothing.
func keyDump(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		d, err := rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("DUMP %q: %v", k, err)
		}
		out[k] = d + "\x00ttl=" + strconv.FormatInt(rdb.PTTL(ctx, k).Val().Milliseconds(), 10)
	}
	return out
}

func sameDump(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed key %q", what, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s created key %q", what, k)
		}
	}
}

// TestBatchLineTooBigForScript: a line with more field/value arguments than
// one XADD from Lua takes (unpack stops near 8,000 values) is refused with
// 65 and its line number before anything of its chunk is written, however
// often the batch is run. Before: exit 70 "too many results to unpack" with
// the chunk's 500 adds written and not tracked, 1,000 entries after two
// runs.
func TestBatchLineTooBigForScript(t *testing.T) {
	t.Parallel()
	t.Run("native", func(t *testing.T) {
		t.Parallel()
		testNativeBatchLineTooBigForScript(t)
	})
	srv := redistest.New(t)
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	file := bigLineFile(t, c.Dir)
	for run := 1; run <= 2; run++ {
		r := c.Run("xadd", "s", "--pid", "p", "--batch", file, "--mode", "emulated")
		faultBatchInvariant(t, rdb, "s", 500)
		xlen := rdb.XLen(context.Background(), "s").Val()
		t.Logf("run %d: %s; XLEN %d", run, strings.TrimSpace(r.Stderr), xlen)
		if r.Code != 65 || !strings.Contains(r.Stderr, "line 501: 18000 field/value arguments") {
			t.Fatalf("run %d: want exit 65 naming line 501, got %s", run, r)
		}
		if xlen != 500 {
			t.Fatalf("run %d: XLEN %d, want the 500 lines before it, once", run, xlen)
		}
		missing, extra := faultScanStream(t, rdb, "s", 500)
		if missing != 0 || extra != 0 {
			t.Fatalf("run %d: %d missing, %d duplicated", run, missing, extra)
		}
	}
	// A single add too big for the script changes nothing either.
	args := []string{"xadd", "s", "--pid", "p", "--iid", "one", "--mode", "emulated"}
	for k := range 3901 {
		args = append(args, "f"+strconv.Itoa(k), "v")
	}
	before := keyDump(t, rdb)
	r := c.Run(args...)
	if r.Code != 65 || !strings.Contains(r.Stderr, "7802 field/value arguments: emulated IDMP takes at most 7800") {
		t.Fatalf("single add of 7802 arguments: want 65, got %s", r)
	}
	sameDump(t, "a refused single add", before, keyDump(t, rdb))
	// 7,800 go.
	c.Expect(0, args[:len(args)-2]...)
}

// TestACLRefusedBeforeWrite: an ACL user who may XADD but not write the
// IDMP state is refused (77) before the script writes anything: the stream
// stays as it was, and a full user's retry adds the message once. Before:
// the entry was added, the state write failed (77, "nothing was written"),
// and the full user's retry added it again. Each command the emulation
// writes with is taken away in turn; single adds, batches, cfgset and
// purge --stream all refuse without a change.
func TestACLRefusedBeforeWrite(t *testing.T) {
	t.Parallel()
	srv := redistest.New(t)
	rdb := faultRedis(t, srv)
	ctx := context.Background()
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	sock := strings.TrimPrefix(srv.URL, "unix://")
	as := func(user string) *clitest.CLI {
		return c.With("IDMPCTL_URL=unix://" + user + ":pw@" + sock)
	}
	if err := rdb.Do(ctx, "ACL", "SETUSER", "xaddonly", "on", ">pw", "~*", "+@read", "+@scripting", "+@connection", "+xadd", "+time").Err(); err != nil {
		t.Fatal(err)
	}
	// The user: XADD, but none of the state's writes.
	before := keyDump(t, rdb)
	r := as("xaddonly").Run("xadd", "s", "--pid", "p", "--iid", "i1", "f", "v", "--mode", "emulated")
	if r.Code != 77 {
		t.Fatalf("want 77, got %s", r)
	}
	sameDump(t, "a refused add", before, keyDump(t, rdb))
	if !strings.Contains(r.Stderr, "nothing was written") {
		t.Errorf("the refusal does not say nothing was written: %s", r.Stderr)
	}
	c.Expect(0, "xadd", "s", "--pid", "p", "--iid", "i1", "f", "v", "--mode", "emulated")
	if n := rdb.XLen(ctx, "s").Val(); n != 1 {
		t.Fatalf("XLEN %d after the refused add and a full user's retry, want 1", n)
	}
	file := filepath.Join(c.Dir, "b.ndjson")
	writeLines(t, file, 50)
	c.Expect(0, "xadd", "s", "--pid", "p", "--batch", file, "--batch-id", "b0", "--mode", "emulated")
	c.Expect(0, "xadd", "s", "--pid", "q", "--iid", "x", "f", "v", "--mode", "emulated")

	// Every command the writes use, taken away one at a time: each run
	// that needs it is refused, and changes nothing. (ZADD and ZREM are
	// the batch's index of progress records: single adds do without.)
	for _, cmd := range []string{"xadd", "hset", "hincrby", "hdel", "rpush", "ltrim", "sadd", "srem", "persist", "zadd", "zrem", "del", "xrange"} {
		user := "no-" + cmd
		if err := rdb.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-"+cmd).Err(); err != nil {
			t.Fatal(err)
		}
		runs := [][]string{
			{"xadd", "s", "--pid", "p", "--batch", file, "--batch-id", "b-" + cmd, "--mode", "emulated"},
		}
		if cmd != "zadd" && cmd != "zrem" {
			runs = append(runs, []string{"xadd", "s", "--pid", "p", "--iid", "new-" + cmd, "f", "v", "--mode", "emulated"})
		}
		switch cmd {
		case "hset", "del", "xrange":
			runs = append(runs, []string{"cfgset", "s", "--maxsize", "77", "--yes", "--mode", "emulated"})
		}
		switch cmd {
		case "srem", "del", "hset":
			runs = append(runs, []string{"purge", "--stream", "s", "--pid", "q", "--yes", "--mode", "emulated"})
		}
		for _, args := range runs {
			before := keyDump(t, rdb)
			r := as(user).Run(args...)
			if r.Code != 77 {
				t.Errorf("without %s: %s: want 77, got %s", cmd, strings.Join(args, " "), r)
				continue
			}
			sameDump(t, "without "+cmd+": "+args[0], before, keyDump(t, rdb))
		}
	}
	if n := rdb.XLen(ctx, "s").Val(); n != 52 {
		t.Fatalf("XLEN %d, want 52", n)
	}
}

// TestEvictionVolatileKeepsState: with maxmemory and volatile-lru, cache
// keys with TTLs push the server to evict. The IDMP state (emulated: its
// keys; native: inside the stream) and the batch's progress record have no
// TTL, so they stay: a rerun of the batch adds nothing. xadd, inspect
// --server and inspect STREAM warn about the policy. Before: the state
// keys (which had TTLs) were evicted first, inspect showed 0 tracked
// without a word, and the rerun added all 2,000 lines again.
func TestEvictionVolatileKeepsState(t *testing.T) {
	t.Parallel()
	eachMode(t, testEvictionVolatileKeepsState)
}

func testEvictionVolatileKeepsState(t *testing.T, mode string) {
	srv := redistest.New(t, "maxmemory 8mb", "maxmemory-policy volatile-lru")
	rdb := faultRedis(t, srv)
	ctx := context.Background()
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	if err := rdb.Do(ctx, "XADD", "s", "MAXLEN", "0", "*", "init", "1").Err(); err != nil {
		t.Fatal(err)
	}
	c.Expect(0, "cfgset", "s", "--maxsize", "10000", "--mode", mode, "--yes")
	file := filepath.Join(c.Dir, "b.ndjson")
	writeLines(t, file, 2000)
	first := c.Expect(0, "xadd", "s", "--pid", "p", "--batch", file, "--mode", mode)
	if n := strings.Count(first.Stderr, "maxmemory-policy volatile-lru"); n != 1 {
		t.Fatalf("xadd --batch warned %d times about the policy, want once:\n%s", n, first.Stderr)
	}
	value := strings.Repeat("x", 20000)
	var evicted int64
	for i := 0; i < 2000 && evicted < 200; i++ {
		_ = rdb.Set(ctx, "cache:"+strconv.Itoa(i), value, time.Hour).Err()
		if i%50 == 49 {
			evicted, _ = strconv.ParseInt(redistestInfoField(t, rdb, "stats", "evicted_keys"), 10, 64)
		}
	}
	if evicted < 200 {
		t.Fatalf("only %d keys evicted: no memory pressure", evicted)
	}
	r := c.Expect(0, "inspect", "s", "-o", "json", "--mode", mode)
	var view struct {
		Tracked int64 `json:"iids-tracked"`
		Lints   []struct{ Code string }
	}
	if err := json.Unmarshal([]byte(r.Stdout), &view); err != nil {
		t.Fatal(err)
	}
	codes := fmt.Sprint(view.Lints)
	if view.Tracked != 2000 || !strings.Contains(codes, "eviction") {
		t.Fatalf("after %d evictions: iids-tracked %d, lints %v; want 2000 and an eviction lint", evicted, view.Tracked, codes)
	}
	second := c.Expect(0, "xadd", "s", "--pid", "p", "--batch", file, "--mode", mode)
	missing, extra := faultScanStream(t, rdb, "s", 2000)
	t.Logf("%d keys evicted; rerun: %s; %d missing, %d duplicated", evicted, strings.TrimSpace(second.Stderr), missing, extra)
	if missing != 0 || extra != 0 {
		t.Fatalf("after eviction the rerun left %d missing, %d duplicated", missing, extra)
	}
	if !strings.Contains(second.Stderr, "maxmemory-policy volatile-lru") {
		t.Fatalf("the rerun did not warn about the policy:\n%s", second.Stderr)
	}
	// A single add warns once too, and inspect --server names the policy.
	one := c.Expect(0, "xadd", "s", "--pid", "p", "--iid", "single", "f", "v", "--mode", mode)
	if strings.Count(one.Stderr, "may evict keys") != 1 {
		t.Fatalf("single xadd: want one warning, got:\n%s", one.Stderr)
	}
	srvView := c.Expect(0, "inspect", "--server")
	if !strings.Contains(srvView.Stdout, "maxmemory-policy\tvolatile-lru") || !strings.Contains(srvView.Stderr, "may evict keys") {
		t.Fatalf("inspect --server:\n%s", srvView)
	}
}

// redistestInfoField reads one INFO field.
func redistestInfoField(t *testing.T, rdb *redis.Client, section, field string) string {
	t.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v
		}
	}
	return ""
}

// TestEvictionPartialStateInconsistent: under allkeys-* any key can go; a
// state with a part missing is reported as inconsistent, not as empty.
// Before: with the settings hash gone, inspect showed mode none and 0
// tracked while the add script still deduplicated on what was left.
// Emulated state only (native state lives in the stream: it goes whole),
// on any server (inspect --mode emulated).
func TestEvictionPartialStateInconsistent(t *testing.T) {
	t.Parallel()
	srv := redistest.New(t)
	rdb := faultRedis(t, srv)
	ctx := context.Background()
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	for i, k := range []struct{ gone, want string }{
		{"{S}:idmp", "the settings hash {S}:idmp is missing"},
		{"{S}:idmp:pids", "names 0 of the 2 producers"},
		{"{S}:idmp:order:p", `producer "p" has 1 iids but 0 in its order list`},
		{"{S}:idmp:ids:q", `producer "q" has 0 iids but 1 in its order list`},
	} {
		s := "s" + strconv.Itoa(i)
		c.Expect(0, "xadd", s, "--pid", "p", "--iid", "a", "f", "v", "--mode", "emulated")
		c.Expect(0, "xadd", s, "--pid", "q", "--iid", "b", "f", "v", "--mode", "emulated")
		if r := c.Expect(0, "inspect", s, "--mode", "emulated"); strings.Contains(r.Stdout, "inconsistent") {
			t.Fatalf("a whole state called inconsistent: %s", r)
		}
		rdb.Del(ctx, strings.ReplaceAll(k.gone, "S", s))
		r := c.Expect(0, "inspect", s, "--mode", "emulated")
		want := strings.ReplaceAll(k.want, "S", s)
		if !strings.Contains(r.Stdout, "lint\tinconsistent\t") || !strings.Contains(r.Stdout, want) || !strings.Contains(r.Stdout, "mode\temulated") {
			t.Fatalf("%s gone: want an inconsistent lint %q, got %s", k.gone, want, r)
		}
	}
}

// TestExitCodesOfServerStates: OOM under noeviction is 69 with a hint,
// READONLY (a replica) is 78 saying so, and a server without EVAL/EVALSHA
// is 78 with a hint, which inspect --server reports. Before: 70 for each,
// and inspect --server called the renamed server usable.
func TestExitCodesOfServerStates(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode string) { exitCodesOfServerStates(t, mode) })
}

func exitCodesOfServerStates(t *testing.T, mode string) {
	t.Run("oom", func(t *testing.T) {
		t.Parallel()
		srv := redistest.New(t, "maxmemory 1mb", "maxmemory-policy noeviction")
		rdb := faultRedis(t, srv)
		c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
		value := strings.Repeat("x", 100000)
		for i := 0; i < 100 && rdb.Set(context.Background(), "big:"+strconv.Itoa(i), value, 0).Err() == nil; i++ {
		}
		file := filepath.Join(c.Dir, "b.ndjson")
		writeLines(t, file, 10)
		for _, args := range [][]string{{"xadd", "s", "--pid", "p", "--iid", "a", "f", "v"}, {"xadd", "s", "--pid", "p", "--batch", file}} {
			before := keyDump(t, rdb)
			r := c.Run(append(args, "--mode", mode, "--retries", "0")...)
			if r.Code != 69 || !strings.Contains(r.Stderr, "out of memory") {
				t.Errorf("%s: want 69 with a hint, got %s", args[len(args)-2], r)
			}
			sameDump(t, "OOM", before, keyDump(t, rdb))
		}
	})
	t.Run("replica", func(t *testing.T) {
		t.Parallel()
		srv := redistest.New(t, "replicaof 127.0.0.1 1")
		c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
		r := c.Run("xadd", "s", "--pid", "p", "--iid", "a", "f", "v", "--mode", mode)
		if r.Code != 78 || !strings.Contains(r.Stderr, "this server is a replica") {
			t.Fatalf("want 78 saying replica, got %s", r)
		}
	})
	t.Run("no-eval", func(t *testing.T) {
		t.Parallel()
		srv := redistest.New(t, "rename-command EVALSHA xevalsha", "rename-command EVAL xeval")
		c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
		file := filepath.Join(c.Dir, "b.ndjson")
		writeLines(t, file, 10)
		for _, args := range [][]string{{"xadd", "s", "--pid", "p", "--iid", "a", "f", "v"}, {"xadd", "s", "--pid", "p", "--batch", file}} {
			r := c.Run(append(args, "--mode", mode)...)
			batch := args[len(args)-2] == "--batch"
			switch {
			case mode == "native" && !batch && r.Code != 0:
				// The server runs IDMP itself: a single add needs no script.
				t.Errorf("native IDMP needs no EVAL: %s", r)
			case mode == "native" && batch && (r.Code != 78 || !strings.Contains(r.Stderr, "one xadd at a time")):
				// The batch's progress record moves in its chunk script.
				t.Errorf("--batch: want 78 saying what to do, got %s", r)
			case mode == "emulated" && (r.Code != 78 || !strings.Contains(r.Stderr, "renamed or disabled")):
				t.Errorf("%s: want 78 with a hint, got %s", args[len(args)-2], r)
			}
		}
		if mode == "native" {
			// Auto mode too: its first try, the emulated script, cannot
			// run, and neither can it for a user without scripting.
			if r := c.Run("xadd", "s", "--pid", "p", "--iid", "b", "f", "v", "-o", "json"); r.Code != 0 || !strings.Contains(r.Stdout, `"mode":"native"`) {
				t.Errorf("auto mode without EVAL on Redis 8.6: %s", r)
			}
			plain := redistest.New(t, "user noscript on >pw ~* &* +@all -@scripting")
			u := c.With("IDMPCTL_URL=unix://noscript:pw@" + plain.Addr)
			if r := u.Run("xadd", "s", "--pid", "p", "--iid", "c", "f", "v", "-o", "json"); r.Code != 0 || !strings.Contains(r.Stdout, `"mode":"native"`) {
				t.Errorf("auto mode, a user without scripting, on Redis 8.6: %s", r)
			}
		}
		r := c.Expect(0, "inspect", "--server")
		if !strings.Contains(r.Stdout, "emulation\tunavailable: EVAL/EVALSHA are renamed or disabled") {
			t.Fatalf("inspect --server: %s", r)
		}
	})
}

// TestInterruptedExitCodes: SIGINT or SIGTERM stops a batch, a scan and a
// purge with 130 or 143 and what it did; a batch resumes after its last
// committed line, with every line once. The server is frozen while the
// signal comes, so it lands mid-command. Before: 69 ("use of closed network
// connection") for the batch, 70 for inspect --match and purge --match.
func TestInterruptedExitCodes(t *testing.T) {
	t.Parallel()
	eachBatchMode(t, func(t *testing.T, m batchMode) {
		t.Parallel()
		testInterruptedExitCodes(t, m)
	})
}

func testInterruptedExitCodes(t *testing.T, m batchMode) {
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	ctx := context.Background()
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	file := filepath.Join(c.Dir, "b.ndjson")
	const lines = 30000
	writeLines(t, file, lines)
	for i := range 100 {
		rdb.Set(ctx, "idem:"+strconv.Itoa(i), `{"status":"COMPLETED"}`, 0)
	}
	// A batch's first signal waits for the replies on the wire, which the
	// frozen server never sends, for --timeout at most; its second stops
	// it at once (--timeout 60s: past the wait below).
	cases := []struct {
		sig   syscall.Signal
		code  int
		twice bool
		args  []string
	}{
		{syscall.SIGINT, 130, false, append([]string{"xadd", "s", "--pid", "p", "--batch", file, "--timeout", "3s"}, m.flags...)},
		{syscall.SIGTERM, 143, true, append([]string{"xadd", "s", "--pid", "p", "--batch", file, "--timeout", "60s"}, m.flags...)},
		{syscall.SIGINT, 130, false, []string{"inspect", "--match", "idem:*", "--timeout", "20s"}},
		{syscall.SIGTERM, 143, false, []string{"purge", "--match", "idem:*", "--yes", "--timeout", "20s"}},
	}
	names := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}
	for _, k := range cases {
		var p *clitest.Proc
		if k.args[0] == "xadd" {
			// Mid-batch: once it has added lines.
			before := rdb.XLen(ctx, "s").Val()
			p = c.Start(k.args...)
			faultPollFast(30*time.Second, func() bool { return rdb.XLen(ctx, "s").Val() > before || p.Exited() })
			faultFreeze(t, srv)
		} else {
			// Mid-scan: the server answers nothing (its socket still takes
			// the connection).
			faultFreeze(t, srv)
			p = c.Start(k.args...)
		}
		time.Sleep(300 * time.Millisecond)
		if err := syscall.Kill(p.Pid(), k.sig); err != nil {
			t.Fatal(err)
		}
		if k.twice {
			faultWaitFor(30*time.Second, func() bool { return strings.Contains(p.StderrSoFar(), "a second signal stops at once") || p.Exited() })
			if err := syscall.Kill(p.Pid(), k.sig); err != nil {
				t.Fatal(err)
			}
		}
		r := p.Wait(30 * time.Second)
		faultThaw(t, srv)
		if k.args[0] == "xadd" {
			faultBatchInvariant(t, rdb, "s", lines)
		}
		t.Logf("%s: after %s: %s", strings.Join(k.args[:2], " "), r.Elapsed.Round(time.Millisecond), strings.ReplaceAll(strings.TrimSpace(r.Stderr), "\n", " | "))
		if r.Code != k.code || !strings.Contains(r.Stderr, "interrupted ("+names[k.sig]+")") {
			t.Fatalf("%s: want %d, got %s", k.args[0], k.code, r)
		}
		if strings.Contains(r.Stderr, "use of closed network connection") {
			t.Errorf("%s: the closed connection reached the user: %s", k.args[0], r.Stderr)
		}
		// The frozen server answered none of the chunks sent: they may be
		// committed once it thaws.
		if k.args[0] == "xadd" && !strings.Contains(r.Stderr, "lines sent after them may be too") {
			t.Errorf("the batch did not say what may be committed and how to go on: %s", r.Stderr)
		}
	}
	wantPath(t, m, c.Expect(0, append([]string{"xadd", "s", "--pid", "p", "--batch", file}, m.flags...)...).Stderr)
	missing, extra := faultScanStream(t, rdb, "s", lines)
	if missing != 0 || extra != 0 {
		t.Fatalf("after two interrupted runs and a rerun: %d missing, %d duplicated", missing, extra)
	}
}

// TestInterruptedBatchPrintsItsLines: a batch stopped by SIGINT prints the
// result of every line it committed, the chunks on the wire at the signal
// included, and its hint names exactly the last of them: the rerun resumes
// after that line, and the two runs' outputs hold every input line once.
// Before: the chunks in flight were committed after the signal without
// their results (the audit: 214,000 + 84,000 result lines for 300,000).
func TestInterruptedBatchPrintsItsLines(t *testing.T) {
	t.Parallel()
	eachBatchMode(t, func(t *testing.T, m batchMode) {
		t.Parallel()
		testInterruptedBatchPrintsItsLines(t, m)
	})
}

func testInterruptedBatchPrintsItsLines(t *testing.T, m batchMode) {
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	ctx := context.Background()
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	file := filepath.Join(c.Dir, "b.ndjson")
	const total = 100_000
	writeLines(t, file, total)
	args := append([]string{"xadd", "s", "--pid", "p", "--batch", file, "-o", "json"}, m.flags...)
	p := c.Start(args...)
	// Mid-batch: with lines committed and chunks on the wire.
	faultPollFast(30*time.Second, func() bool { return rdb.XLen(ctx, "s").Val() >= 10_000 || p.Exited() })
	if err := syscall.Kill(p.Pid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	first := p.Wait(30 * time.Second)
	h := regexp.MustCompile(`lines 1-(\d+) are committed`).FindStringSubmatch(first.Stderr)
	if first.Code != 130 || h == nil {
		t.Fatalf("first run: want 130 and the lines committed, got %s", first)
	}
	said, _ := strconv.Atoi(h[1])
	lines := func(r clitest.Result, from int) int {
		t.Helper()
		out := faultLines(r.Stdout)
		for i, l := range out {
			var j struct{ Line int }
			if err := json.Unmarshal([]byte(l), &j); err != nil || j.Line != from+i {
				t.Fatalf("result %d: want line %d, got %q", i+1, from+i, l)
			}
		}
		return len(out)
	}
	printed := lines(first, 1)
	second := c.Run(args...)
	if second.Code != 0 {
		t.Fatalf("rerun: %s", second)
	}
	rm := regexp.MustCompile(`lines 1-(\d+) were committed by an earlier run`).FindStringSubmatch(second.Stderr)
	if rm == nil {
		t.Fatalf("rerun: does not say where it resumed: %s", second.Stderr)
	}
	earlier, _ := strconv.Atoi(rm[1])
	rest := lines(second, earlier+1)
	t.Logf("%s: interrupted after %s: said lines 1-%d committed, printed %d; rerun: lines 1-%d committed earlier, printed %d: %d results for %d lines",
		m.name, first.Elapsed.Round(time.Millisecond), said, printed, earlier, rest, printed+rest, total)
	if printed != said || earlier != said || printed+rest != total {
		t.Errorf("interrupted run said lines 1-%d, printed %d results; the rerun found lines 1-%d committed and printed %d: %d results for %d lines",
			said, printed, earlier, rest, printed+rest, total)
	}
	if missing, extra := faultScanStream(t, rdb, "s", total); missing != 0 || extra != 0 {
		t.Fatalf("stream: %d missing, %d duplicated", missing, extra)
	}
}

// TestInterruptedBatchOfStalledProducer: a batch reading a producer that
// has written nothing for a while stops on SIGTERM at once, with the lines
// it has exactly: before, it waited for the producer's next line or its
// end (a stalled producer held the exit for good).
func TestInterruptedBatchOfStalledProducer(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close() // after the run: the producer stalls throughout
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL).WithStdin(pr)
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(pw, "{\"iid\":\"m-%d\",\"fields\":{\"n\":\"%d\"}}\n", i, i)
	}
	p := c.Start("xadd", "s", "--pid", "p", "--batch", "-")
	pr.Close()
	faultWaitFor(30*time.Second, func() bool { return rdb.XLen(context.Background(), "s").Val() == 3 || p.Exited() })
	if err := syscall.Kill(p.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := p.Wait(30 * time.Second)
	if r.Code != 143 || !strings.Contains(r.Stderr, "lines 1-3 are committed, none after them") || len(faultLines(r.Stdout)) != 3 {
		t.Fatalf("want 143, 3 results and lines 1-3 committed, got %s", r)
	}
}

// TestInterruptedBatchWaitingForItsInput: a signal while the batch reads
// a stalled producer's lines before any is sent (the first line, read for
// the default batch ID; the committed lines, read again to resume) ends the
// run, 143 with how far the batch is committed. Before: SIGTERM, once or
// twice, left idmpctl waiting for the producer, and the test killed it.
func TestInterruptedBatchWaitingForItsInput(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	line := func(i int) string { return fmt.Sprintf("{\"iid\":\"m-%d\",\"fields\":{\"n\":\"%d\"}}\n", i, i) }
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL).WithStdin(strings.NewReader(line(1) + line(2)))
	if r := c.Run("xadd", "r", "--pid", "p", "--batch", "-"); r.Code != 0 {
		t.Fatalf("the first run: %s", r)
	}
	for _, tc := range []struct{ name, stream, written, want string }{
		{"first line", "s", "", "no line is committed"},
		{"resuming", "r", line(1), "lines 1-2 are committed, none after them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pw.Close() // after the run: the producer stalls throughout
			io.WriteString(pw, tc.written)
			p := clitest.New(t, "IDMPCTL_URL="+srv.URL).WithStdin(pr).Start("xadd", tc.stream, "--pid", "p", "--batch", "-")
			pr.Close()
			if !faultWaitFor(30*time.Second, func() bool { return readingStdin(p.Pid()) || p.Exited() }) {
				t.Fatal("never read its stdin")
			}
			if err := syscall.Kill(p.Pid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			r := p.Wait(15 * time.Second)
			if r.Code != 143 || !strings.Contains(r.Stderr, tc.want) || r.Stdout != "" {
				t.Fatalf("want 143, no result and %q, got %s", tc.want, r)
			}
		})
	}
}

// readingStdin reports whether a thread of process pid waits in read(0, ...)
// (Linux /proc; elsewhere, after a second).
func readingStdin(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		time.Sleep(time.Second)
		return true
	}
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/syscall", pid, task.Name()))
		if strings.HasPrefix(string(b), "0 0x0 ") {
			return true
		}
	}
	return false
}

// TestConcurrentRunsOfOneBatch: two runs of the same batch at once; the one
// behind stops with 75 (busy), the other completes, and every line is in
// the stream once. Before: the one behind exited 70 ("its replies are not
// kept").
func TestConcurrentRunsOfOneBatch(t *testing.T) {
	t.Parallel()
	eachBatchMode(t, func(t *testing.T, m batchMode) {
		t.Parallel()
		testConcurrentRunsOfOneBatch(t, m)
	})
}

func testConcurrentRunsOfOneBatch(t *testing.T, m batchMode) {
	srv := redistest.New(t)
	rdb := faultRedis(t, srv)
	ctx := context.Background()
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	file := filepath.Join(c.Dir, "b.ndjson")
	const lines = 100000
	writeLines(t, file, lines)
	args := append([]string{"xadd", "s", "--pid", "p", "--batch", file, "--timeout", "20s"}, m.flags...)
	a := c.Start(args...)
	faultPollFast(30*time.Second, func() bool { return rdb.XLen(ctx, "s").Val() > 2000 || a.Exited() })
	// The second run starts while the first has chunks in flight: the
	// server is held while both send, then both go.
	faultFreeze(t, srv)
	b := c.Start(args...)
	time.Sleep(500 * time.Millisecond)
	faultThaw(t, srv)
	ra, rb := a.Wait(2*time.Minute), b.Wait(2*time.Minute)
	codes := []int{ra.Code, rb.Code}
	t.Logf("runs ended %v", codes)
	busy := ra
	if rb.Code == 75 {
		busy = rb
	}
	if !(ra.Code == 0 && rb.Code == 75 || ra.Code == 75 && rb.Code == 0) {
		t.Fatalf("want one run 0 and one 75, got:\n%s\n%s", ra, rb)
	}
	if !strings.Contains(busy.Stderr, "another run of the batch") {
		t.Fatalf("the busy run does not say why: %s", busy)
	}
	if ra.Code == 0 {
		wantPath(t, m, ra.Stderr)
	} else {
		wantPath(t, m, rb.Stderr)
	}
	missing, extra := faultScanStream(t, rdb, "s", lines)
	if missing != 0 || extra != 0 {
		t.Fatalf("%d missing, %d duplicated", missing, extra)
	}
}

// TestValueOverProtoMaxBulkLen: a value longer than the server's
// proto-max-bulk-len is refused with 65 (and its line number) before it is
// sent; the server would refuse the whole command and close the
// connection. Before: exit 70 (batch) and 69 after three retries (single).
func TestValueOverProtoMaxBulkLen(t *testing.T) {
	t.Parallel()
	eachMode(t, testValueOverProtoMaxBulkLen)
}

func testValueOverProtoMaxBulkLen(t *testing.T, mode string) {
	srv := redistest.New(t, "proto-max-bulk-len 1mb")
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	big := strings.Repeat("x", 2_000_000)
	file := filepath.Join(c.Dir, "b.ndjson")
	writeLines(t, file, 3, `{"iid":"big","fields":{"n":"`+big+`"}}`)
	r := c.Run("xadd", "s", "--pid", "p", "--batch", file, "--mode", mode)
	if r.Code != 65 || !strings.Contains(r.Stderr, "line 4: a value of 2000000 bytes: the server takes at most 1048576") {
		t.Fatalf("batch: want 65 naming line 4, got %s", r)
	}
	faultBatchInvariant(t, rdb, "s", 3)
	if n := rdb.XLen(context.Background(), "s").Val(); n != 3 {
		t.Fatalf("XLEN %d, want the 3 lines before it", n)
	}
	js := filepath.Join(c.Dir, "v.json")
	if err := os.WriteFile(js, []byte(`{"n":"`+big+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	before := keyDump(t, rdb)
	r = c.Run("xadd", "s", "--pid", "p", "--iid", "one", "--json", "@"+js, "--mode", mode)
	if r.Code != 65 || !strings.Contains(r.Stderr, "proto-max-bulk-len") {
		t.Fatalf("single add: want 65, got %s", r)
	}
	sameDump(t, "a refused single add", before, keyDump(t, rdb))
}

// bigLineFile writes big.ndjson in dir: 500 plain lines, then a line of
// 9,000 field/value pairs (more than Lua's unpack takes in one XADD).
func bigLineFile(t *testing.T, dir string) string {
	t.Helper()
	pairs := make([]string, 0, 9000)
	for k := range 9000 {
		pairs = append(pairs, fmt.Sprintf("[\"f%d\",\"v\"]", k))
	}
	file := filepath.Join(dir, "big.ndjson")
	writeLines(t, file, 500, `{"iid":"huge","fields":[`+strings.Join(pairs, ",")+`]}`)
	return file
}

// The native batch has the same bound (its chunk script hands the fields
// to XADD with Lua's unpack): the line stops the batch, the lines before it
// committed, with the hint to add it with a single xadd, which has no such
// bound natively; a rerun adds nothing again.
func testNativeBatchLineTooBigForScript(t *testing.T) {
	srv := redistest.NewNative(t)
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	file := bigLineFile(t, c.Dir)
	for run := 1; run <= 2; run++ {
		r := c.Expect(65, "xadd", "s", "--pid", "p", "--batch", file)
		if !strings.Contains(r.Stderr, "line 501") || !strings.Contains(r.Stderr, "single xadd") {
			t.Errorf("run %d: %s", run, r)
		}
		if n := rdb.XLen(context.Background(), "s").Val(); n != 500 {
			t.Fatalf("run %d: XLEN %d, want 500", run, n)
		}
	}
	pairs := make([]string, 0, 18000)
	for k := range 9000 {
		pairs = append(pairs, fmt.Sprintf("f%d", k), "v")
	}
	c.Expect(0, append([]string{"xadd", "s", "--pid", "p", "--iid", "huge"}, pairs...)...)
	if n := len(rdb.XRevRangeN(context.Background(), "s", "+", "-", 1).Val()[0].Values); n != 9000 {
		t.Errorf("the big line has %d fields", n)
	}
}

// TestInterruptedBatchWaitingForReplicas: a signal while a chunk's WAIT
// waits for a frozen replica. The warning names the wait with --timeout
// (the run waits for both), and the hint keeps what the wait found (0 of
// 1 replicas acknowledged), not only "interrupted". Before: "within
// --timeout 2s" for a 20 s wait, and the shortfall was lost.
func TestInterruptedBatchWaitingForReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	replica := redistest.NewReplica(t, srv)
	if err := srv.WaitReplicas(1, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	file := filepath.Join(c.Dir, "b.ndjson")
	writeLines(t, file, 2000)
	faultFreeze(t, replica)
	p := c.Start("xadd", "s", "--pid", "p", "--batch", file, "--wait-replicas", "1", "--wait-timeout", "3s", "--timeout", "2s")
	rdb := faultRedis(t, srv)
	if !faultWaitFor(30*time.Second, func() bool { return rdb.XLen(context.Background(), "s").Val() > 0 || p.Exited() }) {
		t.Fatal("nothing added")
	}
	if err := syscall.Kill(p.Pid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := p.Wait(30 * time.Second)
	for _, want := range []string{"within --timeout 2s plus the replicas' wait, 3s", "0 of 1 replicas acknowledged the write within 3s"} {
		if r.Code != 130 || !strings.Contains(r.Stderr, want) {
			t.Fatalf("want 130 and %q, got %s", want, r)
		}
	}
}
