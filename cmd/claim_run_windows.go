package cmd

import (
	"os"
	"os/exec"
	"syscall"
)

func childProcAttr() *syscall.SysProcAttr { return nil }

func commandFor(args []string) *exec.Cmd { return exec.Command(args[0], args[1:]...) }

// signalChild: Windows has no process groups to signal; interrupting a
// child is not supported, so stop it.
func signalChild(cmd *exec.Cmd, s os.Signal) {
	if s == os.Interrupt {
		_ = cmd.Process.Signal(s)
		return
	}
	_ = cmd.Process.Kill()
}

func signaled(*exec.ExitError) (int, bool) { return 0, false }
