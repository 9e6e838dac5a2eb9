//go:build unix

package e2e

// Claim scenarios (docs/claim.md), end to end: real idmpctl processes
// (run by internal/clitest; state checks in faults_test.go) against a real
// redis-server each.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// runReport is the part of claim run's -o json the scenarios read.
type runReport struct {
	Outcome  string `json:"outcome"`
	Ran      bool   `json:"ran"`
	ExitCode int    `json:"exit_code"`
	Token    int64  `json:"token"`
	Output   string `json:"output"`
}

func parseRunReport(t *testing.T, r clitest.Result) runReport {
	t.Helper()
	var rep runReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("claim run -o json: %v\n%s", err, r)
	}
	return rep
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return faultLines(string(b))
}

// (a) 16 processes claim run one key at once: the command runs exactly once;
// the others exit 75 (busy), or 0 replaying its output when they acquire
// after it completed.
func TestScenarioClaimRunSixteenWorkers(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	const key = "job:a"
	procs := make([]*clitest.Proc, 16)
	for i := range procs {
		procs[i] = c.Start("claim", "run", key, "-o", "json", "--lease", "30s", "--",
			"sh", "-c", `echo $$ >> runlog; sleep 0.3; echo "done by token $IDMPCTL_TOKEN"`)
	}
	counts := map[string]int{}
	var reports []runReport
	for _, p := range procs {
		r := p.Wait(time.Minute)
		rep := parseRunReport(t, r)
		counts[rep.Outcome]++
		switch {
		case rep.Outcome == "ran" && r.Code == 0 && rep.Ran && rep.Output == fmt.Sprintf("done by token %d\n", rep.Token):
		case rep.Outcome == "busy" && r.Code == 75 && !rep.Ran && strings.Contains(r.Stderr, "busy: held by"):
		case rep.Outcome == "replayed" && r.Code == 0 && !rep.Ran && strings.HasPrefix(rep.Output, "done by token "):
		default:
			t.Errorf("unexpected worker end: %+v\n%s", rep, r)
		}
		reports = append(reports, rep)
	}
	if runs := readLines(t, filepath.Join(c.Dir, "runlog")); len(runs) != 1 || counts["ran"] != 1 {
		t.Fatalf("the command ran %d times (%d workers report ran): %v", len(runs), counts["ran"], counts)
	}
	rec := faultHGetAll(t, rdb, key)
	want := "done by token " + rec["token"] + "\n"
	for _, rep := range reports {
		if rep.Outcome != "busy" && rep.Output != want {
			t.Errorf("%s printed %q, want %q", rep.Outcome, rep.Output, want)
		}
	}
	if rec["status"] != "COMPLETED" || rec["attempts"] != "1" || rec["result"] != want {
		t.Fatalf("record: %v", rec)
	}
	t.Logf("16 workers on one key: ran %d, busy %d, replayed %d; the command ran once", counts["ran"], counts["busy"], counts["replayed"])
}

// (b) A redelivery after completion replays the stored output and runs
// nothing.
func TestScenarioRedeliveryReplays(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	const key = "job:b"
	first := c.Expect(0, "claim", "run", key, "--", "sh", "-c", `touch ran1; printf 'charged 100\nreceipt r-17\n'`)
	if first.Stdout != "charged 100\nreceipt r-17\n" {
		t.Fatalf("first run printed %q", first.Stdout)
	}
	for i := range 3 {
		again := c.Expect(0, "claim", "run", key, "--", "sh", "-c", `touch ran2; echo other`)
		if again.Stdout != first.Stdout {
			t.Fatalf("redelivery %d printed %q, want the stored %q", i+1, again.Stdout, first.Stdout)
		}
	}
	if faultExists(filepath.Join(c.Dir, "ran2")) {
		t.Fatal("a redelivery ran the command")
	}
	if d := c.Expect(1, "claim", "acquire", key); d.Stdout != first.Stdout {
		t.Errorf("claim acquire of a completed key printed %q, want the stored result", d.Stdout)
	}
	if rec := faultHGetAll(t, rdb, key); rec["status"] != "COMPLETED" || rec["attempts"] != "1" || rec["token"] == "" {
		t.Errorf("redeliveries changed the record: %v", rec)
	}
}

// (c) kill -9 of a claim run while its command runs: the command dies with
// it, the key is busy (75) until the lease passes, then a new acquire takes
// it over with a newer token, and the dead run's token is lost (76).
func TestScenarioKilledRunnerLeaseTakeover(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the guard that stops a killed claim run's command is Linux only")
	}
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	const key = "job:c"
	p := c.Start("claim", "run", key, "--lease", "1s", "--timeout", "300ms", "--ttl", "1m", "--",
		"sh", "-c", `echo $$ > cmdpid; cut -d' ' -f5 /proc/$$/stat > cmdpgid; touch started; sleep 30; touch finished`)
	faultAwaitStarted(t, c, p)
	cmdPid := faultReadPid(t, filepath.Join(c.Dir, "cmdpid"))
	cmdGroup := faultReadPid(t, filepath.Join(c.Dir, "cmdpgid"))
	dead := faultHGetAll(t, rdb, key)["token"]
	t.Cleanup(func() { _ = syscall.Kill(-cmdGroup, syscall.SIGKILL) })
	_ = p.Kill()
	killedAt := time.Now()
	if r := p.Wait(10 * time.Second); r.Signal != syscall.SIGKILL {
		t.Fatalf("idmpctl was not killed: %s", r)
	}
	if !faultWaitFor(5*time.Second, func() bool { return faultProcessGone(cmdPid) }) {
		t.Fatalf("the command (pid %d) outlived its killed claim run", cmdPid)
	}
	busy := c.Run("claim", "run", key, "--lease", "1s", "--timeout", "300ms", "--ttl", "1m", "--", "touch", "ran")
	if busy.Code != 75 || faultExists(filepath.Join(c.Dir, "ran")) {
		t.Fatalf("right after the kill: want busy (75) without running, got %s", busy)
	}
	var took clitest.Result
	polls := 0
	faultWaitFor(10*time.Second, func() bool {
		polls++
		took = c.Run("claim", "acquire", key, "--owner", "w2", "--lease", "1m", "--ttl", "1m")
		return took.Code != 75
	})
	fresh := strings.TrimSpace(took.Stdout)
	if took.Code != 0 || faultAtoi(fresh) <= faultAtoi(dead) || !strings.Contains(took.Stderr, "took over") {
		t.Fatalf("no takeover with a token above %s once the lease passed: %s", dead, took)
	}
	takenAfter := time.Since(killedAt)
	lost := c.Expect(76, "claim", "complete", key, "--token", dead, "--result", "stale")
	if !strings.Contains(lost.Stderr, "token "+dead+" is not current") {
		t.Errorf("the stale complete does not say its token is not current: %s", lost.Stderr)
	}
	if rec := faultHGetAll(t, rdb, key); rec["status"] != "PROCESSING" || rec["token"] != fresh || rec["owner"] != "w2" || rec["result"] != "" {
		t.Errorf("the stale complete changed the record: %v", rec)
	}
	c.Expect(0, "claim", "complete", key, "--token", fresh, "--result", "fresh")
	if faultExists(filepath.Join(c.Dir, "finished")) {
		t.Error("the killed run's command finished")
	}
	t.Logf("killed the runner; busy right after; taken over with a newer token %s after the kill (%d acquire attempts); the dead run's token lost (76)",
		takenAfter.Round(time.Millisecond), polls)

	// The command's own children die too: the guard that leads the
	// command's process group kills the group once idmpctl is gone.
	t.Run("command's children", func(t *testing.T) {
		if !faultWaitFor(5*time.Second, func() bool { return len(faultGroupMembers(cmdGroup)) == 0 }) {
			left := faultGroupMembers(cmdGroup)
			t.Errorf("%d process(es) of the killed run's command still run (pids %v, process group %d)", len(left), left, cmdGroup)
		}
	})
}

// An interrupted run: idmpctl forwards SIGINT to the command's process group
// (the guard ignores it), the command decides (here: exit 7), FAILED is
// recorded with that code, and the guard leaves the group without killing
// what the command left behind.
func TestScenarioInterruptedRun(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the guard is Linux only")
	}
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	const key = "job:int"
	p := c.Start("claim", "run", key, "--", "sh", "-c",
		`trap 'echo got-int; exit 7' INT; sleep 30 > /dev/null 2>&1 < /dev/null & echo $! > left; cut -d' ' -f5 /proc/$$/stat > pgid; touch started; i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done`)
	faultAwaitStarted(t, c, p)
	group := faultReadPid(t, filepath.Join(c.Dir, "pgid"))
	left := faultReadPid(t, filepath.Join(c.Dir, "left"))
	t.Cleanup(func() { _ = syscall.Kill(-group, syscall.SIGKILL) })
	if err := syscall.Kill(p.Pid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := p.Wait(20 * time.Second)
	if r.Code != 7 || !strings.Contains(r.Stdout, "got-int") {
		t.Fatalf("want the command's own exit 7 after its SIGINT trap: %s", r)
	}
	// A Ctrl-C is not silent: stderr says what came of it.
	if want := "idmpctl: claim run \"job:int\": interrupted (SIGINT): the command exited 7\n" +
		"hint: FAILED recorded: a redelivery claims the key at once and runs the command again\n"; r.Stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.Stderr, want)
	}
	if rec := faultHGetAll(t, rdb, key); rec["status"] != "FAILED" || !strings.Contains(rec["error"], "exit status 7") {
		t.Errorf("after the interrupt: %v", rec)
	}
	// The background sleep ignores SIGINT (an asynchronous list of a
	// non-interactive shell does), so it outlived the interrupt; the guard,
	// told "done", leaves it alone and goes.
	if !faultWaitFor(10*time.Second, func() bool {
		m := faultGroupMembers(group)
		return len(m) == 1 && m[0] == left
	}) {
		t.Errorf("the group holds %v, want only the command's background sleep %d", faultGroupMembers(group), left)
	}
}

// (d) A failed run records FAILED with the exit code; the retry runs again
// as attempt 2 and completes.
func TestScenarioFailThenRetry(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	const key = "job:d"
	c.Expect(3, "claim", "run", key, "--", "sh", "-c", `echo "attempt $IDMPCTL_ATTEMPT"; exit 3`)
	rec := faultHGetAll(t, rdb, key)
	if rec["status"] != "FAILED" || rec["attempts"] != "1" || rec["token"] == "" || !strings.Contains(rec["error"], "exit status 3") {
		t.Fatalf("after the failure: %v", rec)
	}
	first := rec["token"]
	r := c.Expect(0, "claim", "run", key, "--", "sh", "-c", `echo "attempt $IDMPCTL_ATTEMPT token $IDMPCTL_TOKEN"`)
	rec = faultHGetAll(t, rdb, key)
	if r.Stdout != "attempt 2 token "+rec["token"]+"\n" || faultAtoi(rec["token"]) <= faultAtoi(first) {
		t.Fatalf("the retry printed %q (record %v, first token %s)", r.Stdout, rec, first)
	}
	if rec["status"] != "COMPLETED" || rec["attempts"] != "2" || rec["result"] != r.Stdout {
		t.Fatalf("after the retry: %v", rec)
	}
	// --max-attempts refuses a retry past the limit (65) without running.
	c.Expect(5, "claim", "run", "job:d2", "--", "sh", "-c", "exit 5")
	c.Expect(65, "claim", "run", "job:d2", "--max-attempts", "1", "--", "touch", "ran")
	if faultExists(filepath.Join(c.Dir, "ran")) {
		t.Error("an exhausted key ran the command")
	}
}

// (e) The same key with a different payload is refused (65) and runs
// nothing, whether the first request completed or is still running; the
// same payload replays.
func TestScenarioFingerprintMismatch(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	c.Expect(0, "claim", "run", "pay:1", "--payload", `{"amount":100}`, "--", "echo", "charged 100")
	before := faultHGetAll(t, rdb, "pay:1")
	m := c.Expect(65, "claim", "run", "pay:1", "--payload", `{"amount":999}`, "--", "touch", "ran")
	if !strings.Contains(m.Stderr, "fingerprint mismatch") || faultExists(filepath.Join(c.Dir, "ran")) {
		t.Fatalf("mismatch: %s", m)
	}
	if after := faultHGetAll(t, rdb, "pay:1"); after["fingerprint"] != before["fingerprint"] || after["updated"] != before["updated"] {
		t.Errorf("the refused request changed the record: %v, was %v", after, before)
	}
	if r := c.Expect(0, "claim", "run", "pay:1", "--payload", `{"amount":100}`, "--", "touch", "ran"); r.Stdout != "charged 100\n" {
		t.Errorf("same payload: printed %q, want the stored output", r.Stdout)
	}
	// While the first request still runs.
	c.Expect(0, "claim", "acquire", "pay:2", "--payload", "A", "--lease", "1m")
	c.Expect(65, "claim", "run", "pay:2", "--payload", "B", "--", "touch", "ran")
	c.Expect(75, "claim", "run", "pay:2", "--payload", "A", "--", "touch", "ran")
	if faultExists(filepath.Join(c.Dir, "ran")) {
		t.Error("a refused request ran the command")
	}
}

// (f) Fail closed: with Redis down, refusing connections or frozen, claim
// run exits 69 and never runs the command; nothing is written later.
func TestScenarioFailClosed(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	ran := filepath.Join(c.Dir, "ran")

	faultFreeze(t, srv)
	r := c.Run("claim", "run", "job:f", "--timeout", "300ms", "--", "touch", ran)
	if r.Code != 69 || !strings.Contains(r.Stderr, "fail closed") || r.Elapsed > 5*time.Second {
		t.Errorf("frozen server: want 69 (fail closed) within 5s, got %s", r)
	}
	faultThaw(t, srv)
	if n, err := rdb.Exists(context.Background(), "job:f").Result(); err != nil || n != 0 {
		t.Errorf("after thawing: EXISTS job:f = %d (%v): a failed claim run wrote", n, err)
	}

	srv.Kill()
	r = c.Run("claim", "run", "job:f", "--", "touch", ran)
	if r.Code != 69 || !strings.Contains(r.Stderr, "fail closed") {
		t.Errorf("server down: want 69 (fail closed), got %s", r)
	}
	r = c.Run("claim", "run", "job:f", "-o", "json", "--", "touch", ran)
	if r.Code != 69 {
		t.Errorf("server down, -o json: want 69, got %s", r)
	}
	if faultExists(ran) {
		t.Fatal("the command ran although Redis was unreachable")
	}
}
