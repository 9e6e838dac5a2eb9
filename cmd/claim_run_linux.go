package cmd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/spf13/cobra"
)

// The guard ties the command's life to idmpctl's. It is a small /bin/sh in
// a process group of its own that reads, as its stdin, a pipe whose write
// end only idmpctl holds: first the command's process group, once the
// command runs, then "done" once the command ended and was waited for. When
// idmpctl dies first (kill -9 included) the kernel closes the pipe, nobody
// renews the claim any more, and the guard, reading EOF without "done",
// kills the command's whole group: the command and everything it started.
// Signals to the command's group (the SIGINT and SIGTERM idmpctl forwards,
// or the command's own) never reach the guard; it ignores them anyway.
//
// The guard starts beside the acquire round trip, off the command's path;
// the command, once the claim is held, starts in a group of its own as
// idmpctl's child, with a parent-death SIGKILL for the microseconds between
// its start and idmpctl's write of its group to the guard. idmpctl waits for
// it and gets its status first hand. A shell, not idmpctl itself: dash
// starts in a fraction of the time a Go binary of this size does, and claim
// run pays for the guard at every message. Processes are started with
// syscall.ForkExec rather than os/exec, whose first start on Linux forks a
// throwaway child to probe pidfd support (about 1 ms here, at every message).
const guardScript = `trap '' INT TERM HUP
IFS= read -r group || exit 0
[ "$group" = done ] && exit 0
IFS= read -r said || said=
[ "$said" = done ] || kill -s KILL -- "-$group"`

// guardShell is the shell that runs guardScript; where it is missing,
// idmpctl's own guard verb does the same. A variable for the tests of that
// verb.
var guardShell = "/bin/sh"

// guardDone is what idmpctl writes to the guard once the command ended, or
// instead of a group when none was started.
const guardDone = "done\n"

// guard is the guard process, started beside the acquire (startGuard).
type guard struct {
	started chan struct{} // closed once pid, w and err are set
	pid     int
	w       *os.File // the write end of the guard's stdin
	err     error
}

// startGuard starts the guard in the background; stderr gets a shell's own
// complaint when it is a file.
func startGuard(stderr io.Writer) *guard {
	g := &guard{started: make(chan struct{})}
	errFile, _ := stderr.(*os.File)
	go func() {
		defer close(g.started)
		g.pid, g.w, g.err = forkGuard(errFile)
	}()
	return g
}

func forkGuard(stderr *os.File) (int, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, nil, err
	}
	defer r.Close()
	errFd := r.Fd() // nowhere: writes to a read end fail
	if stderr != nil {
		errFd = stderr.Fd()
	}
	argv := []string{guardShell, "-c", guardScript, "idmpctl-guard"}
	if _, err := os.Stat(guardShell); err != nil {
		self, err := os.Executable()
		if err != nil {
			_ = w.Close()
			return 0, nil, err
		}
		argv = []string{self, guardCommand}
	}
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Files: []uintptr{r.Fd(), errFd, errFd},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		_ = w.Close()
		return 0, nil, fmt.Errorf("%s: %w", argv[0], err)
	}
	return pid, w, nil
}

// watch gives the guard the command's process group to kill if idmpctl
// dies. A guard that is gone cannot take it: the command is killed then.
func (g *guard) watch(group int) error {
	if _, err := g.w.WriteString(strconv.Itoa(group) + "\n"); err != nil {
		_ = syscall.Kill(-group, syscall.SIGKILL)
		return fmt.Errorf("the guard (pid %d) is gone, the command was killed: %w", g.pid, err)
	}
	return nil
}

// release lets the guard go without killing anything: the command ended, or
// none was started. The guard stays a zombie until idmpctl exits.
func (g *guard) release() {
	<-g.started
	if g.w != nil {
		_, _ = g.w.WriteString(guardDone) // fails if the guard was killed: nothing to do then
		_ = g.w.Close()
		g.w = nil
	}
}

// guardedChild is the command, leading its own process group, guarded.
type guardedChild struct {
	pid    int // the command's pid: its process group's id
	g      *guard
	copies sync.WaitGroup // stdio copiers the wait waits for
}

// startChild starts the command in a process group of its own, watched by
// the guard, with env and the given stdio: *os.File passes as it is,
// any other reader or writer through a pipe (nil stdin: /dev/null). Like
// execvp (and the shell the guard used to be), a command found through "."
// in PATH runs, and an executable without "#!" runs under /bin/sh.
func startChild(g *guard, args, env []string, stdin io.Reader, stdout, stderr io.Writer) (child, error) {
	path, err := exec.LookPath(args[0])
	if err != nil && !errors.Is(err, exec.ErrDot) {
		return nil, err
	}
	if <-g.started; g.err != nil {
		return nil, fmt.Errorf("cannot start the guard: %w", g.err)
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
	attr := &syscall.ProcAttr{Env: dedupEnv(env), Files: fds,
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
	c.pid, err = syscall.ForkExec(path, args, attr)
	if err == syscall.ENOEXEC {
		c.pid, err = syscall.ForkExec("/bin/sh", append([]string{"/bin/sh", path}, args[1:]...), attr)
	}
	if err != nil {
		return nil, &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	if err := g.watch(c.pid); err != nil {
		c.wait()
		return nil, err
	}
	return c, nil
}

// dedupEnv keeps the last of several NAME=value entries of one name, as
// os/exec does: the command's getenv must see the value appended last (a
// claim run inside another has its own IDMPCTL_TOKEN).
func dedupEnv(env []string) []string {
	seen := make(map[string]bool, len(env))
	out := make([]string, len(env))
	n := len(env)
	for i := len(env) - 1; i >= 0; i-- {
		name, _, _ := strings.Cut(env[i], "=")
		if seen[name] {
			continue
		}
		seen[name] = true
		n--
		out[n] = env[i]
	}
	return out[n:]
}

// signal sends s to the command's whole process group.
func (c *guardedChild) signal(s os.Signal) {
	if sig, ok := s.(syscall.Signal); ok {
		_ = syscall.Kill(-c.pid, sig)
	}
}

// wait waits for the command and its output, and returns its exit code
// (128+n after signal n, as a shell says).
func (c *guardedChild) wait() int {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(c.pid, &ws, 0, nil)
		if err != syscall.EINTR {
			if err != nil {
				return exit.Internal
			}
			break
		}
	}
	c.copies.Wait()
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// ended lets the guard go without killing the group.
func (c *guardedChild) ended() { c.g.release() }

func init() {
	registerVerb(guardCommand, func(f *Factory) *cobra.Command {
		return &cobra.Command{
			Use:    guardCommand,
			Hidden: true,
			Args:   cobra.NoArgs,
			RunE:   func(*cobra.Command, []string) error { return runGuard(f.In) },
		}
	})
}

// runGuard is guardScript for where there is no /bin/sh.
func runGuard(in io.Reader) error {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	lines := bufio.NewScanner(in)
	if !lines.Scan() || lines.Text()+"\n" == guardDone {
		return nil
	}
	group, err := strconv.Atoi(lines.Text())
	if err != nil || group <= 1 {
		return exit.Usagef("%s: %q is not a process group", guardCommand, lines.Text())
	}
	if !lines.Scan() || lines.Text()+"\n" != guardDone {
		_ = syscall.Kill(-group, syscall.SIGKILL)
	}
	return nil
}
