//go:build linux

package main

// Issue 16 item 1: the lease is enforced when renewals fail. Worker 1 runs
// claim run through a relay that is then frozen (a partition between it and
// Redis); worker 2, connected directly, waits for the key. Worker 1's command
// (and whatever it started, also outside its process group) must have ended
// before worker 2's starts.

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

func TestPartitionEnforcesTheLease(t *testing.T) {
	for _, tc := range []struct {
		name, script string
	}{
		// The command's pid (the process whose end counts) goes to "pid1".
		{"honours-TERM", `echo $$ > pid1; touch started1; exec sleep 30`},
		{"ignores-TERM", `trap '' TERM; echo $$ > pid1; touch started1; sleep 30; echo survived`},
		// A descendant that left the process group (setsid) and ignores TERM.
		{"setsid-descendant", `setsid sh -c 'trap "" TERM; echo $$ > pid1; exec sleep 30' & while [ ! -s pid1 ]; do sleep 0.01; done; touch started1; wait`},
		// The command honours TERM, but a process it started in its own
		// process group ignores it (and holds none of the command's
		// output): the command ends at the SIGTERM, its child must not
		// outlive the lease either.
		{"group-member-ignores-TERM", `sh -c 'trap "" TERM; echo $$ > pid1; exec sleep 30' >/dev/null 2>&1 & while [ ! -s pid1 ]; do sleep 0.01; done; touch started1; wait`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			overlap := partitionOverlap(t, tc.script, cutRelay)
			if overlap >= 0 {
				t.Errorf("worker 1's command ended %s after worker 2's started: the lease was not enforced", overlap)
			}
		})
	}
}

// An idmpctl stopped (SIGSTOP, or a Ctrl-Z's SIGTSTP) for longer than the
// lease renews nothing, and cannot stop its command either: the command,
// in a process group of its own, goes on running. The guard watches
// idmpctl's death, not its stop. Worker 1's command must still have ended
// before the lease could lapse and worker 2's command start.
func TestStoppedRunnerEnforcesTheLease(t *testing.T) {
	for _, tc := range []struct {
		name, script string
	}{
		{"honours-TERM", `echo $$ > pid1; touch started1; exec sleep 30`},
		{"ignores-TERM", `trap '' TERM; echo $$ > pid1; touch started1; sleep 30; echo survived`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			overlap := partitionOverlap(t, tc.script, cutStop)
			if overlap >= 0 {
				t.Errorf("worker 1's command ended %s after worker 2's started: the lease was not enforced", overlap)
			}
		})
	}
}

// How worker 1 is cut off from Redis: a frozen relay, or idmpctl itself
// stopped (SIGSTOP) with its connection intact.
type cut int

const (
	cutRelay cut = iota
	cutStop
)

// partitionOverlap cuts worker 1 off and returns how long worker 1's
// command (its process in pid1) still ran after worker 2's started: negative
// when it had ended before.
func partitionOverlap(t *testing.T, script string, how cut) time.Duration {
	srv := redistest.NewWith(t, redistest.Options{})
	relay := redistest.NewRelay(t, srv)
	c1 := clitest.New(t, "IDMPCTL_URL="+relay.URL)
	c2 := c1.With("IDMPCTL_URL=" + srv.URL)
	if how == cutStop {
		c1 = c2
	}
	const key = "job:partition"
	p1 := c1.Start("claim", "run", key, "--lease", "3s", "--timeout", "1s", "--", "sh", "-c", script)
	started := filepath.Join(c1.Dir, "started1")
	if !faultWaitFor(20*time.Second, func() bool { return faultExists(started) || p1.Exited() }) || p1.Exited() {
		t.Fatalf("worker 1's command did not start: %s", p1.Status())
	}
	pid1 := faultReadPid(t, filepath.Join(c1.Dir, "pid1"))
	t.Cleanup(func() { _ = syscallKill(pid1) })
	var ended atomic.Int64 // unix ns when pid1 was seen gone
	go func() {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if faultProcessGone(pid1) {
				ended.Store(time.Now().UnixNano())
				return
			}
		}
	}()

	time.Sleep(time.Second)
	switch how {
	case cutRelay:
		relay.Freeze()
		t.Cleanup(relay.Thaw)
	case cutStop:
		if err := syscall.Kill(p1.Pid(), syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(p1.Pid(), syscall.SIGCONT) })
	}
	frozen := time.Now()
	p2 := c2.Start("claim", "run", key, "--lease", "3s", "--timeout", "1s", "--wait", "20s", "--",
		"sh", "-c", `date +%s%N > start2.tmp; mv start2.tmp start2; sleep 0.2`)
	r2 := p2.Wait(time.Minute)
	if r2.Code != 0 {
		t.Fatalf("worker 2: %s", r2)
	}
	b, err := os.ReadFile(filepath.Join(c1.Dir, "start2"))
	if err != nil {
		t.Fatalf("worker 2's command did not record its start: %v", err)
	}
	start2, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if !faultWaitFor(time.Minute, func() bool { return ended.Load() != 0 }) {
		t.Fatalf("worker 1's command (pid %d) still runs", pid1)
	}
	overlap := time.Duration(ended.Load() - start2)
	if how == cutStop {
		_ = syscall.Kill(p1.Pid(), syscall.SIGCONT)
	}
	r1 := p1.Wait(time.Minute)
	t.Logf("overlap %+dms (worker 1's command ended %s after the freeze, worker 2's started %s after it); worker 1: exit %d; stderr: %s",
		overlap.Milliseconds(), time.Duration(ended.Load()-frozen.UnixNano()).Round(time.Millisecond),
		time.Duration(start2-frozen.UnixNano()).Round(time.Millisecond), r1.Code, strings.ReplaceAll(strings.TrimSpace(r1.Stderr), "\n", " | "))
	switch {
	case how == cutRelay && r1.Code != 76:
		t.Errorf("worker 1: exit %d, want 76 (its claim may be lost): %s", r1.Code, r1)
	case how == cutStop && r1.Code == 0:
		t.Errorf("worker 1: exit 0 for a command that was stopped: %s", r1)
	}
	if strings.Contains(r1.Stdout, "survived") {
		t.Error("worker 1's command finished its work")
	}
	return overlap
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
