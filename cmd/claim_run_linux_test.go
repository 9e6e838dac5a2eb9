package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets a test start this binary as idmpctl's own guard verb, the
// way startChild does where there is no /bin/sh.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == guardCommand {
		_ = runGuard(os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestGuard runs both guards (the /bin/sh script and the verb used where
// there is no /bin/sh) the way startChild does: the guard in a process group
// of its own with a pipe as its stdin, a sleep leading another group. The
// pipe closing after the group was given and before "done" (idmpctl died)
// kills that group; "done", or the pipe closing before any group, lets the
// guard go and kills nothing.
func TestGuard(t *testing.T) {
	guards := map[string]func() *exec.Cmd{
		"sh": func() *exec.Cmd { return exec.Command(guardShell, "-c", guardScript, "idmpctl-guard") },
		"verb": func() *exec.Cmd {
			c := exec.Command(os.Args[0], guardCommand)
			c.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
			return c
		},
	}
	waitBounded := func(t *testing.T, c *exec.Cmd) error {
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
	signaledBy := func(err error) syscall.Signal {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return ws.Signal()
			}
		}
		return 0
	}
	for name, guard := range guards {
		t.Run(name, func(t *testing.T) {
			start := func(t *testing.T) (g, member *exec.Cmd, w *os.File) {
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
				member.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if err := member.Start(); err != nil {
					_ = w.Close()
					t.Fatal(err)
				}
				t.Cleanup(func() {
					_ = w.Close()
					_ = syscall.Kill(-member.Process.Pid, syscall.SIGKILL)
				})
				return g, member, w
			}
			for _, c := range []struct {
				name, says string
				kills      bool
			}{
				{"idmpctl dies", "%d\n", true},
				{"done", "%d\n" + guardDone, false},
				{"dies before a command", "", false},
				{"no command", guardDone, false},
			} {
				t.Run(c.name, func(t *testing.T) {
					g, member, w := start(t)
					says := c.says
					if strings.Contains(says, "%d") {
						says = fmt.Sprintf(says, member.Process.Pid)
					}
					if _, err := w.WriteString(says); err != nil {
						t.Fatal(err)
					}
					_ = w.Close() // what the kernel does when idmpctl dies
					if err := waitBounded(t, g); err != nil {
						t.Errorf("the guard: %v", err)
					}
					if c.kills {
						if s := signaledBy(waitBounded(t, member)); s != syscall.SIGKILL {
							t.Errorf("the command's group was not killed (%v)", s)
						}
						return
					}
					if err := member.Process.Signal(syscall.Signal(0)); err != nil {
						t.Errorf("the guard killed the command: %v", err)
					}
				})
			}
		})
	}
}

// TestStartChild runs commands the way claim run does, under each guard:
// exit codes, output, the environment's last value winning, a command that
// idmpctl's death kills, execvp's ways (a script without "#!", "." in PATH).
func TestStartChild(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "noshebang")
	if err := os.WriteFile(script, []byte("echo no-shebang \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dotted"), []byte("#!/bin/sh\necho dotted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, shell := range []string{guardShell, filepath.Join(dir, "no-such-shell")} {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			saved := guardShell
			guardShell = shell
			t.Cleanup(func() { guardShell = saved })
			run := func(args []string, env ...string) (int, string) {
				t.Helper()
				g := startGuard(os.Stderr)
				defer g.release()
				var out bytes.Buffer
				ch, err := startChild(g, args, append([]string{"PATH=" + os.Getenv("PATH")}, env...), nil, &out, os.Stderr)
				if err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				code := ch.wait()
				ch.ended()
				return code, out.String()
			}
			if code, out := run([]string{"sh", "-c", `echo "$A"; exit 3`}, "A=first", "A=last"); code != 3 || out != "last\n" {
				t.Errorf("exit %d, printed %q: want 3 and the last A", code, out)
			}
			if code, _ := run([]string{"sh", "-c", "kill -TERM $$"}); code != 128+15 {
				t.Errorf("a command ended by SIGTERM: exit %d, want 143", code)
			}
			if code, out := run([]string{script, "arg"}); code != 0 || out != "no-shebang arg\n" {
				t.Errorf("a script without #!: exit %d, printed %q", code, out)
			}

			// idmpctl dies: the pipe closes without "done".
			g := startGuard(os.Stderr)
			ch, err := startChild(g, []string{"sleep", "30"}, nil, nil, os.Stdout, os.Stderr)
			if err != nil {
				t.Fatal(err)
			}
			_ = g.w.Close()
			if code := ch.wait(); code != 128+9 {
				t.Errorf("idmpctl's death: the command ended with %d, want 137 (SIGKILL)", code)
			}
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(g.pid, &ws, 0, nil); err != nil || !ws.Exited() || ws.ExitStatus() != 0 {
				t.Errorf("the guard: %v, %v; want exit 0 after killing the command's group", ws, err)
			}
		})
	}
	t.Run("dot in PATH", func(t *testing.T) {
		t.Chdir(dir)
		t.Setenv("PATH", ".:"+os.Getenv("PATH"))
		g := startGuard(os.Stderr)
		defer g.release()
		var out bytes.Buffer
		ch, err := startChild(g, []string{"dotted"}, nil, nil, &out, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		if code := ch.wait(); code != 0 || out.String() != "dotted\n" {
			t.Errorf("exit %d, printed %q", code, out.String())
		}
	})
}
