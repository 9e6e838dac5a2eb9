//go:build unix

package e2e

// Issue 16 items 6 and 7, end to end: a reader that goes away, and an
// outcome that cannot be sent once the command ran.

import (
	"bufio"
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
)

// `claim run k -- CMD | head -1`: the reader goes away after the first
// line. Neither idmpctl nor the command dies of it: the command finishes
// (it appends to a log after its last output), its whole output is
// captured, and COMPLETED is recorded with it.
func TestClaimRunReaderGoesAway(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	rdb := faultRedis(t, srv)
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("idmpctl", "claim", "run", "job:pipe", "--",
		"sh", "-c", `echo a; sleep .3; echo b; sleep .3; echo done >> log`)
	cmd.Dir, cmd.Env, cmd.Stdout = dir, clitest.Env("IDMPCTL_URL="+srv.URL), w
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "a\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	_ = r.Close() // head -1 exits
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("idmpctl did not end")
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err != nil || ws.Signaled() {
		t.Fatalf("idmpctl ended with %v (%v), want exit 0: stderr %s", err, ws, stderr.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "log")); string(b) != "done\n" {
		t.Errorf("the command did not finish: log %q", b)
	}
	rec := faultHGetAll(t, rdb, "job:pipe")
	if rec["status"] != "COMPLETED" || rec["result"] != "a\nb\n" {
		t.Errorf("record %v, want COMPLETED with the whole output", rec)
	}
	if !strings.Contains(stderr.String(), "stdout was closed") {
		t.Errorf("stderr does not say stdout was closed: %s", stderr.String())
	}
	t.Logf("stderr: %s", strings.TrimSpace(stderr.String()))
}

// A partition after the command ran: the outcome cannot be sent. claim
// run keeps trying with the same token while the lease allows; if it
// still cannot, it exits with the command's own code and a warning, never
// 69 (which says the command did not run, and makes a consumer requeue it).
// When the partition heals within the lease, the outcome is recorded.
func TestClaimRunOutcomeAfterAPartition(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   int
		healAt time.Duration // 0: never
		status string
	}{
		{"succeeded, never heals", 0, 0, "PROCESSING"},
		{"failed, never heals", 3, 0, "PROCESSING"},
		{"succeeded, heals", 0, 1500 * time.Millisecond, "COMPLETED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.NewWith(t, redistest.Options{})
			rdb := faultRedis(t, srv)
			relay := redistest.NewRelay(t, srv)
			t.Cleanup(relay.Thaw)
			c := clitest.New(t, "IDMPCTL_URL="+relay.URL)
			const key = "job:record"
			p := c.Start("claim", "run", key, "--lease", "3s", "--timeout", "1s", "--", "sh", "-c",
				`touch started; while [ ! -e go ]; do sleep 0.01; done; echo ran; exit `+strconv.Itoa(tc.code))
			faultAwaitStarted(t, c, p)
			token := faultHGetAll(t, rdb, key)["token"]
			relay.Freeze()
			if err := os.WriteFile(filepath.Join(c.Dir, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.healAt > 0 {
				time.AfterFunc(tc.healAt, relay.Thaw)
			}
			r := p.Wait(time.Minute)
			if r.Code != tc.code {
				t.Fatalf("want the command's exit %d, got %s", tc.code, r)
			}
			relay.Thaw()
			rec := faultHGetAll(t, rdb, key)
			if rec["status"] != tc.status || rec["token"] != token {
				t.Errorf("record %v, want %s with token %s", rec, tc.status, token)
			}
			if tc.healAt == 0 && !strings.Contains(r.Stderr, "its outcome could not be recorded") {
				t.Errorf("no warning that the outcome was not recorded: %s", r.Stderr)
			}
			if tc.healAt > 0 && r.Stderr != "" {
				t.Errorf("stderr: %s", r.Stderr)
			}
			t.Logf("exit %d after %s; record %s; stderr: %s", r.Code, r.Elapsed.Round(time.Millisecond), rec["status"],
				strings.ReplaceAll(strings.TrimSpace(r.Stderr), "\n", " | "))
		})
	}
}

// TestClaimRunHangup: the terminal hung up (SIGHUP, which the shell sends
// its jobs) is forwarded as SIGINT and SIGTERM are: the command ends, FAILED
// is recorded and idmpctl exits 129, so a redelivery can run it at once.
// Before: idmpctl died of the signal and the key stayed PROCESSING until
// its lease passed.
func TestClaimRunHangup(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	started := filepath.Join(c.Dir, "started")
	p := c.Start("claim", "run", "job:hup", "--", "sh", "-c", "touch "+started+"; exec sleep 30")
	if !faultWaitFor(30*time.Second, func() bool { _, err := os.Stat(started); return err == nil || p.Exited() }) {
		t.Fatal("the command never started")
	}
	if err := syscall.Kill(p.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	r := p.Wait(30 * time.Second)
	if r.Code != 129 || !strings.Contains(r.Stderr, "interrupted (SIGHUP)") {
		t.Fatalf("want 129 and interrupted (SIGHUP), got %s", r)
	}
	if s := c.Run("inspect", "job:hup"); !strings.Contains(s.Stdout, "status\tFAILED") {
		t.Fatalf("want FAILED recorded: %s", s)
	}
}
