package claimrun

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"golang.org/x/sys/unix"
)

// The guard ties the command's life to idmpctl's: a small /bin/sh leading
// the command's process group, reading a pipe whose write end only idmpctl
// holds. idmpctl writes "done" once the command ended; when idmpctl dies
// first (kill -9 too) the guard reads EOF and kills the whole group.
//
// Signals to the group are the command's to decide on: the guard ignores
// them and says so with a line, after which the command starts into the
// group. It lives until "done", so the group's id is not reused while
// idmpctl may signal it. A shell, not idmpctl: dash starts in a fraction of
// a Go binary's time, paid at every message; syscall.ForkExec, not os/exec,
// whose first start probes pidfd with a throwaway child (about 1 ms).
const guardScript = `trap '' ` + guardTrapped + `
echo 2>/dev/null
IFS= read -r said || said=
[ "$said" = done ] || kill -s KILL 0`

// guardTrapped are the signals the guard ignores, by number: every one it
// can catch whose default would end or stop it (not 9, 17 CHLD, 18 CONT,
// 19 STOP, 23 URG, 28 WINCH, 32 and 33, which the C library keeps).
const guardTrapped = "1 2 3 4 5 6 7 8 10 11 12 13 14 15 16 20 21 22 24 25 26 27 29 30 31 " +
	"34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64"

// guardSignals are the signals the guard verb (a Go program) ignores: the
// asynchronous ones of guardTrapped (Go turns faults into panics itself).
var guardSignals = func() []os.Signal {
	var sigs []os.Signal
	for _, f := range strings.Fields(guardTrapped) {
		n, _ := strconv.Atoi(f)
		switch syscall.Signal(n) {
		case syscall.SIGILL, syscall.SIGTRAP, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGSYS, syscall.SIGPROF:
			continue
		}
		sigs = append(sigs, syscall.Signal(n))
	}
	return sigs
}()

// guardReadyBound is how long a command waits for its guard to get ready.
const guardReadyBound = 10 * time.Second

// guardShell runs guardScript; where it is missing, idmpctl's guard verb
// does the same (a variable for its tests).
var guardShell = "/bin/sh"

// guardDone is what idmpctl writes once the command ended, or none started.
const guardDone = "done\n"

// Guard is the guard process, started early (StartGuard).
type Guard struct {
	started  chan struct{} // closed once pid, w and err are set
	pid      int           // the guard's pid: its process group's id
	w        *os.File      // the write end of the guard's stdin
	err      error
	ready    chan struct{} // closed once readyErr is set: the guard's line came, or not
	readyErr error
}

// StartGuard starts the guard and a reader of its ready line in the
// background, early, so that the line is usually there once the claim is
// held; stderr gets a shell's own complaint when it is a file.
func StartGuard(stderr io.Writer) *Guard {
	g := &Guard{started: make(chan struct{}), ready: make(chan struct{})}
	errFile, _ := stderr.(*os.File)
	go func() {
		var readyR *os.File
		g.pid, g.w, readyR, g.err = forkGuard(errFile)
		close(g.started)
		defer close(g.ready)
		if g.err != nil {
			g.readyErr = fmt.Errorf("cannot start the guard: %w", g.err)
			return
		}
		_ = readyR.SetReadDeadline(time.Now().Add(guardReadyBound))
		var b [1]byte
		if _, err := io.ReadFull(readyR, b[:]); err != nil {
			g.readyErr = fmt.Errorf("the guard (pid %d) did not get ready: %w", g.pid, err)
		}
		_ = readyR.Close()
	}()
	return g
}

func forkGuard(stderr *os.File) (pid int, w, readyR *os.File, err error) {
	in, w, err := os.Pipe()
	if err != nil {
		return 0, nil, nil, err
	}
	defer in.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		_ = w.Close()
		return 0, nil, nil, err
	}
	defer readyW.Close()
	errFd := in.Fd() // nowhere: writes to a read end fail
	if stderr != nil {
		errFd = stderr.Fd()
	}
	argv := []string{guardShell, "-c", guardScript, "idmpctl-guard"}
	if _, serr := os.Stat(guardShell); serr != nil {
		self, err := os.Executable()
		if err != nil {
			_, _ = w.Close(), readyR.Close()
			return 0, nil, nil, err
		}
		argv = []string{self, GuardCommand}
	}
	pid, err = syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Files: []uintptr{in.Fd(), readyW.Fd(), errFd},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		_, _ = w.Close(), readyR.Close()
		return 0, nil, nil, fmt.Errorf("%s: %w", argv[0], err)
	}
	return pid, w, readyR, nil
}

// whileStarting waits for the guard's ready line, or for one of sigs,
// which it returns: the command must not start then.
func (g *Guard) whileStarting(sigs <-chan os.Signal) (os.Signal, error) {
	select {
	case s := <-sigs:
		return s, nil
	case <-g.ready:
		return nil, g.readyErr
	}
}

// Release lets the guard go without killing anything (it stays a zombie
// until idmpctl exits, or Reap).
func (g *Guard) Release() {
	if g == nil {
		return
	}
	<-g.started
	if g.w != nil {
		_, _ = g.w.WriteString(guardDone) // fails if the guard was killed: nothing to do then
		_ = g.w.Close()
		g.w = nil
	}
}

// Reap waits for a guard let go (Release) to exit: a consumer that runs
// for days starts one an entry, which would stay zombies until it exits.
func (g *Guard) Reap() {
	if g != nil && g.err == nil {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(g.pid, &ws, 0, nil)
	}
}

// guardedChild is the command, in the guard's process group.
type guardedChild struct {
	pid     int
	g       *Guard
	copies  sync.WaitGroup // stdio copiers the wait waits for
	tty     *os.File       // the terminal whose foreground it holds, till it ends
	stopped syscall.Signal // what stopped it, if anything did
}

// startChild starts the command in the guard's process group: an *os.File
// passes as it is, other stdio through a pipe (nil stdin: /dev/null). As
// with execvp, "." in PATH counts and a file without "#!" runs under /bin/sh.
func startChild(g *Guard, args, env []string, stdin io.Reader, stdout, stderr io.Writer) (child, error) {
	path, err := exec.LookPath(args[0])
	if err != nil && !errors.Is(err, exec.ErrDot) {
		return nil, err
	}
	if _, err := g.whileStarting(nil); err != nil {
		return nil, err
	}
	if stdin == nil {
		devnull, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		defer devnull.Close()
		stdin = devnull
	}
	c := &guardedChild{g: g}
	var closeAfter []*os.File
	defer func() {
		for _, f := range closeAfter {
			_ = f.Close()
		}
	}()
	fds := make([]uintptr, 3)
	for i, s := range []any{stdin, stdout, stderr} {
		if f, ok := s.(*os.File); ok {
			fds[i] = f.Fd()
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		if i == 0 {
			fds[i] = r.Fd()
			closeAfter = append(closeAfter, r)
			go func() { _, _ = io.Copy(w, stdin); _ = w.Close() }()
			continue
		}
		fds[i] = w.Fd()
		closeAfter = append(closeAfter, w)
		c.copies.Add(1)
		go func(dst io.Writer) {
			defer c.copies.Done()
			_, _ = io.Copy(dst, r)
			_ = r.Close()
		}(s.(io.Writer))
	}
	becomeSubreaper()
	sys := &syscall.SysProcAttr{Setpgid: true, Pgid: g.pid}
	if tty, ok := stdin.(*os.File); ok && inForeground(tty) {
		// As a shell gives its job the terminal: the command can read it,
		// and Ctrl-C reaches it (a read from a background group is
		// stopped by SIGTTIN).
		sys.Foreground, sys.Ctty, c.tty = true, int(tty.Fd()), tty
	}
	attr := &syscall.ProcAttr{Env: dedupEnv(env), Files: fds, Sys: sys}
	c.pid, err = syscall.ForkExec(path, args, attr)
	if err == syscall.ENOEXEC {
		c.pid, err = syscall.ForkExec("/bin/sh", append([]string{"/bin/sh", path}, args[1:]...), attr)
	}
	if c.tty != nil {
		// idmpctl is in the background now: its writes (the command's
		// stdout) and its taking the terminal back must not stop it
		// (stty tostop). Not before the fork: the command would inherit it.
		signal.Ignore(syscall.SIGTTOU)
	}
	if err != nil {
		c.takeTerminal()
		return nil, &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	return c, nil
}

// inForeground reports whether f is idmpctl's controlling terminal with
// idmpctl's process group in its foreground.
func inForeground(f *os.File) bool {
	pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == syscall.Getpgrp()
}

// takeTerminal gives the terminal's foreground back to idmpctl's group.
func (c *guardedChild) takeTerminal() {
	if c.tty != nil {
		_ = unix.IoctlSetPointerInt(int(c.tty.Fd()), unix.TIOCSPGRP, syscall.Getpgrp())
		signal.Reset(syscall.SIGTTOU)
		c.tty = nil
	}
}

// dedupEnv keeps the last NAME=value of each name, as os/exec does (a claim
// run inside another has its own IDMPCTL_TOKEN).
func dedupEnv(env []string) []string {
	seen := make(map[string]bool, len(env))
	var out []string
	for _, kv := range slices.Backward(env) {
		if name, _, _ := strings.Cut(kv, "="); !seen[name] {
			seen[name] = true
			out = append(out, kv)
		}
	}
	slices.Reverse(out)
	return out
}

// signal: the guard ignores s; a SIGKILL ends it too.
func (c *guardedChild) signal(s os.Signal) {
	if sig, ok := s.(syscall.Signal); ok {
		_ = syscall.Kill(-c.g.pid, sig)
	}
}

func (c *guardedChild) wait() int {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(c.pid, &ws, syscall.WUNTRACED, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			c.takeTerminal()
			return exit.Internal
		}
		if !ws.Stopped() {
			break
		}
		// Stopped (SIGTTIN, a Ctrl-Z), it would hold its claim, renewed,
		// for ever: it is ended, SIGTERM and SIGCONT to act on it, then
		// SIGKILL should it stop again.
		sig := syscall.SIGKILL
		if c.stopped == 0 {
			c.stopped, sig = ws.StopSignal(), syscall.SIGTERM
		}
		c.signal(sig)
		c.signal(syscall.SIGCONT)
	}
	c.takeTerminal()
	c.waitCopies()
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// waitCopies waits for the command's stdout and stderr to close, which
// what it left running may hold: one of those stopped (SIGTTIN: it read the
// terminal idmpctl took back) would hold them, and the claim, for ever, so
// all are ended as a stopped command is.
func (c *guardedChild) waitCopies() {
	done := make(chan struct{})
	go func() { c.copies.Wait(); close(done) }()
	sig := syscall.SIGTERM
	for {
		select {
		case <-done:
			return
		case <-time.After(100 * time.Millisecond):
		}
		for _, p := range descendants(c.g.pid, true) {
			if p.stopped {
				c.stop(sig)
				c.stop(syscall.SIGCONT)
				sig = syscall.SIGKILL
				break
			}
		}
	}
}

func (c *guardedChild) stop(sig syscall.Signal) {
	_ = syscall.Kill(-c.g.pid, sig)
	signalEscaped(c.g.pid, sig)
}

func (c *guardedChild) stoppedBy() string {
	if c.stopped == 0 {
		return ""
	}
	return unix.SignalName(c.stopped)
}

func (c *guardedChild) anyLeft() bool { return len(descendants(c.g.pid, true)) > 0 }

func (c *guardedChild) ended() { c.g.Release() }

// RunGuard is guardScript where there is no /bin/sh.
func RunGuard(in io.Reader, out io.Writer) error {
	signal.Ignore(guardSignals...)
	_, _ = io.WriteString(out, "\n")
	said, _ := io.ReadAll(io.LimitReader(in, int64(len(guardDone))))
	if string(said) != guardDone {
		_ = syscall.Kill(0, syscall.SIGKILL)
	}
	return nil
}
