package claimrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// lateChild is the argument that makes this test binary run runLateChild.
const lateChild = "__late-child"

// runLateChild claims IDMPCTL_TEST_KEY with a 1s lease on IDMPCTL_TEST_URL,
// then runs a command whose guard gets ready only after 1.5s (a start slower
// than the lease), prints Run's exit code and error, and exits 0.
func runLateChild() {
	ctx := context.Background()
	conn, err := redisconn.Open(redisconn.ConnConfig{URL: os.Getenv("IDMPCTL_TEST_URL"), Timeout: 5 * time.Second})
	if err != nil {
		os.Exit(3)
	}
	key := os.Getenv("IDMPCTL_TEST_KEY")
	sent := time.Now()
	res, err := claim.Acquire(ctx, conn, claim.AcquireParams{Key: key, Owner: "late", Lease: time.Second, TTL: time.Minute})
	if err != nil || !res.Acquired() {
		os.Exit(4)
	}
	g := &Guard{started: make(chan struct{}), ready: make(chan struct{})}
	close(g.started)
	time.AfterFunc(1500*time.Millisecond, func() { close(g.ready) })
	r, err := Run(ctx, conn, Params{Key: key, Token: res.Token, Attempt: res.Attempt, LeaseSent: sent, Lease: time.Second,
		Command: []string{"touch", os.Getenv("IDMPCTL_TEST_RAN")}, Guard: g, Signals: make(chan os.Signal)})
	fmt.Printf("%d %v %d\n", exit.Code(err), r.Started, r.ExitCode)
	fmt.Println(err)
	os.Exit(0)
}

// A command that could start only after its lease would have to be
// stopped (the guard, or the acquire's reply, came too late) is not
// started: the claim is recorded FAILED and Run says 69. The dead man's
// switch, armed only once the command is about to start, must not kill
// idmpctl while it waits.
func TestLateStartDoesNotRun(t *testing.T) {
	srv := redistest.NewWith(t, redistest.Options{})
	ran := t.TempDir() + "/ran"
	cmd := exec.Command(os.Args[0], lateChild)
	cmd.Env = append(os.Environ(), "IDMPCTL_TEST_URL="+srv.URL, "IDMPCTL_TEST_KEY=job:late", "IDMPCTL_TEST_RAN="+ran)
	out, err := cmd.Output()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err != nil || ws.Signaled() {
		t.Fatalf("the runner ended with %v (%v): %s", err, ws, out)
	}
	lines := strings.SplitN(string(out), "\n", 2)
	if lines[0] != "69 false 69" {
		t.Errorf("Run: %q, want exit 69, not started", out)
	}
	if !strings.Contains(lines[1], "the command was not started: the claim was taken") || !strings.Contains(lines[1], "too late to run it within its lease (1s)") {
		t.Errorf("error: %s", lines[1])
	}
	if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran: %v", err)
	}
	if st, err := srv.Do("HGET", "job:late", "status"); err != nil || st != "FAILED" {
		t.Errorf("status %q (%v), want FAILED", st, err)
	}
}
