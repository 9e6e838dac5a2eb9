package cmd

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets a test start this binary as idmpctl's own guard verb.
func TestMain(m *testing.M) {
	if os.Getenv("IDMPCTL_TEST_GUARD") == "1" {
		_ = runGuard(os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestGuard runs both guards (the /bin/sh script and the verb used where
// there is no /bin/sh) the way startChild does: the guard leads a process
// group with a pipe as its stdin, a sleep joins the group. Signals to the
// group leave the guard running; "done" lets it go and leaves the group
// alone; the pipe closing without "done" (idmpctl died) kills the group.
func TestGuard(t *testing.T) {
	guards := map[string]func() *exec.Cmd{
		"sh": func() *exec.Cmd { return exec.Command(guardShell, "-c", guardScript, "idmpctl-guard") },
		"verb": func() *exec.Cmd {
			c := exec.Command(os.Args[0])
			c.Env = append(os.Environ(), "IDMPCTL_TEST_GUARD=1")
			return c
		},
	}
	for name, guard := range guards {
		t.Run(name, func(t *testing.T) {
			start := func() (g, member *exec.Cmd, w *os.File) {
				t.Helper()
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				g = guard()
				g.Stdin, g.Stderr = r, os.Stderr
				g.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if err := g.Start(); err != nil {
					t.Fatal(err)
				}
				_ = r.Close()
				member = exec.Command("sleep", "30")
				member.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: g.Process.Pid}
				if err := member.Start(); err != nil {
					_ = w.Close()
					t.Fatal(err)
				}
				t.Cleanup(func() {
					_ = w.Close()
					_ = syscall.Kill(-g.Process.Pid, syscall.SIGKILL)
				})
				return g, member, w
			}
			signaledBy := func(err error) syscall.Signal {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
						return ws.Signal()
					}
				}
				return 0
			}
			waitBounded := func(c *exec.Cmd) error {
				t.Helper()
				done := make(chan error, 1)
				go func() { done <- c.Wait() }()
				select {
				case err := <-done:
					return err
				case <-time.After(10 * time.Second):
					_ = c.Process.Kill()
					t.Fatalf("%s still runs after 10s", strings.Join(c.Args, " "))
					return nil
				}
			}

			t.Run("idmpctl dies", func(t *testing.T) {
				g, member, w := start()
				if !awaitGuard(g.Process.Pid, 10*time.Second) {
					t.Fatal("the guard does not ignore SIGHUP, SIGINT and SIGTERM")
				}
				// A signal to the whole group while idmpctl lives: the
				// member has it, the guard stays.
				if err := syscall.Kill(-g.Process.Pid, syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				if s := signaledBy(waitBounded(member)); s != syscall.SIGTERM {
					t.Fatalf("the member did not end by SIGTERM (%v)", s)
				}
				member2 := exec.Command("sleep", "30")
				member2.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: g.Process.Pid}
				if err := member2.Start(); err != nil {
					t.Fatalf("the guard's group is gone after a SIGTERM to it: %v", err)
				}
				_ = w.Close() // what the kernel does when idmpctl dies
				if s := signaledBy(waitBounded(member2)); s != syscall.SIGKILL {
					t.Errorf("the member was not killed when the pipe closed (%v)", s)
				}
				if s := signaledBy(waitBounded(g)); s != syscall.SIGKILL {
					t.Errorf("the guard did not kill its own group (%v)", s)
				}
			})
			t.Run("done", func(t *testing.T) {
				g, member, w := start()
				if _, err := w.WriteString(guardDone); err != nil {
					t.Fatal(err)
				}
				_ = w.Close()
				if err := waitBounded(g); err != nil {
					t.Fatalf("the guard after done: %v", err)
				}
				if err := member.Process.Signal(syscall.Signal(0)); err != nil {
					t.Fatalf("done killed the group's member: %v", err)
				}
				_ = member.Process.Kill()
				_ = waitBounded(member)
			})
		})
	}
}
