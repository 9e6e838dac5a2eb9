//go:build unix

package e2e

// Durability across a failover, end to end: real idmpctl processes (run by
// internal/clitest) against a real primary and a real replica of it, both
// started by the test on loopback ports. The replica is stopped (SIGKILL),
// frozen (SIGSTOP) or promoted (REPLICAOF NO ONE after the primary is
// killed with SIGKILL). Every wait is bounded; timings are logged (-v).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// okWait is the --wait-timeout of writes that must be acknowledged: a
// loaded machine (-race, shared CPUs) can take more than the default 1s.
const okWait = "10s"

// replicaPair starts a primary and one replica, and a CLI pointed at the
// primary.
func replicaPair(t *testing.T, config ...string) (*redistest.Server, *redistest.Server, *clitest.CLI) {
	t.Helper()
	primary := redistest.NewWith(t, redistest.Options{Config: config})
	replica := redistest.NewReplica(t, primary, config...)
	return primary, replica, clitest.New(t, "IDMPCTL_URL="+primary.URL)
}

// killReplica stops the replica with SIGKILL and waits until the primary
// has dropped it.
func killReplica(t *testing.T, primary, replica *redistest.Server) {
	t.Helper()
	replica.Kill()
	if err := primary.WaitReplicas(0, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

func hget(t *testing.T, srv *redistest.Server, key, field string) string {
	t.Helper()
	v, err := srv.Do("HGET", key, field)
	if err != nil {
		t.Fatalf("HGET %s %s: %v", key, field, err)
	}
	return v
}

// The command runs once its claim is acknowledged, and its outcome is on
// the replica when claim run returns.
func TestDurabilityClaimRunAcknowledged(t *testing.T) {
	t.Parallel()
	_, replica, c := replicaPair(t)
	r := c.Expect(0, "claim", "run", "job:1", "--wait-replicas", "1", "--wait-timeout", okWait, "-o", "json", "--", "sh", "-c", "echo ran; touch marker")
	var rep struct {
		Outcome  string `json:"outcome"`
		Recorded string `json:"recorded"`
		Acked    *int   `json:"replicas_acked"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if rep.Outcome != "ran" || rep.Recorded != "COMPLETED" || rep.Acked == nil || *rep.Acked != 1 {
		t.Fatalf("report %+v\n%s", rep, r)
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "marker")); err != nil {
		t.Fatal("the command did not run")
	}
	if got := hget(t, replica, "job:1", "status"); got != "COMPLETED" {
		t.Fatalf("the replica's status is %q, want COMPLETED", got)
	}
	t.Logf("claim run --wait-replicas 1 with a live replica: %s", r.Elapsed.Round(time.Millisecond))
}

// With the replica stopped (killed, or frozen: still listed online but
// answering nothing), claim run exits 69 within about --wait-timeout,
// the command never runs, and the key is free.
func TestDurabilityClaimRunRefusesWithoutReplica(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"killed", "frozen"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			primary, replica, c := replicaPair(t)
			if how == "killed" {
				killReplica(t, primary, replica)
			} else {
				t.Cleanup(func() { _ = replica.Thaw() })
				if err := replica.Freeze(); err != nil {
					t.Fatal(err)
				}
			}
			const timeout = 300 * time.Millisecond
			r := c.Expect(69, "claim", "run", "job:1", "--wait-replicas", "1", "--wait-timeout", timeout.String(), "--", "touch", "marker")
			if _, err := os.Stat(filepath.Join(c.Dir, "marker")); err == nil {
				t.Fatal("the command ran without an acknowledged claim")
			}
			if !strings.Contains(r.Stderr, "0 of 1 replicas acknowledged the write within 300ms") ||
				!strings.Contains(r.Stderr, "the command was not run (fail closed)") {
				t.Errorf("stderr:\n%s", r.Stderr)
			}
			if n, _ := primary.Do("EXISTS", "job:1"); n != "0" {
				t.Errorf("the unacknowledged claim was not released (EXISTS %s)", n)
			}
			if r.Elapsed < timeout || r.Elapsed > timeout+3*time.Second {
				t.Errorf("exit 69 after %s, want about %s", r.Elapsed, timeout)
			}
			t.Logf("replica %s: exit 69 after %s (--wait-timeout %s)", how, r.Elapsed.Round(time.Millisecond), timeout)
		})
	}
}

// A replica that stops while the command runs: the claim was acknowledged,
// the command ran, and its COMPLETED stands on the primary only. The
// command's exit status is passed through (it ran), with a warning, and
// -o json says what stands unacknowledged.
func TestDurabilityClaimRunOutcomeUnacknowledged(t *testing.T) {
	t.Parallel()
	primary, replica, c := replicaPair(t)
	t.Cleanup(func() { _ = replica.Thaw() })
	stop := "kill -STOP " + strconv.Itoa(replica.Pid())
	r := c.Expect(0, "claim", "run", "job:1", "--wait-replicas", "1", "--wait-timeout", "2s", "-o", "json",
		"--", "sh", "-c", stop+"; echo ran")
	var rep struct {
		Outcome        string `json:"outcome"`
		ExitCode       int    `json:"exit_code"`
		Recorded       string `json:"recorded"`
		Acked          *int   `json:"replicas_acked"`
		Unacknowledged string `json:"unacknowledged"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if rep.Outcome != "ran" || rep.ExitCode != 0 || rep.Recorded != "COMPLETED" || rep.Acked == nil || *rep.Acked != 0 ||
		!strings.Contains(rep.Unacknowledged, "0 of 1 replicas acknowledged the write within 2s: COMPLETED stands on the primary") {
		t.Fatalf("report %+v\n%s", rep, r)
	}
	if !strings.Contains(r.Stderr, "idmpctl: warning: claim run \"job:1\": claim complete \"job:1\": 0 of 1 replicas acknowledged") ||
		!strings.Contains(r.Stderr, "its exit status is passed through") {
		t.Errorf("stderr:\n%s", r.Stderr)
	}
	if got := hget(t, primary, "job:1", "status"); got != "COMPLETED" {
		t.Errorf("the primary's status is %q", got)
	}
}

// Issue 24: a short lease with --wait-replicas. Each renewal's WAIT takes at
// most half the time left before the command would be stopped, so that the
// server answers with the replicas it has: with the replica frozen, the
// renewals are refused as unacknowledged (not cut off as timeouts), and the
// command is stopped before the lease could lapse (76).
func TestDurabilityClaimRunShortLease(t *testing.T) {
	t.Parallel()
	for _, frozen := range []bool{false, true} {
		t.Run(map[bool]string{false: "acknowledged", true: "replica-frozen"}[frozen], func(t *testing.T) {
			t.Parallel()
			_, replica, c := replicaPair(t)
			t.Cleanup(func() { _ = replica.Thaw() })
			// A new replica's first acknowledgement can take most of a 1s
			// lease on a loaded machine: then the command is not started
			// (69), which is not what this test is about.
			c.Expect(0, "claim", "acquire", "warm-up", "--wait-replicas", "1", "--wait-timeout", okWait)
			script := "sleep 2.5; echo ran"
			want := 0
			if frozen {
				script = "kill -STOP " + strconv.Itoa(replica.Pid()) + "; sleep 5; echo ran"
				want = 76
			}
			r := c.Expect(want, "claim", "run", "job:1", "--lease", "1s", "--wait-replicas", "1", "--wait-timeout", okWait, "--", "sh", "-c", script)
			switch {
			case !frozen && (r.Stdout != "ran\n" || hget(t, replica, "job:1", "status") != "COMPLETED"):
				t.Errorf("want COMPLETED on the replica: %s", r)
			case frozen && (strings.Contains(r.Stdout, "ran") || !regexp.MustCompile(
				`renewals failed for \d+ms \(the last: claim renew "job:1": (0 of 1 replicas acknowledged the write within \d+ms|no reply within the (\d+ms|0s) left before the command had to be stopped; the last answer: claim renew "job:1": 0 of 1 replicas acknowledged the write within \d+ms)[^)]*\): the command was stopped before its lease \(1s\) could lapse`).MatchString(r.Stderr)):
				t.Errorf("want the command stopped for unacknowledged renewals: %s", r)
			}
			t.Logf("exit %d after %s; stderr: %s", r.Code, r.Elapsed.Round(time.Millisecond), strings.TrimSpace(r.Stderr))
		})
	}
}

// A failover after an acknowledged acquire keeps the claim: the primary is
// killed with SIGKILL, the replica is promoted (REPLICAOF NO ONE), and a
// second worker on the new primary finds the key busy (75), not free. The
// control shows what the wait prevents: an acquire that never reached the
// replica (frozen, its link cut by the primary, so nothing is in flight
// to it either) is refused with --wait-replicas and taken without, and
// then lost in the same failover: a second worker gets the key.
func TestDurabilityFailoverKeepsTheClaim(t *testing.T) {
	t.Parallel()
	t.Run("acknowledged", func(t *testing.T) {
		t.Parallel()
		primary, replica, c := replicaPair(t)
		worker := c.Start("claim", "run", "job:1", "--wait-replicas", "1", "--wait-timeout", okWait, "--lease", "1m", "--owner", "worker-1",
			"--", "sh", "-c", "touch started; exec sleep 60")
		started := filepath.Join(c.Dir, "started")
		if !faultWaitFor(20*time.Second, func() bool { return faultExists(started) || worker.Exited() }) || worker.Exited() {
			t.Fatalf("the first worker's command did not start: %s", worker.Status())
		}
		primary.Kill()
		if err := replica.Promote(); err != nil {
			t.Fatal(err)
		}
		second := c.With("IDMPCTL_URL=" + replica.URL)
		start := time.Now()
		r := second.Expect(75, "claim", "acquire", "job:1", "--owner", "worker-2")
		if !regexp.MustCompile(`busy: held by worker-1 \(token [0-9]{16}\)`).MatchString(r.Stderr) {
			t.Errorf("stderr:\n%s", r.Stderr)
		}
		r = second.Expect(75, "claim", "run", "job:1", "--owner", "worker-2", "--", "touch", "ran-2")
		if faultExists(filepath.Join(c.Dir, "ran-2")) {
			t.Fatal("the second worker ran the command")
		}
		t.Logf("after the failover the claim holds: second worker busy in %s", time.Since(start).Round(time.Millisecond))
	})
	t.Run("control-unacknowledged", func(t *testing.T) {
		t.Parallel()
		primary, replica, c := replicaPair(t)
		t.Cleanup(func() { _ = replica.Thaw() })
		if err := replica.Freeze(); err != nil {
			t.Fatal(err)
		}
		if _, err := primary.Do("CLIENT", "KILL", "TYPE", "replica"); err != nil {
			t.Fatal(err)
		}
		if err := primary.WaitReplicas(0, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		c.Expect(69, "claim", "acquire", "job:1", "--wait-replicas", "1", "--wait-timeout", "200ms", "--owner", "worker-1")
		c.Expect(0, "claim", "acquire", "job:1", "--lease", "1m", "--owner", "worker-1")
		primary.Kill()
		if err := replica.Thaw(); err != nil {
			t.Fatal(err)
		}
		if err := replica.Promote(); err != nil {
			t.Fatal(err)
		}
		r := c.With("IDMPCTL_URL="+replica.URL).Expect(0, "claim", "acquire", "job:1", "--owner", "worker-2")
		if !regexp.MustCompile(`^[0-9]{16}\n$`).MatchString(r.Stdout) {
			t.Errorf("second worker: %s", r)
		}
		t.Log("without an acknowledged acquire the failover lost the claim: a second worker got the key")
	})
}

// xadd --wait-replicas: acknowledged adds print their ID (the replica has
// the entry); with the replica gone the add stands on the primary, prints
// nothing and exits 69; batches print only acknowledged lines. Per mode
// (native on Redis 8.6).
func TestDurabilityXAdd(t *testing.T) {
	t.Parallel()
	eachMode(t, testDurabilityXAdd)
}

func testDurabilityXAdd(t *testing.T, mode string) {
	primary, replica, c := replicaPair(t)
	r := c.Expect(0, "xadd", "s", "--pid", "p", "--iid", "a", "--wait-replicas", "1", "--wait-timeout", okWait, "-o", "json", "--mode", mode, "f", "v")
	if !strings.Contains(r.Stdout, `"replicas_acked":1`) || !strings.Contains(r.Stdout, `"duplicate":false`) {
		t.Fatalf("stdout %s", r.Stdout)
	}
	if n, _ := replica.Do("XLEN", "s"); n != "1" {
		t.Fatalf("acknowledged, but the replica's XLEN is %s", n)
	}
	in := filepath.Join(c.Dir, "in.ndjson")
	if err := os.WriteFile(in, []byte("{\"iid\":\"b\",\"fields\":{\"n\":\"1\"}}\n{\"iid\":\"c\",\"fields\":{\"n\":\"2\"}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = c.Expect(0, "xadd", "s", "--pid", "p", "--batch", in, "--wait-replicas", "1", "--wait-timeout", okWait, "-o", "json", "--mode", mode)
	if strings.Count(r.Stdout, `"replicas_acked":1`) != 2 {
		t.Fatalf("batch stdout %s", r.Stdout)
	}

	killReplica(t, primary, replica)
	r = c.Expect(69, "xadd", "s", "--pid", "p", "--iid", "d", "--wait-replicas", "1", "--wait-timeout", "200ms", "--mode", mode, "f", "v")
	if r.Stdout != "" || !strings.Contains(r.Stderr, "0 of 1 replicas acknowledged the write within 200ms: entry ") ||
		!strings.Contains(r.Stderr, "was added on the primary but could be lost in a failover") {
		t.Errorf("unacknowledged add:\n%s", r)
	}
	if n, _ := primary.Do("XLEN", "s"); n != "4" {
		t.Errorf("the add does not stand on the primary: XLEN %s", n)
	}
	t.Logf("unacknowledged xadd: exit 69 after %s", r.Elapsed.Round(time.Millisecond))
	if err := os.WriteFile(in, []byte("{\"iid\":\"e\",\"fields\":{\"n\":\"1\"}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = c.Expect(69, "xadd", "s", "--pid", "p", "--batch", in, "--batch-id", "b2", "--wait-replicas", "1", "--wait-timeout", "200ms", "--mode", mode)
	if r.Stdout != "" || !strings.Contains(r.Stderr, "lines 1-1 are committed on the primary") {
		t.Errorf("unacknowledged batch:\n%s", r)
	}
}

// --wait-aof needs WAITAOF (Redis 7.2+): on an older server it is refused
// before anything is written (78, the server's configuration); where the server has it, an AOF
// primary and replica acknowledge the write.
func TestDurabilityWaitAOF(t *testing.T) {
	t.Parallel()
	if !redistest.AtLeast(7, 2) {
		srv := redistest.NewWith(t, redistest.Options{Unix: true, AOF: true})
		c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
		r := c.Expect(78, "claim", "acquire", "job:1", "--wait-aof")
		if !strings.Contains(r.Stderr, "the server cannot WAITAOF: ERR unknown command") {
			t.Errorf("stderr:\n%s", r.Stderr)
		}
		if n, _ := srv.Do("EXISTS", "job:1"); n != "0" {
			t.Error("the claim was written before WAITAOF was refused")
		}
		c.Expect(78, "xadd", "s", "--pid", "p", "--iid", "i", "--wait-aof", "--wait-replicas", "1", "f", "v")
		t.Skip("WAITAOF needs Redis 7.2 or later; the test server is older: only its refusal was tested")
	}
	_, _, c := replicaPair(t, "appendonly yes", "appendfsync always")
	r := c.Expect(0, "claim", "acquire", "job:1", "--wait-aof", "--wait-replicas", "1", "--wait-timeout", okWait, "-o", "json")
	if !strings.Contains(r.Stdout, `"replicas_acked":1`) || !strings.Contains(r.Stdout, `"local_aof_fsynced":true`) {
		t.Errorf("stdout %s", r.Stdout)
	}
}

// In a cluster the write and its WAIT go to the primary that holds the
// key: with a replica under the first primary only (slots 0-5460), a key
// there is acknowledged, and a key of another primary is not (69).
func TestDurabilityCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.NewCluster(t) // skipped with -short or without redis-cli
	if _, err := cl.AddReplica(filepath.Join(t.TempDir(), "replica"), 0); err != nil {
		t.Fatal(err)
	}
	keyOn := func(replicated bool) string {
		for i := 0; ; i++ {
			key := "job:" + strconv.Itoa(i)
			reply, err := cl.Nodes[0].Do("CLUSTER", "KEYSLOT", key)
			if err != nil {
				t.Fatal(err)
			}
			if slot, _ := strconv.Atoi(reply); (slot <= 5460) == replicated {
				return key
			}
		}
	}
	// The URL names the second primary: the client discovers the rest.
	c := clitest.New(t, "IDMPCTL_URL="+cl.Nodes[1].URL)
	here, there := keyOn(true), keyOn(false)
	r := c.Expect(0, "claim", "acquire", here, "--wait-replicas", "1", "--wait-timeout", okWait, "-o", "json")
	if !strings.Contains(r.Stdout, `"replicas_acked":1`) {
		t.Errorf("%s on the replicated primary: %s", here, r.Stdout)
	}
	r = c.Expect(69, "claim", "acquire", there, "--wait-replicas", "1", "--wait-timeout", "200ms")
	if !strings.Contains(r.Stderr, "0 of 1 replicas acknowledged") || !strings.Contains(r.Stderr, "so it was released") {
		t.Errorf("%s elsewhere: %s", there, r)
	}
	stream := "{" + here + "}.s"
	r = c.Expect(0, "xadd", stream, "--pid", "p", "--iid", "i", "--wait-replicas", "1", "--wait-timeout", okWait, "-o", "json", "f", "v")
	if !strings.Contains(r.Stdout, `"replicas_acked":1`) {
		t.Errorf("xadd %s: %s", stream, r.Stdout)
	}
}

// TestDurabilityXAddFailover: what --wait-replicas acknowledged survives a
// failover, in each mode (native on Redis 8.6). The primary is killed and
// the replica promoted: the same adds sent again to it are duplicates of
// the same entries, and the acknowledged batch resumes after its last
// line. A batch the frozen replica never acknowledged (69) is lost in the
// failover with its progress record, so its rerun on the new primary sends
// every line again. Either way: every line once, none lost.
func TestDurabilityXAddFailover(t *testing.T) {
	t.Parallel()
	eachMode(t, testDurabilityXAddFailover)
}

func testDurabilityXAddFailover(t *testing.T, mode string) {
	const lines = 2000
	t.Run("acknowledged", func(t *testing.T) {
		t.Parallel()
		primary, replica, c := replicaPair(t)
		ids := map[string]string{}
		for _, iid := range []string{"a", "b", "c"} {
			r := c.Expect(0, "xadd", "singles", "--pid", "p", "--iid", iid, "--wait-replicas", "1", "--wait-timeout", okWait, "--mode", mode, "f", iid)
			ids[iid] = strings.TrimSpace(r.Stdout)
		}
		file := filepath.Join(c.Dir, "batch.ndjson")
		faultBatchFile(t, file, lines)
		c.Expect(0, "xadd", "s", "--pid", "q", "--batch", file, "--wait-replicas", "1", "--wait-timeout", okWait, "--mode", mode)

		primary.Kill()
		if err := replica.Promote(); err != nil {
			t.Fatal(err)
		}
		nc := c.With("IDMPCTL_URL=" + replica.URL)
		for iid, id := range ids {
			r := nc.Expect(0, "xadd", "singles", "--pid", "p", "--iid", iid, "--mode", mode, "-o", "json", "f", iid)
			if !strings.Contains(r.Stdout, `"id":"`+id+`"`) || !strings.Contains(r.Stdout, `"duplicate":true,"original_exists":true`) {
				t.Errorf("%s after the failover: want a duplicate of %s: %s", iid, id, r.Stdout)
			}
		}
		r := nc.Expect(0, "xadd", "s", "--pid", "q", "--batch", file, "--mode", mode)
		if !strings.Contains(r.Stderr, "lines 1-2000 were committed by an earlier run") || !strings.Contains(r.Stderr, "0 lines: 0 added") {
			t.Errorf("the batch's rerun on the promoted replica:\n%s", r)
		}
		missing, extra := faultScanStream(t, faultRedis(t, replica), "s", lines)
		if missing != 0 || extra != 0 {
			t.Fatalf("after the failover: %d lines missing, %d duplicated", missing, extra)
		}
		if n, _ := replica.Do("XLEN", "singles"); n != "3" {
			t.Errorf("singles: XLEN %s after the failover, want 3", n)
		}
	})
	t.Run("unacknowledged", func(t *testing.T) {
		t.Parallel()
		primary, replica, c := replicaPair(t)
		file := filepath.Join(c.Dir, "batch.ndjson")
		faultBatchFile(t, file, lines)
		t.Cleanup(func() { _ = replica.Thaw() })
		if err := replica.Freeze(); err != nil {
			t.Fatal(err)
		}
		if _, err := primary.Do("CLIENT", "KILL", "TYPE", "replica"); err != nil {
			t.Fatal(err)
		}
		if err := primary.WaitReplicas(0, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		r := c.Expect(69, "xadd", "s", "--pid", "q", "--batch", file, "--wait-replicas", "1", "--wait-timeout", "200ms", "--mode", mode)
		if r.Stdout != "" || !strings.Contains(r.Stderr, "are committed on the primary but could be lost in a failover") {
			t.Errorf("unacknowledged batch:\n%s", r)
		}
		primary.Kill()
		if err := replica.Thaw(); err != nil {
			t.Fatal(err)
		}
		if err := replica.Promote(); err != nil {
			t.Fatal(err)
		}
		r = c.With("IDMPCTL_URL="+replica.URL).Expect(0, "xadd", "s", "--pid", "q", "--batch", file, "--mode", mode)
		if !strings.Contains(r.Stderr, "2,000 lines: 2,000 added, 0 duplicates") {
			t.Errorf("the rerun on the promoted replica:\n%s", r)
		}
		missing, extra := faultScanStream(t, faultRedis(t, replica), "s", lines)
		if missing != 0 || extra != 0 {
			t.Fatalf("after the failover: %d lines missing, %d duplicated", missing, extra)
		}
	})
}

// A batch's adds keep their IDMP tracking where they are replicated and
// logged: acknowledged by a replica and the AOF (--wait-replicas 1
// --wait-aof), then the primary killed (-9): on the promoted replica, and
// on the primary restarted from its AOF, the same lines again (another
// batch ID: the progress record does not help) are all duplicates. The
// native chunk script's XADD ... IDMP goes to the replica and the AOF as
// XADD ... IDMP with the generated ID (effects replication), as from a
// MULTI/EXEC.
func TestDurabilityBatchTrackingSurvivesFailover(t *testing.T) {
	t.Parallel()
	eachBatchMode(t, func(t *testing.T, m batchMode) {
		t.Parallel()
		if !redistest.AtLeast(7, 2) {
			t.Skip("WAITAOF needs Redis 7.2 or later")
		}
		primary, replica, c := replicaPair(t, "appendonly yes", "appendfsync always")
		if _, err := primary.Do("XADD", "s", "MAXLEN", "0", "*", "init", "1"); err != nil {
			t.Fatal(err)
		}
		c.Expect(0, append([]string{"cfgset", "s", "--maxsize", "10000", "--yes"}, m.flags...)...)
		const lines = 3000
		file := filepath.Join(c.Dir, "b.ndjson")
		writeLines(t, file, lines)
		r := c.Expect(0, append([]string{"xadd", "s", "--pid", "p", "--batch", file, "--wait-replicas", "1", "--wait-aof",
			"--wait-timeout", okWait, "-o", "json"}, m.flags...)...)
		if n := strings.Count(r.Stdout, `"local_aof_fsynced":true`); n != lines || strings.Count(r.Stdout, `"replicas_acked":1`) != lines {
			t.Fatalf("%d of %d lines acknowledged by the replica and the AOF:\n%s", n, lines, r.Stderr)
		}
		wantPath(t, m, r.Stderr)
		primary.Kill()
		if _, err := replica.Do("REPLICAOF", "NO", "ONE"); err != nil {
			t.Fatal(err)
		}
		again := func(url, id string) {
			t.Helper()
			r := c.With("IDMPCTL_URL="+url).Expect(0, append([]string{"xadd", "s", "--pid", "p", "--batch", file, "--batch-id", id}, m.flags...)...)
			if !strings.Contains(r.Stderr, "0 added, 3,000 duplicates") {
				t.Errorf("%s: the lines again: %s", id, r.Stderr)
			}
		}
		again(replica.URL, "on-the-replica")
		if err := primary.Restart(); err != nil {
			t.Fatal(err)
		}
		again(primary.URL, "after-the-aof")
	})
}
