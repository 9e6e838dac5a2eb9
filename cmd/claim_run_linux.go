package cmd

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/spf13/cobra"
)

// The guard ties the command's life to idmpctl's. It is a small /bin/sh that
// leads the command's process group and reads, as its stdin, a pipe whose
// write end only idmpctl holds. idmpctl writes "done" there once the command
// ended and was waited for. When idmpctl dies first (kill -9 included) the
// kernel closes the pipe, nobody renews the claim any more, and the guard,
// reading EOF without "done", kills the whole group: the command and
// everything it started. Signals sent to the group while idmpctl lives (the
// SIGINT and SIGTERM it forwards) are the command's to decide on: the guard
// ignores them.
//
// The command is idmpctl's own child, started straight into the guard's
// group: idmpctl waits for it and gets its status first hand, and the
// guard's start is off the command's path. A shell, not idmpctl itself:
// dash starts in a fraction of the time a Go binary of this size does, and
// claim run pays for the guard at every message. Processes are started with
// syscall.ForkExec rather than os/exec, whose first start on Linux forks a
// throwaway child to probe pidfd support (about 1 ms here, at every message).
const guardScript = `trap '' INT TERM HUP
IFS= read -r said || said=
[ "$said" = done ] || kill -KILL 0`

// guardShell is the shell that runs guardScript; where it is missing,
// idmpctl's own guard verb does the same.
const guardShell = "/bin/sh"

// guardDone is what idmpctl writes to the guard once the command ended.
const guardDone = "done\n"

// guardedChild is the command, started in the guard's process group.
type guardedChild struct {
	pid, group int
	ready      bool           // the guard ignores the signals forwarded to the group
	guard      *os.File       // the write end of the guard's stdin
	copies     sync.WaitGroup // stdio copiers the wait waits for
}

// startChild starts the guard, then the command in the guard's process
// group with env and the given stdio: *os.File passes as it is, any other
// reader or writer through a pipe.
func startChild(args, env []string, stdin io.Reader, stdout, stderr io.Writer) (child, error) {
	path, err := exec.LookPath(args[0])
	if err != nil {
		return nil, err
	}
	c := &guardedChild{}
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
	gr, gw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	closeAfter = append(closeAfter, gr)
	// The guard writes nothing; a shell's own complaint goes where the
	// command's stderr goes when that is a file, else nowhere.
	errFd := gr.Fd()
	if f, ok := stderr.(*os.File); ok {
		errFd = f.Fd()
	}
	gargv := []string{guardShell, "-c", guardScript, "idmpctl-guard"}
	if _, err := os.Stat(guardShell); err != nil {
		self, serr := os.Executable()
		if serr != nil {
			_ = gw.Close()
			return nil, serr
		}
		gargv = []string{self, guardCommand}
	}
	c.group, err = syscall.ForkExec(gargv[0], gargv, &syscall.ProcAttr{
		Files: []uintptr{gr.Fd(), errFd, errFd},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		_ = gw.Close()
		return nil, err
	}
	c.guard = gw
	c.pid, err = syscall.ForkExec(path, args, &syscall.ProcAttr{
		Env:   env,
		Files: fds,
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pgid: c.group},
	})
	if err != nil {
		c.ended() // the guard goes without killing anything
		return nil, &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	return c, nil
}

// signal sends s to the command's whole process group, once the guard
// ignores the signals it must survive (a SIGKILL ends the guard too).
func (c *guardedChild) signal(s os.Signal) {
	sig, ok := s.(syscall.Signal)
	if !ok {
		return
	}
	if sig != syscall.SIGKILL && !c.ready {
		c.ready = awaitGuard(c.group, time.Second)
	}
	_ = syscall.Kill(-c.group, sig)
}

// guardSignals is the SigIgn mask of SIGHUP, SIGINT and SIGTERM.
const guardSignals = 1<<(syscall.SIGHUP-1) | 1<<(syscall.SIGINT-1) | 1<<(syscall.SIGTERM-1)

// awaitGuard waits up to bound for the guard to ignore SIGHUP, SIGINT and
// SIGTERM (its first line), so that a signal forwarded right after the
// start does not end it and leave the command unguarded. It reports
// whether the guard is ready; a guard that is gone is not waited for.
func awaitGuard(pid int, bound time.Duration) bool {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(path)
		if err != nil || bytes.Contains(b, []byte("\nState:\tZ")) {
			return false
		}
		_, rest, _ := bytes.Cut(b, []byte("\nSigIgn:\t"))
		line, _, _ := bytes.Cut(rest, []byte("\n"))
		if mask, err := strconv.ParseUint(string(line), 16, 64); err == nil && mask&guardSignals == guardSignals {
			return true
		}
	}
	return false
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

// ended lets the guard go without killing the group. A guard already gone
// (killed with the group) makes the write fail: nothing to do then.
func (c *guardedChild) ended() {
	if c.guard != nil {
		_, _ = c.guard.WriteString(guardDone)
		_ = c.guard.Close()
		c.guard = nil
	}
}

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

// runGuard is guardScript for where there is no /bin/sh: it ignores the
// signals the command gets, reads until idmpctl says "done" or dies, and
// kills its process group in the second case.
func runGuard(in io.Reader) error {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	said, _ := io.ReadAll(io.LimitReader(in, int64(len(guardDone))))
	if !bytes.Equal(said, []byte(guardDone)) {
		_ = syscall.Kill(0, syscall.SIGKILL)
	}
	return nil
}
