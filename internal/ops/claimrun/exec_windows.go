package claimrun

import (
	"os"
	"os/exec"
	"syscall"
)

func childProcAttr() *syscall.SysProcAttr { return nil }

// signalChild: Windows has no process groups to signal; interrupting a
// child is not supported, so stop it.
func signalChild(cmd *exec.Cmd, s os.Signal) {
	if s == os.Interrupt {
		_ = cmd.Process.Signal(s)
		return
	}
	_ = cmd.Process.Kill()
}

// groupLeft: no process groups to ask.
func groupLeft(*exec.Cmd) bool { return false }
