//go:build !linux

package cmd

import (
	"errors"
	"io"
	"os"
	"os/exec"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/spf13/cobra"
)

// execChild is the command started with os/exec, where there is no guard.
type execChild struct{ cmd *exec.Cmd }

// guard: only Linux guards the command against idmpctl's death.
type guard struct{}

func startGuard(io.Writer) *guard { return nil }

// whileStarting: with no guard to wait for, only a signal already there.
func (*guard) whileStarting(sigs <-chan os.Signal) (os.Signal, error) {
	select {
	case s := <-sigs:
		return s, nil
	default:
		return nil, nil
	}
}
func (*guard) release() {}

// newCmdGuard: no guard verb where there is no guard.
func newCmdGuard(*Factory) *cobra.Command { return nil }

func startChild(_ *guard, args, env []string, stdin io.Reader, stdout, stderr io.Writer) (child, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, stdin, stdout, stderr
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return execChild{cmd}, nil
}

func (c execChild) signal(s os.Signal) { signalChild(c.cmd, s) }

func (c execChild) wait() int {
	err := c.cmd.Wait()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if sig, ok := signaled(ee); ok {
			return 128 + sig
		}
		return ee.ExitCode()
	}
	return exit.Internal
}

func (execChild) ended() {}
