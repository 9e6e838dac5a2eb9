//go:build unix

package main

// Fault tests: idmpctl (the real binary, on PATH through TestMain) against a
// real redis-server that is killed, frozen or restarted while it works, and
// claim runners killed at random. Each test logs its figures (t.Logf); run
// with -v to see them. -short shrinks sizes and rounds.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// faultAOF makes every acknowledged write durable across kill -9.
var faultAOF = []string{"appendonly yes", "appendfsync always"}

// faultServer starts a redis-server on a free loopback port for t.
func faultServer(t *testing.T, config ...string) *redistest.Server {
	t.Helper()
	dir := t.TempDir()
	// The free port can be taken between FreePort and the bind by a
	// server of a parallel test: pick another.
	for attempt := 1; ; attempt++ {
		srv, err := redistest.Start(redistest.Options{Dir: dir, Config: config})
		if err == nil {
			t.Cleanup(srv.Stop)
			return srv
		}
		if attempt == 5 || !strings.Contains(err.Error(), "Address already in use") {
			t.Fatal(err)
		}
	}
}

// faultFreeze SIGSTOPs srv until the test ends (or faultThaw is called).
func faultFreeze(t *testing.T, srv *redistest.Server) {
	t.Helper()
	t.Cleanup(func() { _ = srv.Thaw() })
	if err := srv.Freeze(); err != nil {
		t.Fatal(err)
	}
}

func faultThaw(t *testing.T, srv *redistest.Server) {
	t.Helper()
	if err := srv.Thaw(); err != nil {
		t.Fatal(err)
	}
}

// faultRedis reads state independently of idmpctl.
func faultRedis(t *testing.T, srv *redistest.Server) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func faultHGetAll(t *testing.T, rdb *redis.Client, key string) map[string]string {
	t.Helper()
	h, err := rdb.HGetAll(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	return h
}

// faultServerMs is the server clock (claims are decided on it).
func faultServerMs(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	tm, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return tm.UnixMilli()
}

// faultCLI runs idmpctl against one server, in one working directory.
type faultCLI struct {
	t   *testing.T
	url string
	dir string
	env []string
}

func newFaultCLI(t *testing.T, url string) *faultCLI {
	return &faultCLI{t: t, url: url, dir: t.TempDir(), env: faultEnv(url)}
}

// faultEnv is the environment of every idmpctl the tests start: the test
// server's URL and nothing inherited that would change where or how it
// connects. idmpctl is this test binary: under -race it would sleep 1 s at
// exit unless told not to.
func faultEnv(url string) []string {
	drop := []string{"IDMPCTL_URL", "REDIS_URL", "IDMPCTL_PASSWORD", "REDISCLI_AUTH",
		"NO_COLOR", "CLICOLOR_FORCE", "IDMPCTL_FORCE_TTY", "GORACE"}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, name) {
			env = append(env, kv)
		}
	}
	return append(env, "IDMPCTL_URL="+url,
		strings.TrimSpace("GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0"))
}

// faultResult is how one idmpctl ended.
type faultResult struct {
	Code           int            // exit code; -1 when ended by a signal
	Signal         syscall.Signal // the signal that ended it, if any
	Stdout, Stderr string
	Elapsed        time.Duration
}

func (r faultResult) String() string {
	how := fmt.Sprintf("exit %d", r.Code)
	if r.Signal != 0 {
		how = "killed by " + r.Signal.String()
	}
	return fmt.Sprintf("%s after %s\nstdout: %s\nstderr: %s",
		how, r.Elapsed.Round(time.Millisecond), faultClip(r.Stdout), faultClip(r.Stderr))
}

func faultClip(s string) string {
	if len(s) > 2000 {
		return s[:1000] + "\n...\n" + s[len(s)-1000:]
	}
	return s
}

// faultProc is an idmpctl started in the background. Its output goes to files,
// not pipes, so Wait returns when idmpctl exits even when a grandchild it
// leaves behind still holds an inherited descriptor.
type faultProc struct {
	t          *testing.T
	cmd        *exec.Cmd
	outF, errF *os.File
	start      time.Time
	done       chan struct{}
	res        faultResult
}

// start launches idmpctl with args; the test's cleanup kills it if it is
// still running.
func (c *faultCLI) start(args ...string) *faultProc {
	c.t.Helper()
	return c.startIn(nil, args...)
}

// startIn is start with stdin from the given file (nil: none).
func (c *faultCLI) startIn(stdin *os.File, args ...string) *faultProc {
	t := c.t
	t.Helper()
	outF, err := os.CreateTemp(c.dir, ".stdout-*")
	if err != nil {
		t.Fatal(err)
	}
	errF, err := os.CreateTemp(c.dir, ".stderr-*")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("idmpctl", args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = c.dir, c.env, outF, errF
	if stdin != nil {
		cmd.Stdin = stdin
	}
	p := &faultProc{t: t, cmd: cmd, outF: outF, errF: errF, done: make(chan struct{})}
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start idmpctl: %v", err)
	}
	go func() {
		_ = cmd.Wait()
		p.res.Elapsed = time.Since(p.start)
		p.res.Code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.res.Signal = ws.Signal()
		}
		p.res.Stdout, p.res.Stderr = faultReadFile(outF), faultReadFile(errF)
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.kill()
		<-p.done
	})
	return p
}

func faultReadFile(f *os.File) string {
	b, _ := os.ReadFile(f.Name())
	_ = f.Close()
	_ = os.Remove(f.Name())
	return string(b)
}

// kill sends SIGKILL to idmpctl (never to a reused pid: os.Process tracks
// the child it started).
func (p *faultProc) kill() error { return p.cmd.Process.Kill() }

// stderrSoFar is what idmpctl has written to stderr yet.
func (p *faultProc) stderrSoFar() string {
	b, _ := os.ReadFile(p.errF.Name())
	return string(b)
}

// status describes how idmpctl ended, or that it still runs.
func (p *faultProc) status() string {
	if !p.exited() {
		return "still running"
	}
	return p.res.String()
}

func (p *faultProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to bound for idmpctl to end; past it, kills it and fails.
func (p *faultProc) wait(bound time.Duration) faultResult {
	p.t.Helper()
	select {
	case <-p.done:
		return p.res
	case <-time.After(bound):
	}
	_ = p.kill()
	<-p.done
	p.t.Fatalf("idmpctl %s: still running after %s, killed\n%s", strings.Join(p.cmd.Args[1:], " "), bound, p.res)
	return p.res
}

// run runs idmpctl to completion (bounded by a minute).
func (c *faultCLI) run(args ...string) faultResult {
	c.t.Helper()
	return c.start(args...).wait(time.Minute)
}

// expect runs idmpctl and checks its exit code.
func (c *faultCLI) expect(code int, args ...string) faultResult {
	c.t.Helper()
	r := c.run(args...)
	if r.Code != code {
		c.t.Fatalf("idmpctl %s: want exit %d, got %s", strings.Join(args, " "), code, r)
	}
	return r
}

// faultWaitFor polls cond every few ms for up to bound.
func faultWaitFor(bound time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(bound)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func faultExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// faultProcessGone reports whether pid has exited (a zombie counts: it runs
// nothing, and a container's init may never reap it).
func faultProcessGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return runtime.GOOS == "linux"
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// faultGroupMembers lists the live processes of process group pgid (Linux).
func faultGroupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid && !faultProcessGone(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func faultReadPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}

func faultAtoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func faultLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// TestFaultServerKilledMidBatch kills -9 an AOF-always server in the middle
// of a 100,000-line emulated batch, restarts it on the same data, re-runs
// the whole file and checks the stream holds every line exactly once.
//
// Re-running is only exactly-once while every line the first run wrote is
// still tracked: at most IDMP-MAXSIZE iids per pid (10000 at most) within
// IDMP-DURATION. So the stream gets the widest window first, and the kill
// comes as soon as the batch shows progress (the first run writes a few
// hundred lines, far inside the window).
func TestFaultServerKilledMidBatch(t *testing.T) {
	t.Parallel()
	const maxsize = 10000
	total := 100_000
	if testing.Short() {
		total = 20_000
	}
	began := time.Now()
	srv := faultServer(t, faultAOF...)
	rdb := faultRedis(t, srv)
	c := newFaultCLI(t, srv.URL)
	ctx := context.Background()

	file := filepath.Join(c.dir, "batch.ndjson")
	faultBatchFile(t, file, total)
	// cfgset needs the stream: create it empty.
	if err := rdb.Do(ctx, "XADD", "s", "MAXLEN", "0", "*", "init", "1").Err(); err != nil {
		t.Fatal(err)
	}
	c.expect(0, "cfgset", "s", "--duration", "86400", "--maxsize", strconv.Itoa(maxsize), "--mode", "emulated", "--yes")

	batch := []string{"xadd", "s", "--pid", "p", "--batch", file, "--retries", "0", "--mode", "emulated"}
	p := c.start(batch...)
	var seen int64
	progressed := faultPollFast(20*time.Second, func() bool {
		n, err := rdb.XLen(ctx, "s").Result()
		seen = n
		return (err == nil && n > 0) || p.exited()
	})
	if !progressed || p.exited() {
		t.Fatalf("no progress to kill in (XLEN %d): %s", seen, p.status())
	}
	srv.Kill()
	first := p.wait(30 * time.Second)
	if first.Code != 69 {
		t.Fatalf("first run: want exit 69 (unavailable), got %s", first)
	}
	h := regexp.MustCompile(`lines 1-(\d+) are confirmed committed, and the progress record knows exactly how far the rest got`).FindStringSubmatch(first.Stderr)
	if h == nil {
		t.Fatalf("first run: stderr does not say what is committed:\n%s", first.Stderr)
	}
	confirmed, _ := strconv.Atoi(h[1])
	out1 := faultLines(first.Stdout)
	if len(out1) != confirmed {
		t.Fatalf("first run: %d lines confirmed, %d results printed", confirmed, len(out1))
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	committed, err := rdb.XLen(ctx, "s").Result()
	if err != nil {
		t.Fatal(err)
	}
	// Every line reported written survived (appendfsync always), and the
	// chunks in flight may have been committed without a reply.
	if committed < int64(confirmed) {
		t.Fatalf("after restart XLEN %d, but the first run confirmed %d lines", committed, confirmed)
	}

	// The same command again resumes exactly after the last committed line,
	// as the progress record says: nothing twice, nothing lost.
	second := c.run(batch...)
	if second.Code != 0 {
		t.Fatalf("second run: want exit 0, got %s", second)
	}
	rm := regexp.MustCompile(`lines 1-(\d+) were committed by an earlier run: resumed after line (\d+)`).FindStringSubmatch(second.Stderr)
	if rm == nil || rm[1] != strconv.FormatInt(committed, 10) {
		t.Fatalf("second run: did not resume after line %d: %s", committed, second.Stderr)
	}
	sm := regexp.MustCompile(`xadd --batch: (\d+) lines: (\d+) added, (\d+) duplicates`).FindStringSubmatch(second.Stderr)
	if sm == nil {
		t.Fatalf("second run: no summary on stderr: %s", second.Stderr)
	}
	n2, _ := strconv.Atoi(sm[1])
	added2, _ := strconv.Atoi(sm[2])
	if int64(n2) != int64(total)-committed || added2 != n2 || len(faultLines(second.Stdout)) != n2 {
		t.Fatalf("second run: %d lines, %d added, %d printed; want the %d after line %d, all added",
			n2, added2, len(faultLines(second.Stdout)), int64(total)-committed, committed)
	}

	missing, extra := faultScanStream(t, rdb, "s", total)
	if xlen, _ := rdb.XLen(ctx, "s").Result(); xlen != int64(total) || missing != 0 || extra != 0 {
		t.Fatalf("stream: XLEN %d for %d lines: %d missing, %d duplicated", xlen, total, missing, extra)
	}
	insp := c.expect(0, "inspect", "s", "-o", "json")
	if !strings.Contains(insp.Stdout, fmt.Sprintf(`"iids-added":%d,`, total)) ||
		!strings.Contains(insp.Stdout, `"iids-duplicates":0,`) {
		t.Errorf("inspect: counters do not say %d added, 0 duplicates: %s", total, insp.Stdout)
	}
	t.Logf("first run's stderr:\n%s", first.Stderr)
	t.Logf("%d lines; killed at XLEN %d; first run: exit 69 with %d lines confirmed (%d committed) in %s; "+
		"second run: resumed after line %d, %d added in %s; stream: %d entries, 0 duplicated, 0 missing; total %s",
		total, seen, confirmed, committed, first.Elapsed.Round(time.Millisecond), committed, added2,
		second.Elapsed.Round(time.Millisecond), total, time.Since(began).Round(time.Millisecond))
}

// faultPollFast is faultWaitFor with a sub-millisecond poll, for catching a batch
// early.
func faultPollFast(bound time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Microsecond)
	}
	return true
}

func faultBatchFile(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(w, "{\"iid\":\"m-%d\",\"fields\":{\"n\":\"%d\"}}\n", i, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// faultScanStream reads the whole stream in chunks and counts, for n = 1..total,
// the values never seen and the extra copies; any other entry is an error.
func faultScanStream(t *testing.T, rdb *redis.Client, stream string, total int) (missing, extra int) {
	t.Helper()
	seen := make([]int, total+1)
	start := "-"
	for range total/5000 + 2 {
		msgs, err := rdb.XRangeN(context.Background(), stream, start, "+", 5000).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			v, _ := m.Values["n"].(string)
			n, err := strconv.Atoi(v)
			if len(m.Values) != 1 || err != nil || n < 1 || n > total {
				t.Fatalf("unexpected entry %s %v", m.ID, m.Values)
			}
			seen[n]++
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
	for _, k := range seen[1:] {
		switch {
		case k == 0:
			missing++
		case k > 1:
			extra += k - 1
		}
	}
	return missing, extra
}

// TestFaultServerFrozenTimesOut: a frozen server (SIGSTOP: the port still
// accepts connections) makes idmpctl fail with 69 within its --timeout, and
// nothing is written when the server resumes.
func TestFaultServerFrozenTimesOut(t *testing.T) {
	t.Parallel()
	srv := faultServer(t)
	rdb := faultRedis(t, srv)
	c := newFaultCLI(t, srv.URL)
	faultFreeze(t, srv)
	runs := [][]string{
		{"inspect", "--server", "--timeout", "500ms"},
		{"xadd", "s", "--pid", "p", "--iid", "i-1", "--timeout", "500ms", "--retries", "0", "--mode", "emulated", "f", "v"},
		{"xadd", "s", "--pid", "p", "--iid", "i-1", "--timeout", "500ms", "--retries", "0", "f", "v"},
	}
	for _, args := range runs {
		r := c.run(args...)
		if r.Code != 69 || r.Elapsed > 5*time.Second {
			t.Errorf("idmpctl %s against a frozen server: want exit 69 within 5s, got %s", strings.Join(args, " "), r)
		}
		if !regexp.MustCompile(`i/o timeout|deadline exceeded|timed out`).MatchString(r.Stderr) {
			t.Errorf("idmpctl %s: stderr does not say it timed out: %s", args[0], r.Stderr)
		}
		t.Logf("%s against a frozen server: exit %d after %s", strings.Join(args[:3], " "), r.Code, r.Elapsed.Round(time.Millisecond))
	}
	faultThaw(t, srv)
	if n, err := rdb.Exists(context.Background(), "s").Result(); err != nil || n != 0 {
		t.Errorf("after thawing: EXISTS s = %d (%v): a timed-out xadd wrote", n, err)
	}
	c.expect(0, "inspect", "--server", "--timeout", "5s")
}

// TestFaultServerFrozenDuringClaimRun freezes the server while claim run's
// command runs: renewals fail, and once they have failed for longer than the
// lease the command is stopped and idmpctl exits 76. The record is left as
// it was (PROCESSING, token 1) and is taken over once its lease passes.
func TestFaultServerFrozenDuringClaimRun(t *testing.T) {
	t.Parallel()
	srv := faultServer(t)
	rdb := faultRedis(t, srv)
	c := newFaultCLI(t, srv.URL)
	const key = "job:frozen"
	p := c.start("claim", "run", key, "--lease", "1s", "--ttl", "1m", "--timeout", "300ms", "--",
		"sh", "-c", `echo $$ > cmdpid; touch started; sleep 30; touch finished`)
	if !faultWaitFor(20*time.Second, func() bool { return faultExists(filepath.Join(c.dir, "started")) || p.exited() }) || p.exited() {
		t.Fatalf("the command did not start: %s", p.status())
	}
	before := faultHGetAll(t, rdb, key)
	if before["status"] != "PROCESSING" || before["token"] != "1" {
		t.Fatalf("before the freeze: %v", before)
	}
	cmdPid := faultReadPid(t, filepath.Join(c.dir, "cmdpid"))
	frozenAt := time.Now()
	faultFreeze(t, srv)
	r := p.wait(20 * time.Second)
	stoppedAfter := time.Since(frozenAt)
	if r.Code != 76 || stoppedAfter > 5*time.Second {
		t.Fatalf("want exit 76 within 5s of the freeze, got %s", r)
	}
	if !regexp.MustCompile(`renewals failed for \S+, longer than the lease 1s`).MatchString(r.Stderr) ||
		!strings.Contains(r.Stderr, "the command was stopped") {
		t.Errorf("stderr does not say renewals failed past the lease and the command was stopped: %s", r.Stderr)
	}
	if !faultWaitFor(5*time.Second, func() bool { return len(faultGroupMembers(cmdPid)) == 0 }) {
		t.Errorf("the command's process group still runs: %v", faultGroupMembers(cmdPid))
	}
	if faultExists(filepath.Join(c.dir, "finished")) {
		t.Error("the command finished although its claim was given up")
	}

	faultThaw(t, srv)
	after := faultHGetAll(t, rdb, key)
	for _, f := range []string{"status", "token", "attempts", "owner", "created"} {
		if after[f] != before[f] {
			t.Errorf("after thawing, %s = %q, was %q: %v", f, after[f], before[f], after)
		}
	}
	if after["result"] != "" || after["error"] != "" || faultAtoi(after["lease_until"]) < faultAtoi(before["lease_until"]) {
		t.Errorf("after thawing, the record is not the untouched claim: %v (before %v)", after, before)
	}
	if ttl, _ := rdb.PTTL(context.Background(), key).Result(); ttl <= 0 {
		t.Errorf("after thawing, PTTL %s: the record lost its retention", ttl)
	}
	// Claimable once the lease passes: a new worker takes over with token 2.
	var took faultResult
	polls := 0
	ok := faultWaitFor(10*time.Second, func() bool {
		polls++
		took = c.run("claim", "acquire", key, "--owner", "w2", "--lease", "1m", "--ttl", "1m")
		return took.Code != 75
	})
	if !ok || took.Code != 0 || strings.TrimSpace(took.Stdout) != "2" || !strings.Contains(took.Stderr, "took over") {
		t.Fatalf("the stale claim was not taken over with token 2: %s", took)
	}
	t.Logf("stderr:\n%s", r.Stderr)
	t.Logf("frozen while the command ran: exit 76 %s after the freeze; the command (pid %d) stopped; the record stayed "+
		"PROCESSING with token 1 (lease_until %s, %s after thawing); taken over with token 2 after %d acquire attempts",
		stoppedAfter.Round(time.Millisecond), cmdPid, before["lease_until"], after["lease_until"], polls)
}

// TestFaultRestartBetweenSteps: a claim acquired before a crash-restart of
// the server (AOF always) is completed after it, with every field intact.
func TestFaultRestartBetweenSteps(t *testing.T) {
	t.Parallel()
	srv := faultServer(t, faultAOF...)
	rdb := faultRedis(t, srv)
	c := newFaultCLI(t, srv.URL)
	const key = "k"
	r := c.expect(0, "claim", "acquire", key, "--owner", "w1", "--lease", "1m", "--ttl", "1h", "--payload", "order-17")
	if strings.TrimSpace(r.Stdout) != "1" {
		t.Fatalf("acquire printed %q, want token 1", r.Stdout)
	}
	before := faultHGetAll(t, rdb, key)
	srv.Kill()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	restored := faultHGetAll(t, rdb, key)
	if fmt.Sprint(restored) != fmt.Sprint(before) {
		t.Fatalf("the restart changed the record: %v, was %v", restored, before)
	}
	c.expect(0, "claim", "complete", key, "--token", "1", "--result", "ok", "--ttl", "1h")
	after := faultHGetAll(t, rdb, key)
	want := map[string]string{"status": "COMPLETED", "token": "1", "attempts": "1", "owner": "w1",
		"created": before["created"], "fingerprint": before["fingerprint"], "result": "ok"}
	for f, v := range want {
		if after[f] != v || v == "" {
			t.Errorf("after complete, %s = %q, want %q (record %v)", f, after[f], v, after)
		}
	}
	if ttl, _ := rdb.PTTL(context.Background(), key).Result(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("PTTL %s, want the 1h retention", ttl)
	}
	// A redelivery with the same payload is told it is done and gets the result.
	d := c.expect(1, "claim", "acquire", key, "--payload", "order-17")
	if d.Stdout != "ok" {
		t.Errorf("redelivery printed %q, want the stored result", d.Stdout)
	}
	t.Logf("acquired (token 1), kill -9 + restart, completed: %v", after)
}

// TestFaultRandomWorkerKills races 16 claim runs per key and kills -9 a
// random subset of them at random moments (0-100 ms after start: before the
// acquire, during the command, after the record), round after round: per key
// the command runs at most once, and the key ends COMPLETED (its runner
// lived), PROCESSING under a live lease whose owner is dead, or absent
// (everyone died before acquiring), never two runs. 200 rounds, bounded by
// 150 s on a slow machine (30 rounds / 8 s with -short); then the expired
// dead claims are taken over. IDMPCTL_FAULT_SEED replays a logged seed.
//
// Not parallel: 16 race-built processes a round saturate two cores; alone,
// it does not starve the timing-sensitive tests (they run after it).
func TestFaultRandomWorkerKills(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a killed claim run stops its command through Pdeathsig, which is Linux only")
	}
	const workers = 16
	lease, rounds, budget := 10*time.Second, 200, 150*time.Second
	if testing.Short() {
		lease, rounds, budget = 5*time.Second, 30, 8*time.Second
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("IDMPCTL_FAULT_SEED"), 10, 64); err == nil {
		seed = s
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	srv := faultServer(t)
	rdb := faultRedis(t, srv)
	c := newFaultCLI(t, srv.URL)
	host, _ := os.Hostname()

	var tally struct {
		procs, killed, ran, replayed, busy  int
		completed, processing, absent, runs int
	}
	var processingKeys []string
	began := time.Now()
	round := 0
	for ; round < rounds && time.Since(began) < budget; round++ {
		key := fmt.Sprintf("race:%d", round)
		runlog := filepath.Join(c.dir, fmt.Sprintf("runlog-%d", round))
		procs := make([]*faultProc, workers)
		for i := range procs {
			procs[i] = c.start("claim", "run", key, "-o", "json", "--lease", lease.String(), "--ttl", "10m", "--",
				"sh", "-c", `echo "$IDMPCTL_TOKEN $$" >> "$1"; sleep 0.05; echo ok`, "sh", runlog)
		}
		var wg sync.WaitGroup
		for _, i := range rng.Perm(workers)[:rng.IntN(workers+1)] {
			delay := time.Duration(rng.IntN(100)) * time.Millisecond
			wg.Go(func() {
				time.Sleep(delay)
				_ = procs[i].kill()
			})
		}
		wg.Wait()

		ran, replayed := 0, 0
		killedPids := map[int]bool{}
		for _, p := range procs {
			r := p.wait(30 * time.Second)
			tally.procs++
			switch {
			case r.Signal == syscall.SIGKILL:
				tally.killed++
				killedPids[p.cmd.Process.Pid] = true
			case r.Code == 0 && strings.Contains(r.Stdout, `"outcome":"ran"`):
				ran++
			case r.Code == 0 && strings.Contains(r.Stdout, `"outcome":"replayed"`) && strings.Contains(r.Stdout, `"output":"ok\n"`):
				replayed++
			case r.Code == 75 && strings.Contains(r.Stdout, `"outcome":"busy"`):
				tally.busy++
			default:
				t.Errorf("round %d (%s): unexpected end of a worker: %s", round, key, r)
			}
		}
		tally.ran += ran
		tally.replayed += replayed

		b, _ := os.ReadFile(runlog)
		runs := faultLines(string(b))
		tally.runs += len(runs)
		for _, l := range runs {
			if !strings.HasPrefix(l, "1 ") {
				t.Errorf("round %d (%s): the command ran with token %q, want 1", round, key, l)
			}
		}
		if len(runs) > 1 || ran > 1 {
			t.Errorf("round %d (%s): the command ran %d times (%d runners report ran): %q", round, key, len(runs), ran, runs)
		}
		rec := faultHGetAll(t, rdb, key)
		switch rec["status"] {
		case "":
			tally.absent++
			if len(runs) != 0 || ran+replayed != 0 {
				t.Errorf("round %d (%s): no record, yet %d runs, %d ran, %d replayed", round, key, len(runs), ran, replayed)
			}
		case "COMPLETED":
			tally.completed++
			if len(runs) != 1 || rec["token"] != "1" || rec["attempts"] != "1" || rec["result"] != "ok\n" {
				t.Errorf("round %d (%s): COMPLETED after %d runs: %v", round, key, len(runs), rec)
			}
		case "PROCESSING":
			tally.processing++
			processingKeys = append(processingKeys, key)
			owner, _ := strconv.Atoi(strings.TrimPrefix(rec["owner"], host+":"))
			lu := faultAtoi(rec["lease_until"])
			if !killedPids[owner] || rec["token"] != "1" || ran+replayed != 0 {
				t.Errorf("round %d (%s): PROCESSING, but its owner %s was not killed or someone ran (%d ran, %d replayed): %v",
					round, key, rec["owner"], ran, replayed, rec)
			}
			if now := faultServerMs(t, rdb); lu <= now {
				t.Errorf("round %d (%s): PROCESSING with a lease that passed %dms ago: %v", round, key, now-lu, rec)
			}
		default:
			t.Errorf("round %d (%s): unexpected record %v", round, key, rec)
		}
		if t.Failed() {
			t.Fatalf("stopping after round %d (seed %d)", round, seed)
		}
	}
	loop := time.Since(began)

	// A dead owner's claim becomes claimable once its lease passes: wait for
	// the oldest one (bounded by the lease), then take over a few.
	taken := 0
	if len(processingKeys) > 0 {
		first := faultHGetAll(t, rdb, processingKeys[0])
		lu := faultAtoi(first["lease_until"])
		faultWaitFor(lease+2*time.Second, func() bool { return faultServerMs(t, rdb) > lu })
		for _, key := range processingKeys[:min(len(processingKeys), 5)] {
			rec := faultHGetAll(t, rdb, key)
			if faultAtoi(rec["lease_until"]) >= faultServerMs(t, rdb) {
				continue
			}
			r := c.run("claim", "acquire", key, "--owner", "checker", "--lease", "1m", "--ttl", "10m")
			if r.Code != 0 || strings.TrimSpace(r.Stdout) != "2" || !strings.Contains(r.Stderr, "took over") {
				t.Errorf("%s: a dead owner's expired claim was not taken over with token 2: %s", key, r)
			}
			taken++
		}
	}
	t.Logf("seed %d: %d rounds x %d workers in %s: %d processes, %d killed -9; %d ran, %d replayed, %d busy; "+
		"keys: %d COMPLETED, %d PROCESSING with a dead owner, %d absent; %d command runs in total, 0 double runs; "+
		"%d expired dead claims taken over with token 2",
		seed, round, workers, loop.Round(time.Millisecond), tally.procs, tally.killed, tally.ran, tally.replayed, tally.busy,
		tally.completed, tally.processing, tally.absent, tally.runs, taken)
}

// TestFaultBatchRetryOfCommittedChunk: the server stalls while a batch chunk
// is in flight, the client times out and retries the chunk, and the server
// then runs both the stalled chunk and the retry. Each add is idempotent, so
// the stream must hold every line once. That needs every add of the chunk
// still tracked when the retry arrives: xadd --batch keeps its chunks within
// the stream's IDMP-MAXSIZE (with 256-add chunks and the default MAXSIZE of
// 100, the whole retried chunk was written twice).
func TestFaultBatchRetryOfCommittedChunk(t *testing.T) {
	// 6400 lines fill whole chunks of 50, 100 and 256 adds; the next 256
	// lines then start a chunk that stalls.
	const before, after = 6400, 256
	for _, maxsize := range []int{0, 50, 10000} { // 0: the server default (100)
		t.Run(fmt.Sprintf("maxsize=%d", maxsize), func(t *testing.T) {
			t.Parallel()
			srv := faultServer(t)
			rdb := faultRedis(t, srv)
			c := newFaultCLI(t, srv.URL)
			ctx := context.Background()
			if maxsize > 0 {
				if err := rdb.Do(ctx, "XADD", "s", "MAXLEN", "0", "*", "init", "1").Err(); err != nil {
					t.Fatal(err)
				}
				c.expect(0, "cfgset", "s", "--maxsize", strconv.Itoa(maxsize), "--mode", "emulated", "--yes")
			}
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = pw.Close() })
			p := c.startIn(pr, "xadd", "s", "--pid", "p", "--batch", "-", "--timeout", "500ms", "--retries", "5", "--mode", "emulated")
			_ = pr.Close()
			writeLines := func(from, to int) {
				w := bufio.NewWriter(pw)
				for i := from; i <= to; i++ {
					fmt.Fprintf(w, "{\"iid\":\"m-%d\",\"fields\":{\"n\":\"%d\"}}\n", i, i)
				}
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			writeLines(1, before)
			if !faultWaitFor(20*time.Second, func() bool { n, _ := rdb.XLen(ctx, "s").Result(); return n == before || p.exited() }) || p.exited() {
				t.Fatalf("the first %d lines were not written: %s", before, p.status())
			}
			faultFreeze(t, srv)
			writeLines(before+1, before+after)
			if !faultWaitFor(20*time.Second, func() bool { return strings.Contains(p.stderrSoFar(), "retrying (1 of 5)") || p.exited() }) {
				t.Fatalf("no retry of the stalled chunk: %s", p.stderrSoFar())
			}
			faultThaw(t, srv)
			_ = pw.Close()
			r := p.wait(time.Minute)
			if r.Code != 0 {
				t.Fatalf("want exit 0 after the retry, got %s", r)
			}
			total := before + after
			missing, extra := faultScanStream(t, rdb, "s", total)
			xlen, _ := rdb.XLen(ctx, "s").Result()
			t.Logf("maxsize %d: %d lines; stderr: %s; stream: XLEN %d, %d missing, %d duplicated",
				maxsize, total, strings.ReplaceAll(strings.TrimSpace(r.Stderr), "\n", " | "), xlen, missing, extra)
			if xlen != int64(total) || missing != 0 || extra != 0 {
				t.Errorf("a retried chunk was written twice: XLEN %d for %d lines, %d duplicated, %d missing", xlen, total, extra, missing)
			}
		})
	}
}
