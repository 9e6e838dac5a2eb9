//go:build !linux

package claimrun

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// execChild is the command started with os/exec, where there is no guard.
type execChild struct{ cmd *exec.Cmd }

// Guard: only Linux guards the command against idmpctl's death.
type Guard struct{}

// StartGuard starts nothing: there is no guard here.
func StartGuard(io.Writer) *Guard { return nil }

// whileStarting: with no guard to wait for, only a signal already there.
func (*Guard) whileStarting(sigs <-chan os.Signal) (os.Signal, error) {
	select {
	case s := <-sigs:
		return s, nil
	default:
		return nil, nil
	}
}

// Release: nothing to let go.
func (*Guard) Release() {}

// Reap: nothing to reap.
func (*Guard) Reap() {}

func startChild(_ *Guard, args, env []string, stdin io.Reader, stdout, stderr io.Writer) (child, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, stdin, stdout, stderr
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return execChild{cmd}, nil
}

func (c execChild) signal(s os.Signal) { signalChild(c.cmd, s) }

func (c execChild) stop(sig syscall.Signal) { signalChild(c.cmd, sig) }

// stoppedBy: os/exec's wait does not see a stop (WUNTRACED).
func (execChild) stoppedBy() string { return "" }

func (c execChild) anyLeft() bool { return groupLeft(c.cmd) }

func (c execChild) wait() int {
	err := c.cmd.Wait()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return exit.Internal
}

func (execChild) ended() {}
