package claimrun

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets a test start this binary as idmpctl's own guard verb, the
// way startGuard does where there is no /bin/sh.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == GuardCommand {
		_ = RunGuard(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	if len(os.Args) == 2 && os.Args[1] == lateChild {
		runLateChild()
	}
	if len(os.Args) == 2 && os.Args[1] == ttyChild {
		runTTYChild()
		os.Exit(0)
	}
	if len(os.Args) == 3 && os.Args[1] == deadmanChild {
		runDeadmanChild(os.Args[2])
	}
	os.Exit(m.Run())
}

// sigIgn is the SigIgn mask of pid.
func (c *guardedChild) escapedLeft() bool { return len(descendants(c.g.pid, false)) > 0 }

func sigIgn(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := bytes.Cut(b, []byte("\nSigIgn:\t"))
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	mask, err := strconv.ParseUint(string(line), 16, 64)
	if err != nil {
		t.Fatalf("SigIgn of %d: %q", pid, line)
	}
	return mask
}

func maskOf(sigs ...syscall.Signal) uint64 {
	var m uint64
	for _, s := range sigs {
		m |= 1 << (s - 1)
	}
	return m
}

// reap waits (bounded) for pid, a child of this process, and returns how it
// ended.
func reap(t *testing.T, pid int) syscall.WaitStatus {
	t.Helper()
	var ws syscall.WaitStatus
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if err != nil {
			t.Fatalf("wait4 %d: %v", pid, err)
		}
		if got == pid {
			return ws
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("process %d still runs after 10s", pid)
	return ws
}

// TestStartChild runs commands the way claim run does, under each guard
// (the /bin/sh script, and idmpctl's own verb where there is no /bin/sh):
// exit codes, output, the environment's last value winning, execvp's ways
// (a script without "#!", "." in PATH), signals to the group that leave the
// guard alone, idmpctl's death killing the group, "done" killing nothing.
func TestStartChild(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "noshebang")
	if err := os.WriteFile(script, []byte("echo no-shebang \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dotted"), []byte("#!/bin/sh\necho dotted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var all []syscall.Signal
	for _, s := range guardSignals {
		all = append(all, s.(syscall.Signal))
	}
	allSigs := maskOf(all...)
	for _, shell := range []string{guardShell, filepath.Join(dir, "no-such-shell")} {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			saved := guardShell
			guardShell = shell
			t.Cleanup(func() { guardShell = saved })
			start := func(args []string, out *bytes.Buffer, env ...string) (*Guard, child) {
				t.Helper()
				g := StartGuard(os.Stderr)
				ch, err := startChild(g, args, append([]string{"PATH=" + os.Getenv("PATH"), "GORACE=atexit_sleep_ms=0"}, env...), nil, out, os.Stderr)
				if err != nil {
					g.Release()
					t.Fatalf("%v: %v", args, err)
				}
				return g, ch
			}
			run := func(args []string, env ...string) (int, string) {
				t.Helper()
				var out bytes.Buffer
				g, ch := start(args, &out, env...)
				code := ch.wait()
				ch.ended()
				if ws := reap(t, g.pid); !ws.Exited() || ws.ExitStatus() != 0 {
					t.Errorf("the guard after done: %v, want exit 0", ws)
				}
				return code, out.String()
			}
			if code, out := run([]string{"sh", "-c", `echo "$A"; exit 3`}, "A=first", "A=last"); code != 3 || out != "last\n" {
				t.Errorf("exit %d, printed %q: want 3 and the last A", code, out)
			}
			if code, out := run([]string{script, "arg"}); code != 0 || out != "no-shebang arg\n" {
				t.Errorf("a script without #!: exit %d, printed %q", code, out)
			}
			// The command does not inherit the guard's ignored signals.
			if code, out := run([]string{"grep", "^SigIgn:", "/proc/self/status"}); code != 0 || strings.TrimSpace(out) == "" {
				t.Errorf("grep SigIgn: exit %d, %q", code, out)
			} else if m, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(out, "SigIgn:")), 16, 64); m&allSigs != 0 {
				t.Errorf("the command ignores %x: it inherited the guard's ignored signals", m&allSigs)
			}
			// Nor does idmpctl keep them ignored.
			if m := sigIgn(t, os.Getpid()); m&allSigs != 0 {
				t.Errorf("idmpctl still ignores %x after the guard started", m&allSigs)
			}
			// The command signals its own group at once: it ends by it, the
			// guard does not.
			if code, _ := run([]string{"sh", "-c", "kill -TERM 0; kill -INT 0; kill -HUP 0; sleep 5"}); code != 128+int(syscall.SIGTERM) {
				t.Errorf("a command that signals its group: exit %d, want 143", code)
			}

			// idmpctl dies: the pipe closes without "done"; the command and
			// its child die with the group, the guard too.
			bgFile := filepath.Join(t.TempDir(), "bg")
			var out bytes.Buffer
			g, ch := start([]string{"sh", "-c", `sleep 30 & echo $! > "$0"; wait`, bgFile}, &out)
			var bg int
			for deadline := time.Now().Add(10 * time.Second); bg == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				b, _ := os.ReadFile(bgFile)
				if strings.HasSuffix(string(b), "\n") {
					bg, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				}
			}
			_ = g.w.Close()
			if code := ch.wait(); code != 128+int(syscall.SIGKILL) {
				t.Errorf("idmpctl's death: the command ended with %d, want 137 (SIGKILL)", code)
			}
			if ws := reap(t, g.pid); ws.Signal() != syscall.SIGKILL {
				t.Errorf("the guard: %v; want killed with its group", ws)
			}
			if bg == 0 {
				t.Fatal("the command's child never printed its pid")
			}
			if !gone(bg, 10*time.Second) {
				_ = syscall.Kill(bg, syscall.SIGKILL)
				t.Errorf("the command's child %d outlived idmpctl's death", bg)
			}

			// No command started: the guard goes.
			g = StartGuard(os.Stderr)
			<-g.started
			g.Release()
			if ws := reap(t, g.pid); !ws.Exited() || ws.ExitStatus() != 0 {
				t.Errorf("a guard let go before any command: %v, want exit 0", ws)
			}
		})
	}
	t.Run("dot in PATH", func(t *testing.T) {
		t.Chdir(dir)
		t.Setenv("PATH", ".:"+os.Getenv("PATH"))
		g := StartGuard(os.Stderr)
		defer g.Release()
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

// gone waits up to bound for pid to have ended (a zombie counts: it runs
// nothing, and whoever inherited it reaps it when it will).
func gone(pid int, bound time.Duration) bool {
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X') {
			return true
		}
	}
	return false
}

// TestGuardWhileStarting: a signal while the guard is not yet ready is
// returned (the command must not start); the ready line ends the wait.
func TestGuardWhileStarting(t *testing.T) {
	g := &Guard{started: make(chan struct{}), ready: make(chan struct{})}
	close(g.started)
	sigs := make(chan os.Signal, 1)
	sigs <- syscall.SIGINT
	if s, err := g.whileStarting(sigs); s != syscall.SIGINT || err != nil {
		t.Errorf("a signal before the guard is ready: %v, %v", s, err)
	}
	close(g.ready)
	if s, err := g.whileStarting(sigs); s != nil || err != nil {
		t.Errorf("a ready guard: %v, %v", s, err)
	}
}

// stop reaches what the command started outside its process group: a
// setsid descendant is orphaned to idmpctl (a subreaper) and found there.
func TestStopReachesSetsidDescendants(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "escaped")
	g := StartGuard(os.Stderr)
	defer g.Release()
	var out bytes.Buffer
	ch, err := startChild(g, []string{"sh", "-c", `setsid sh -c 'trap "" TERM; echo $$ > "$0"; exec sleep 30' "$0" & wait`, pidFile},
		[]string{"PATH=" + os.Getenv("PATH")}, nil, &out, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		if strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	if pid == 0 {
		t.Fatal("the setsid descendant never started")
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !ch.(*guardedChild).escapedLeft() {
		t.Fatal("the setsid descendant is not seen as outside the group")
	}
	waited := make(chan int, 1)
	go func() { waited <- ch.wait() }()
	r := &claimedRun{}
	r.stop(ch, waited, time.Now().Add(300*time.Millisecond))
	if !gone(pid, 5*time.Second) {
		t.Errorf("the setsid descendant %d survived the stop", pid)
	}
	if ch.(*guardedChild).escapedLeft() {
		t.Error("escaped descendants left after the stop")
	}
}
