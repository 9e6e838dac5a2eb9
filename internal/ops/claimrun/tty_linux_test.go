package claimrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"golang.org/x/sys/unix"
)

// ttyChild is the argument that makes this test binary run runTTYChild.
const ttyChild = "__tty-child"

// runTTYChild is claim run on a terminal: it claims IDMPCTL_TEST_KEY on
// IDMPCTL_TEST_URL and runs sh -c IDMPCTL_TEST_SH with this process's stdio
// (a pseudo-terminal, its controlling one) and signals, then prints
// "result CODE STARTED ERROR" (a hint after). IDMPCTL_TEST_BACKGROUND=1 leaves the
// terminal's foreground first, as `idmpctl ... &` in a shell.
func runTTYChild() {
	if os.Getenv("IDMPCTL_TEST_BACKGROUND") == "1" {
		// The terminal's foreground goes to another group (a shell's,
		// which ran idmpctl with &).
		holder := exec.Command("sleep", "60")
		holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if holder.Start() != nil || unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, holder.Process.Pid) != nil {
			os.Exit(5)
		}
		defer func() { _ = holder.Process.Kill() }()
	}
	ctx := context.Background()
	conn, err := redisconn.Open(redisconn.ConnConfig{URL: os.Getenv("IDMPCTL_TEST_URL"), Timeout: 5 * time.Second})
	if err != nil {
		os.Exit(3)
	}
	key := os.Getenv("IDMPCTL_TEST_KEY")
	sent := time.Now()
	res, err := claim.Acquire(ctx, conn, claim.AcquireParams{Key: key, Owner: "tty", Lease: 2 * time.Second, TTL: time.Minute})
	if err != nil || !res.Acquired() {
		os.Exit(4)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	r, err := Run(ctx, conn, Params{Key: key, Token: res.Token, Attempt: res.Attempt, LeaseSent: sent, Lease: 2 * time.Second,
		Command: []string{"sh", "-c", os.Getenv("IDMPCTL_TEST_SH")}, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Guard: StartGuard(os.Stderr), Signals: sigs})
	fmt.Printf("\nresult %d %v %v\n", r.ExitCode, r.Started, err)
	if e := (*exit.Error)(nil); errors.As(err, &e) {
		fmt.Printf("hint: %s\n", e.Hint)
	}
}

// ptyPair opens a pseudo-terminal: its master, and its slave's path.
func ptyPair(t *testing.T) (*os.File, string) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	return m, fmt.Sprintf("/dev/pts/%d", n)
}

// ttyRun runs runTTYChild in a session of its own whose controlling
// terminal is a fresh pseudo-terminal; typed is written to the terminal
// once the terminal shows after. It returns what the terminal showed
// (bounded: 15s) and how the runner ended.
func ttyRun(t *testing.T, srv *redistest.Server, key, script, after, typed string, env ...string) string {
	t.Helper()
	m, slave := ptyPair(t)
	s, err := os.OpenFile(slave, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cmd := exec.Command(os.Args[0], ttyChild)
	cmd.Env = append(os.Environ(), append(env, "IDMPCTL_TEST_URL="+srv.URL, "IDMPCTL_TEST_KEY="+key, "IDMPCTL_TEST_SH="+script)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen bytes.Buffer
	)
	shown := func() string { mu.Lock(); defer mu.Unlock(); return seen.String() }
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			mu.Lock()
			seen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(15 * time.Second)
	kill := func(why string) {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("%s; the terminal showed:\n%s", why, shown())
	}
	for typed != "" && !strings.Contains(shown(), after) {
		if time.Now().After(deadline) {
			kill(fmt.Sprintf("%q never showed within 15s", after))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if typed != "" {
		if _, err := m.WriteString(typed); err != nil {
			t.Fatal(err)
		}
	}
	for !strings.Contains(shown(), "\nresult ") || !strings.HasSuffix(shown(), "\n") {
		if time.Now().After(deadline) {
			kill("the run did not end within 15s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the runner: %v; the terminal showed:\n%s", err, shown())
		}
	case <-time.After(5 * time.Second):
		kill("the runner printed its result but did not exit")
	}
	return strings.ReplaceAll(shown(), "\r\n", "\n")
}

// A command on idmpctl's terminal reads it, and Ctrl-C reaches it: its
// group holds the terminal's foreground while it runs (issue 30 item 8,
// finding 2: it was stopped by SIGTTIN and the run hung, renewing).
func TestTerminalCommand(t *testing.T) {
	srv := redistest.NewWith(t, redistest.Options{})
	t.Run("reads", func(t *testing.T) {
		out := ttyRun(t, srv, "tty:read", `echo ask; read a; echo "got $a"`, "ask", "hello\n")
		if !strings.Contains(out, "got hello\n") || !strings.Contains(out, "\nresult 0 true <nil>\n") {
			t.Errorf("the terminal showed:\n%s", out)
		}
		if st, err := srv.Do("HGET", "tty:read", "status"); err != nil || st != "COMPLETED" {
			t.Errorf("status %q (%v), want COMPLETED", st, err)
		}
	})
	t.Run("ctrl-c", func(t *testing.T) {
		out := ttyRun(t, srv, "tty:intr", `echo ask; read a; echo not-interrupted`, "ask", "\x03")
		if strings.Contains(out, "not-interrupted") || !strings.Contains(out, "\nresult 130 true <nil>\n") {
			t.Errorf("the terminal showed:\n%s", out)
		}
		if st, err := srv.Do("HGET", "tty:intr", "status"); err != nil || st != "FAILED" {
			t.Errorf("status %q (%v), want FAILED", st, err)
		}
	})
	// A child the command left reading the terminal, which idmpctl took
	// back, is stopped by SIGTTIN while it holds the command's stdout:
	// it is ended, and the run with it. Before: idmpctl waited for that
	// stdout for ever, renewing the claim, deaf to Ctrl-C and SIGTERM.
	t.Run("child left reading", func(t *testing.T) {
		out := ttyRun(t, srv, "tty:left", `(sleep 0.5; read b </dev/tty; echo "child got $b") & echo parent-done`, "", "")
		if strings.Contains(out, "child got") || !strings.Contains(out, "\nresult 0 true <nil>\n") {
			t.Errorf("the terminal showed:\n%s", out)
		}
	})
	// idmpctl in the background (`idmpctl claim run ... &` in a shell)
	// does not take the terminal from the shell: its command, stopped by
	// SIGTTIN, is ended with a clear error instead of holding its claim.
	t.Run("background", func(t *testing.T) {
		out := ttyRun(t, srv, "tty:bg", `read a; echo read`, "", "", "IDMPCTL_TEST_BACKGROUND=1")
		if strings.Contains(out, "\nread\n") || !strings.Contains(out, "\nresult 143 true") ||
			!strings.Contains(out, "the command was stopped (SIGTTIN") || !strings.Contains(out, "\nhint: FAILED recorded") {
			t.Errorf("the terminal showed:\n%s", out)
		}
		if st, err := srv.Do("HGET", "tty:bg", "status"); err != nil || st != "FAILED" {
			t.Errorf("status %q (%v), want FAILED", st, err)
		}
	})
}
