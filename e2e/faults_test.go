//go:build unix

package e2e

// Fault tests: idmpctl (the real binary, on PATH through TestMain, run by
// internal/clitest) against a real redis-server that is killed, frozen or restarted while it works, and
// claim runners killed at random. Each test logs its figures (t.Logf); run
// with -v to see them. -short shrinks sizes and rounds.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
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

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

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

// faultAwaitStarted waits for a claim run's command to touch "started" in
// the CLI's directory, failing the test if idmpctl ends first.
func faultAwaitStarted(t *testing.T, c *clitest.CLI, p *clitest.Proc) {
	t.Helper()
	if !faultWaitFor(20*time.Second, func() bool { return faultExists(filepath.Join(c.Dir, "started")) || p.Exited() }) || p.Exited() {
		t.Fatalf("the command did not start: %s", p.Status())
	}
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
	eachBatchMode(t, func(t *testing.T, m batchMode) {
		t.Parallel()
		testFaultServerKilledMidBatch(t, m)
	})
}

func testFaultServerKilledMidBatch(t *testing.T, m batchMode) {
	const maxsize = 10000
	total := 100_000
	if testing.Short() {
		total = 20_000
	}
	began := time.Now()
	srv := redistest.NewWith(t, redistest.Options{AOF: true})
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	ctx := context.Background()

	file := filepath.Join(c.Dir, "batch.ndjson")
	faultBatchFile(t, file, total)
	// cfgset needs the stream: create it empty.
	if err := rdb.Do(ctx, "XADD", "s", "MAXLEN", "0", "*", "init", "1").Err(); err != nil {
		t.Fatal(err)
	}
	c.Expect(0, append([]string{"cfgset", "s", "--duration", "86400", "--maxsize", strconv.Itoa(maxsize), "--yes"}, m.flags...)...)

	batch := append([]string{"xadd", "s", "--pid", "p", "--batch", file, "--retries", "0"}, m.flags...)
	p := c.Start(batch...)
	var seen int64
	progressed := faultPollFast(20*time.Second, func() bool {
		n, err := rdb.XLen(ctx, "s").Result()
		seen = n
		return (err == nil && n > 0) || p.Exited()
	})
	if !progressed || p.Exited() {
		t.Fatalf("no progress to kill in (XLEN %d): %s", seen, p.Status())
	}
	srv.Kill()
	first := p.Wait(30 * time.Second)
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
	faultBatchInvariant(t, rdb, "s", total)

	// The same command again resumes exactly after the last committed line,
	// as the progress record says: nothing twice, nothing lost.
	second := c.Run(batch...)
	if second.Code != 0 {
		t.Fatalf("second run: want exit 0, got %s", second)
	}
	rm := regexp.MustCompile(`lines 1-(\d+) were committed by an earlier run: resumed after line (\d+)`).FindStringSubmatch(second.Stderr)
	if rm == nil || rm[1] != strconv.FormatInt(committed, 10) {
		t.Fatalf("second run: did not resume after line %d: %s", committed, second.Stderr)
	}
	// The summary counts with thousands separators: 17,000 lines.
	sm := regexp.MustCompile(`xadd --batch: ([\d,]+) lines?: ([\d,]+) added, ([\d,]+) duplicates?`).FindStringSubmatch(second.Stderr)
	if sm == nil {
		t.Fatalf("second run: no summary on stderr: %s", second.Stderr)
	}
	n2, _ := strconv.Atoi(strings.ReplaceAll(sm[1], ",", ""))
	added2, _ := strconv.Atoi(strings.ReplaceAll(sm[2], ",", ""))
	if int64(n2) != int64(total)-committed || added2 != n2 || len(faultLines(second.Stdout)) != n2 {
		t.Fatalf("second run: %d lines, %d added, %d printed; want the %d after line %d, all added",
			n2, added2, len(faultLines(second.Stdout)), int64(total)-committed, committed)
	}
	wantPath(t, m, second.Stderr)

	missing, extra := faultScanStream(t, rdb, "s", total)
	if xlen, _ := rdb.XLen(ctx, "s").Result(); xlen != int64(total) || missing != 0 || extra != 0 {
		t.Fatalf("stream: XLEN %d for %d lines: %d missing, %d duplicated", xlen, total, missing, extra)
	}
	// inspect in the mode written (--mode: the emulated counters on Redis
	// 8.6 too).
	insp := c.Expect(0, "inspect", "s", "-o", "json", "--mode", m.name)
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
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	faultFreeze(t, srv)
	runs := [][]string{
		{"inspect", "--server", "--timeout", "500ms"},
		{"xadd", "s", "--pid", "p", "--iid", "i-1", "--timeout", "500ms", "--retries", "0", "--mode", "emulated", "f", "v"},
		{"xadd", "s", "--pid", "p", "--iid", "i-1", "--timeout", "500ms", "--retries", "0", "f", "v"},
	}
	for _, args := range runs {
		r := c.Run(args...)
		if r.Code != 69 || r.Elapsed > 5*time.Second {
			t.Errorf("idmpctl %s against a frozen server: want exit 69 within 5s, got %s", strings.Join(args, " "), r)
		}
		if !regexp.MustCompile(`no reply within --timeout 500ms`).MatchString(r.Stderr) {
			t.Errorf("idmpctl %s: stderr does not say it timed out: %s", args[0], r.Stderr)
		}
		t.Logf("%s against a frozen server: exit %d after %s", strings.Join(args[:3], " "), r.Code, r.Elapsed.Round(time.Millisecond))
	}
	faultThaw(t, srv)
	if n, err := rdb.Exists(context.Background(), "s").Result(); err != nil || n != 0 {
		t.Errorf("after thawing: EXISTS s = %d (%v): a timed-out xadd wrote", n, err)
	}
	c.Expect(0, "inspect", "--server", "--timeout", "5s")
}

// TestFaultServerFrozenDuringClaimRun freezes the server while claim run's
// command runs: renewals fail, and the command is stopped before its lease
// could lapse (SIGTERM, then SIGKILL) and idmpctl exits 76. The record is left as
// it was (PROCESSING, its token) and is taken over once its lease passes.
func TestFaultServerFrozenDuringClaimRun(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	const key = "job:frozen"
	p := c.Start("claim", "run", key, "--lease", "1s", "--ttl", "1m", "--timeout", "300ms", "--",
		"sh", "-c", `echo $$ > cmdpid; touch started; sleep 30; touch finished`)
	faultAwaitStarted(t, c, p)
	before := faultHGetAll(t, rdb, key)
	if before["status"] != "PROCESSING" || before["token"] == "" {
		t.Fatalf("before the freeze: %v", before)
	}
	cmdPid := faultReadPid(t, filepath.Join(c.Dir, "cmdpid"))
	frozenAt := time.Now()
	faultFreeze(t, srv)
	r := p.Wait(20 * time.Second)
	stoppedAfter := time.Since(frozenAt)
	if r.Code != 76 || stoppedAfter > 5*time.Second {
		t.Fatalf("want exit 76 within 5s of the freeze, got %s", r)
	}
	if !regexp.MustCompile(`renewals failed for \S+ \(the last: .*\): the command was stopped before its lease \(1s\) could lapse`).MatchString(r.Stderr) {
		t.Errorf("stderr does not say renewals failed and the command was stopped before its lease could lapse: %s", r.Stderr)
	}
	if !faultWaitFor(5*time.Second, func() bool { return len(faultGroupMembers(cmdPid)) == 0 }) {
		t.Errorf("the command's process group still runs: %v", faultGroupMembers(cmdPid))
	}
	if faultExists(filepath.Join(c.Dir, "finished")) {
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
	// Claimable once the lease passes: a new worker takes over with a newer token.
	var took clitest.Result
	polls := 0
	ok := faultWaitFor(10*time.Second, func() bool {
		polls++
		took = c.Run("claim", "acquire", key, "--owner", "w2", "--lease", "1m", "--ttl", "1m")
		return took.Code != 75
	})
	if !ok || took.Code != 0 || faultAtoi(strings.TrimSpace(took.Stdout)) <= faultAtoi(before["token"]) || !strings.Contains(took.Stderr, "took over") {
		t.Fatalf("the stale claim was not taken over with a token above %s: %s", before["token"], took)
	}
	t.Logf("stderr:\n%s", r.Stderr)
	t.Logf("frozen while the command ran: exit 76 %s after the freeze; the command (pid %d) stopped; the record stayed "+
		"PROCESSING with its token (lease_until %s, %s after thawing); taken over with a newer token after %d acquire attempts",
		stoppedAfter.Round(time.Millisecond), cmdPid, before["lease_until"], after["lease_until"], polls)
}

// TestFaultRestartBetweenSteps: a claim acquired before a crash-restart of
// the server (AOF always) is completed after it, with every field intact.
func TestFaultRestartBetweenSteps(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{AOF: true})
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	const key = "k"
	r := c.Expect(0, "claim", "acquire", key, "--owner", "w1", "--lease", "1m", "--ttl", "1h", "--payload", "order-17")
	token := strings.TrimSpace(r.Stdout)
	if !regexp.MustCompile(`^[0-9]{16}$`).MatchString(token) {
		t.Fatalf("acquire printed %q, want a token", r.Stdout)
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
	c.Expect(0, "claim", "complete", key, "--token", token, "--result", "ok", "--ttl", "1h")
	after := faultHGetAll(t, rdb, key)
	want := map[string]string{"status": "COMPLETED", "token": token, "attempts": "1", "owner": "w1",
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
	d := c.Expect(1, "claim", "acquire", key, "--payload", "order-17")
	if d.Stdout != "ok" {
		t.Errorf("redelivery printed %q, want the stored result", d.Stdout)
	}
	t.Logf("acquired (token %s), kill -9 + restart, completed: %v", token, after)
}

// TestFaultRandomWorkerKills races 16 claim runs per key and kills -9 a
// random subset of them at random moments (0-100 ms after start: before the
// acquire, during the command, after the record), round after round; every
// fourth round instead kills all still running once the command has started,
// so that a runner dies during its command on a machine of any speed. Per
// key the command runs at most once, and the key ends COMPLETED (its runner
// lived), PROCESSING under a live lease whose owner is dead, or absent
// (everyone died before acquiring), never two runs. Then the expired dead
// claims are taken over.
//
// A fixed amount of work, whatever the machine's speed: 25 rounds (10 with
// -short; 200 with IDMPCTL_SOAK=1, which make test-soak sets). The seed
// (fixed; IDMPCTL_FAULT_SEED replays another) picks who is killed and when;
// what a worker has done by then still depends on the machine. A failure
// prints the seed.
//
// Not parallel: 16 race-built processes a round saturate two cores; alone,
// it does not starve the timing-sensitive tests (they run after it).
func TestFaultRandomWorkerKills(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a killed claim run stops its command through Pdeathsig, which is Linux only")
	}
	const workers = 16
	lease, rounds := 10*time.Second, 25
	switch {
	case os.Getenv("IDMPCTL_SOAK") == "1":
		rounds = 200
	case testing.Short():
		lease, rounds = 5*time.Second, 10
	}
	seed := uint64(1)
	if s, err := strconv.ParseUint(os.Getenv("IDMPCTL_FAULT_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d, %d rounds: replay with IDMPCTL_FAULT_SEED=%d", seed, rounds, seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 1))
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	host, _ := os.Hostname()

	var tally struct {
		midCommand, procs, killed, ran, replayed, busy int
		completed, processing, absent, runs            int
	}
	var processingKeys []string
	began := time.Now()
	round := 0
	for ; round < rounds; round++ {
		key := fmt.Sprintf("race:%d", round)
		runlog := filepath.Join(c.Dir, fmt.Sprintf("runlog-%d", round))
		procs := make([]*clitest.Proc, workers)
		for i := range procs {
			procs[i] = c.Start("claim", "run", key, "-o", "json", "--lease", lease.String(), "--timeout", "1s", "--ttl", "10m", "--",
				"sh", "-c", `echo "$IDMPCTL_TOKEN $$" >> "$1"; sleep 0.05; echo ok`, "sh", runlog)
		}
		if round%4 == 3 {
			// Kill every worker still running once the command has started:
			// its runner dies during it however fast the machine got there.
			tally.midCommand++
			faultPollFast(20*time.Second, func() bool {
				return faultExists(runlog) || !slices.ContainsFunc(procs, func(p *clitest.Proc) bool { return !p.Exited() })
			})
			for _, p := range procs {
				_ = p.Kill()
			}
		} else {
			var wg sync.WaitGroup
			for _, i := range rng.Perm(workers)[:rng.IntN(workers+1)] {
				delay := time.Duration(rng.IntN(100)) * time.Millisecond
				wg.Go(func() {
					time.Sleep(delay)
					_ = procs[i].Kill()
				})
			}
			wg.Wait()
		}

		ran, replayed := 0, 0
		killedPids := map[int]bool{}
		for _, p := range procs {
			r := p.Wait(30 * time.Second)
			tally.procs++
			switch {
			case r.Signal == syscall.SIGKILL:
				tally.killed++
				killedPids[p.Pid()] = true
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
		rec := faultHGetAll(t, rdb, key)
		for _, l := range runs {
			if !strings.HasPrefix(l, rec["token"]+" ") {
				t.Errorf("round %d (%s): the command ran with token %q, want the record's %s", round, key, l, rec["token"])
			}
		}
		if len(runs) > 1 || ran > 1 {
			t.Errorf("round %d (%s): the command ran %d times (%d runners report ran): %q", round, key, len(runs), ran, runs)
		}
		switch rec["status"] {
		case "":
			tally.absent++
			if len(runs) != 0 || ran+replayed != 0 {
				t.Errorf("round %d (%s): no record, yet %d runs, %d ran, %d replayed", round, key, len(runs), ran, replayed)
			}
		case "COMPLETED":
			tally.completed++
			if len(runs) != 1 || rec["attempts"] != "1" || rec["result"] != "ok\n" {
				t.Errorf("round %d (%s): COMPLETED after %d runs: %v", round, key, len(runs), rec)
			}
		case "PROCESSING":
			tally.processing++
			processingKeys = append(processingKeys, key)
			owner, _ := strconv.Atoi(strings.TrimPrefix(rec["owner"], host+":"))
			lu := faultAtoi(rec["lease_until"])
			if !killedPids[owner] || rec["attempts"] != "1" || ran+replayed != 0 {
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

	// A dead owner's claim becomes claimable once its lease passes: wait
	// (bounded by the lease) until the first five have passed (a later
	// round's lease ends later), then take those over.
	taken := processingKeys[:min(len(processingKeys), 5)]
	if len(taken) > 0 {
		lu := faultAtoi(faultHGetAll(t, rdb, taken[len(taken)-1])["lease_until"])
		if !faultWaitFor(lease+5*time.Second, func() bool { return faultServerMs(t, rdb) > lu }) {
			t.Fatalf("%s: its lease (until %d ms) has not passed on the server's clock", taken[len(taken)-1], lu)
		}
		for _, key := range taken {
			dead := faultHGetAll(t, rdb, key)["token"]
			r := c.Run("claim", "acquire", key, "--owner", "checker", "--lease", "1m", "--ttl", "10m")
			if r.Code != 0 || faultAtoi(strings.TrimSpace(r.Stdout)) <= faultAtoi(dead) || !strings.Contains(r.Stderr, "took over") {
				t.Errorf("%s: a dead owner's expired claim was not taken over with a token above %s: %s", key, dead, r)
			}
		}
	}
	t.Logf("seed %d: %d rounds x %d workers in %s (%d killing all once the command started): "+
		"%d processes, %d killed -9; %d ran, %d replayed, %d busy; "+
		"keys: %d COMPLETED, %d PROCESSING with a dead owner, %d absent; %d command runs in total, 0 double runs; "+
		"%d expired dead claims taken over with a newer token",
		seed, round, workers, loop.Round(time.Millisecond), tally.midCommand, tally.procs, tally.killed, tally.ran, tally.replayed, tally.busy,
		tally.completed, tally.processing, tally.absent, tally.runs, len(taken))
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
	eachBatchMode(t, func(t *testing.T, m batchMode) {
		testFaultBatchRetryOfCommittedChunk(t, m, before, after)
	})
}

func testFaultBatchRetryOfCommittedChunk(t *testing.T, m batchMode, before, after int) {
	for _, maxsize := range []int{0, 50, 10000} { // 0: the server default (100)
		t.Run(fmt.Sprintf("maxsize=%d", maxsize), func(t *testing.T) {
			t.Parallel()
			srv := redistest.NewWith(t, redistest.Options{})
			rdb := faultRedis(t, srv)
			c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
			ctx := context.Background()
			if maxsize > 0 {
				if err := rdb.Do(ctx, "XADD", "s", "MAXLEN", "0", "*", "init", "1").Err(); err != nil {
					t.Fatal(err)
				}
				c.Expect(0, append([]string{"cfgset", "s", "--maxsize", strconv.Itoa(maxsize), "--yes"}, m.flags...)...)
			}
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = pw.Close() })
			p := c.WithStdin(pr).Start(append([]string{"xadd", "s", "--pid", "p", "--batch", "-", "--timeout", "500ms", "--retries", "5"}, m.flags...)...)
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
			if !faultWaitFor(20*time.Second, func() bool { n, _ := rdb.XLen(ctx, "s").Result(); return n == int64(before) || p.Exited() }) || p.Exited() {
				t.Fatalf("the first %d lines were not written: %s", before, p.Status())
			}
			faultFreeze(t, srv)
			writeLines(before+1, before+after)
			if !faultWaitFor(20*time.Second, func() bool { return strings.Contains(p.StderrSoFar(), "retrying (1 of 5)") || p.Exited() }) {
				t.Fatalf("no retry of the stalled chunk: %s", p.StderrSoFar())
			}
			faultThaw(t, srv)
			_ = pw.Close()
			r := p.Wait(time.Minute)
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
			wantPath(t, m, r.Stderr)
		})
	}
}
