//go:build unix

package e2e

// consume under faults (issue 29): consumers killed with kill -9 part way,
// a group replayed from 0, the server killed with its AOF fsynced every
// second and always. Each handler logs its start and end to a file, with
// its consumer's pid ($PPID: idmpctl starts the handler itself), so that
// every run of every entry is counted, whoever ran it.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// consumeHandler logs "start|end ID ATTEMPT PID" and fails the entries
// that have a field "fail".
const consumeHandler = `input=$(cat)
echo "start $IDMPCTL_ENTRY_ID $IDMPCTL_ATTEMPT $PPID" >> log
sleep 0.02
echo "end $IDMPCTL_ENTRY_ID $IDMPCTL_ATTEMPT $PPID" >> log
case $input in *'"fail"'*) exit 1 ;; esac
`

// consumeRun is one logged run of a handler.
type consumeRun struct {
	id, attempt, pid string
	ended            bool
}

// consumeLog reads the handlers' log: the runs of each entry, in order.
func consumeLog(t *testing.T, dir string) map[string][]*consumeRun {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	runs := map[string][]*consumeRun{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		switch f[0] {
		case "start":
			runs[f[1]] = append(runs[f[1]], &consumeRun{id: f[1], attempt: f[2], pid: f[3]})
		case "end":
			for _, r := range runs[f[1]] {
				if r.attempt == f[2] && r.pid == f[3] {
					r.ended = true
				}
			}
		}
	}
	return runs
}

func consumeSetup(t *testing.T, srv *redistest.Server, n int, failing func(i int) bool) (*clitest.CLI, *redis.Client) {
	t.Helper()
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	if err := os.WriteFile(filepath.Join(c.Dir, "h.sh"), []byte(consumeHandler), 0o644); err != nil {
		t.Fatal(err)
	}
	var adds strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&adds, "XADD s %d-0 n %d", i, i)
		if failing(i) {
			adds.WriteString(" fail yes")
		}
		adds.WriteString("\n")
	}
	adds.WriteString("XGROUP CREATE s g 0\n")
	c.WithStdin(strings.NewReader(adds.String())).Expect(0, "exec")
	return c, faultRedis(t, srv)
}

// waitRuns waits (a minute at most) until the handlers logged n starts.
func waitRuns(t *testing.T, dir string, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got := 0
		for _, rs := range consumeLog(t, dir) {
			got += len(rs)
		}
		if got >= n {
			return
		}
	}
	t.Fatalf("fewer than %d handler runs within a minute", n)
}

func pending(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	p, err := rdb.XPending(context.Background(), "s", "g").Result()
	if err != nil {
		t.Fatal(err)
	}
	return p.Count
}

// 300 entries, 6 of which always fail; three consumers with --workers 2,
// one killed with kill -9 part way, then one more with --until-empty.
// Every good entry ran; only the killed consumer's entries in flight (2 at
// most) ran twice, or lost an attempt that never started; each failing
// entry ran --max-attempts times and is dead-lettered once; nothing is
// pending. Then XGROUP SETID 0 and another run: nothing runs again,
// everything is acknowledged, nothing is dead-lettered twice.
func TestConsumeKilledConsumer(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	const n, maxAttempts = 300, 3
	failing := func(i int) bool { return i%50 == 0 }
	c, rdb := consumeSetup(t, srv, n, failing)
	args := func(name string) []string {
		return []string{"consume", "s", "--group", "g", "--consumer", name, "--workers", "2", "--lease", "2s",
			"--max-attempts", strconv.Itoa(maxAttempts), "--retry-delay", "100ms", "--dead-letter", "dead",
			"--until-empty", "--block", "500ms", "-o", "json", "--", "sh", "h.sh"}
	}
	victim := c.Start(args("c1")...)
	others := []*clitest.Proc{c.Start(args("c2")...), c.Start(args("c3")...)}
	waitRuns(t, c.Dir, n/3)
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	victim.Wait(10 * time.Second)
	for _, p := range others {
		if r := p.Wait(2 * time.Minute); r.Code != 0 {
			t.Fatalf("a consumer beside the killed one: %s", r)
		}
	}
	// The killed consumer's entries are reclaimed once idle longer than the
	// lease, and their claims taken over once it has passed. An entry that
	// a consumer beside it reclaimed while the killed one's claim still
	// held (its lease a few ms from its end) stays pending, idle from that
	// reclaim: a run a lease later takes it (seen once in CI, under -race).
	time.Sleep(time.Until(killed.Add(2500 * time.Millisecond)))
	for try := 0; ; try++ {
		c.Expect(0, args("c"+strconv.Itoa(4+try*10))...)
		if try == 2 || pending(t, rdb) == 0 {
			break
		}
		time.Sleep(2500 * time.Millisecond)
	}

	runs := consumeLog(t, c.Dir)
	victimPid := strconv.Itoa(victim.Pid())
	casualties := 0 // entries whose run died with the killed consumer
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("%d-0", i)
		rs := runs[id]
		attempts := map[string]bool{}
		for _, r := range rs {
			attempts[r.attempt] = true
		}
		switch {
		case !failing(i) && len(rs) == 1:
		case !failing(i) && len(rs) == 2 && rs[0].pid == victimPid:
			casualties++ // its first run died, or its completion, with the consumer
		case failing(i) && len(rs) == maxAttempts:
		case failing(i) && len(rs) == maxAttempts-1 && len(attempts) == maxAttempts-1:
			casualties++ // an attempt taken by the killed consumer never started
		default:
			t.Errorf("entry %s (failing %v) ran %d times: %+v", id, failing(i), len(rs), rs)
		}
		for _, r := range rs {
			if r.pid != victimPid && !r.ended {
				t.Errorf("entry %s: a run of a consumer that was not killed never ended: %+v", id, r)
			}
		}
	}
	if casualties > 2 {
		t.Errorf("%d entries ran twice or lost an attempt; the killed consumer had at most 2 in flight", casualties)
	}
	t.Logf("%d entries: %d runs were the killed consumer's casualties", n, casualties)
	deadLetters := func() map[string]int {
		entries, err := rdb.XRange(context.Background(), "dead", "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]int{}
		for _, e := range entries {
			ids[e.Values["idmpctl-id"].(string)]++
		}
		return ids
	}
	for i := 50; i <= n; i += 50 {
		if got := deadLetters()[fmt.Sprintf("%d-0", i)]; got != 1 {
			t.Errorf("entry %d-0 is in the dead-letter stream %d times", i, got)
		}
	}
	if d := deadLetters(); len(d) != n/50 {
		t.Errorf("dead letters: %v", d)
	}
	if p := pending(t, rdb); p != 0 {
		ext, _ := rdb.XPendingExt(context.Background(), &redis.XPendingExtArgs{Stream: "s", Group: "g", Start: "-", End: "+", Count: 10}).Result()
		t.Errorf("%d entries still pending: %+v victim %s", p, ext, victimPid)
		for i := 50; i <= n; i += 50 {
			for _, r := range runs[fmt.Sprintf("%d-0", i)] {
				t.Logf("%d-0: %+v", i, *r)
			}
			h, _ := rdb.HGetAll(context.Background(), fmt.Sprintf("{s}:consume:g:%d-0", i)).Result()
			t.Logf("%d-0: %v", i, h)
		}
	}

	// Delivered again from the start: acknowledged, nothing runs.
	if err := rdb.XGroupSetID(context.Background(), "s", "g", "0").Err(); err != nil {
		t.Fatal(err)
	}
	r := c.Expect(0, args("c5")...)
	if again := consumeLog(t, c.Dir); countRuns(again) != countRuns(runs) {
		t.Errorf("after XGROUP SETID 0, %d runs, before %d", countRuns(again), countRuns(runs))
	}
	if !strings.Contains(r.Stderr, "consume s (group g): 300 handled: 0 completed, 6 dead-lettered, 294 skipped;") {
		t.Errorf("the replay's summary: %s", r)
	}
	if p := pending(t, rdb); p != 0 || len(deadLetters()) != n/50 || countDead(t, rdb) != n/50 {
		t.Errorf("after the replay: %d pending, %d dead letters", p, countDead(t, rdb))
	}
}

func countRuns(runs map[string][]*consumeRun) int {
	n := 0
	for _, rs := range runs {
		n += len(rs)
	}
	return n
}

func countDead(t *testing.T, rdb *redis.Client) int {
	n, err := rdb.XLen(context.Background(), "dead").Result()
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// kill -9 of the server mid-run, with its AOF fsynced always and every
// second, then a restart and another run: no entry is lost, and no entry
// whose completion was reported durable ("durable":true, the completion
// fsynced: WAITAOF on Redis 7.2+, or appendfsync always) runs again. On a
// server without WAITAOF under everysec, completions are not reported
// durable, and one made in the last second before the kill may be lost:
// such an entry runs again (at most once more here).
func TestConsumeServerKilled(t *testing.T) {
	t.Parallel()
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			t.Parallel()
			srv := redistest.NewWith(t, redistest.Options{AOF: true})
			const n = 40
			c, rdb := consumeSetup(t, srv, n, func(int) bool { return false })
			if err := rdb.ConfigSet(context.Background(), "appendfsync", fsync).Err(); err != nil {
				t.Fatal(err)
			}
			args := []string{"consume", "s", "--group", "g", "--workers", "4", "--lease", "2s", "--until-empty", "--block", "300ms", "-o", "json", "--", "sh", "h.sh"}
			first := c.Start(args...)
			waitRuns(t, c.Dir, n/3)
			srv.Kill()
			killed := time.Now()
			r := first.Wait(time.Minute)
			if r.Code != 69 {
				t.Fatalf("the consumer whose server died: %s", r)
			}
			durable, reported := map[string]bool{}, 0
			for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
				var e struct {
					ID      string `json:"id"`
					Outcome string `json:"outcome"`
					Durable bool   `json:"durable"`
				}
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				if e.Outcome == "completed" {
					reported++
					durable[e.ID] = e.Durable
				}
			}
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Until(killed.Add(2500 * time.Millisecond))) // the leases of the claims in flight pass
			second := c.Expect(0, args...)

			if got, err := rdb.XLen(context.Background(), "s").Result(); err != nil || got != n {
				t.Fatalf("XLEN after the restart: %d %v", got, err)
			}
			runs := consumeLog(t, c.Dir)
			strict := fsync == "always" || redistest.AtLeast(7, 2)
			again := 0
			for i := 1; i <= n; i++ {
				id := fmt.Sprintf("%d-0", i)
				rs := runs[id]
				switch {
				case len(rs) == 0:
					t.Errorf("entry %s never ran: lost", id)
				case len(rs) > 1 && durable[id]:
					t.Errorf("entry %s ran %d times, after its completion was reported durable", id, len(rs))
				case len(rs) > 2:
					t.Errorf("entry %s ran %d times", id, len(rs))
				case len(rs) == 2:
					again++
				}
				if reportedDone, ok := durable[id]; ok && reportedDone != strict {
					t.Errorf("entry %s: durable %v under appendfsync %s", id, reportedDone, fsync)
				}
			}
			if p := pending(t, rdb); p != 0 {
				t.Errorf("%d entries still pending: %s", p, second)
			}
			if !strict && !strings.Contains(r.Stderr, "a completion made in the last second before the server crashes can be lost") {
				t.Errorf("no warning of what everysec may lose: %s", r)
			}
			t.Logf("appendfsync %s: %d completions reported before the kill (durable: %v), %d entries ran again", fsync, reported, strict, again)
		})
	}
}

// The one line of docs/consume.md that replaces claim-run.md's loop, run
// as it is written: the good invoice is sent once, the failing one is
// pending for its retry, and SIGTERM ends it with 143.
func TestConsumeDocLine(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(consumeDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## The loop of claim-run.md, as one line\n\nThe loop there, reading from a stream:\n\n```sh\n")
	line, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 || !strings.HasPrefix(line, "idmpctl consume invoices ") {
		t.Fatal(consumeDoc + ": the line is not where this test looks for it")
	}
	srv := redistest.NewWith(t, redistest.Options{})
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	c.WithStdin(strings.NewReader("XADD invoices 1-0 amount 100\nXADD invoices 2-0 amount 7\n")).Expect(0, "exec")
	script := "#!/bin/sh\ninput=$(cat)\necho \"$IDMPCTL_ENTRY_ID\" >> effects\ncase $input in *'\"amount\":\"7\"'*) exit 3 ;; esac\n"
	if err := os.WriteFile(filepath.Join(c.Dir, "send-invoice.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "exec "+line) // idmpctl itself gets the signal
	cmd.Dir, cmd.Env = c.Dir, c.Env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rdb := faultRedis(t, srv)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if n, _ := rdb.Exists(context.Background(), "{invoices}:consume:billing:2-0").Result(); n == 1 {
			if h, _ := rdb.HGet(context.Background(), "{invoices}:consume:billing:2-0", "status").Result(); h == "FAILED" {
				break
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the failing invoice was not tried within a minute")
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
		t.Errorf("after SIGTERM: %v, want exit 143", err)
	}
	effects, _ := os.ReadFile(filepath.Join(c.Dir, "effects"))
	if string(effects) != "1-0\n2-0\n" {
		t.Errorf("side effects: %q", effects)
	}
	if p, err := rdb.XPending(context.Background(), "invoices", "billing").Result(); err != nil || p.Count != 1 {
		t.Errorf("pending: %+v %v, want the failed invoice's retry", p, err)
	}
}

// A consumer runs for days: the processes it starts for each entry (the
// guard, the handler) are reaped, not left as zombies, one an entry.
func TestConsumeReapsItsChildren(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	c, rdb := consumeSetup(t, srv, 20, func(int) bool { return false })
	p := c.Start("consume", "s", "--group", "g", "--", "true")
	zombies := func() int { // children of the consumer in state Z (/proc/PID/stat: "pid (comm) state ppid ...")
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		n := 0
		for _, f := range stats {
			b, _ := os.ReadFile(f)
			if i := strings.LastIndexByte(string(b), ')'); i > 0 {
				if f := strings.Fields(string(b[i+1:])); len(f) > 1 && f[0] == "Z" && f[1] == strconv.Itoa(p.Pid()) {
					n++
				}
			}
		}
		return n
	}
	for deadline := time.Now().Add(time.Minute); pending(t, rdb) > 0 || consumeDone(t, rdb) < 20; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("20 entries not consumed within a minute: %s", p.Status())
		}
	}
	n := zombies()
	for deadline := time.Now().Add(5 * time.Second); n > 0 && time.Now().Before(deadline); n = zombies() {
		time.Sleep(20 * time.Millisecond)
	}
	if n > 0 {
		t.Errorf("%d zombies after 20 entries", n)
	}
}

// consumeDone counts the entries of s acknowledged by group g.
func consumeDone(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	g, err := rdb.XInfoGroups(context.Background(), "s").Result()
	if err != nil || len(g) != 1 {
		t.Fatalf("XINFO GROUPS: %v %v", g, err)
	}
	return int(g[0].EntriesRead - g[0].Pending)
}
