//go:build unix && !linux

package claimrun

import (
	"os"
	"os/exec"
	"syscall"
)

// childProcAttr puts the command in its own process group, so signals and a
// stop reach everything it started. Only Linux guards the group against
// idmpctl's death (guard_linux.go).
func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalChild signals the command's whole process group.
func signalChild(cmd *exec.Cmd, s os.Signal) {
	if sig, ok := s.(syscall.Signal); ok {
		_ = syscall.Kill(-cmd.Process.Pid, sig)
		return
	}
	_ = cmd.Process.Signal(s)
}

// groupLeft reports whether the command's process group still has a
// member: what it started and left behind when it ended.
func groupLeft(cmd *exec.Cmd) bool { return syscall.Kill(-cmd.Process.Pid, 0) == nil }
