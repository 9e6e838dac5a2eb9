//go:build unix && !linux

package cmd

import (
	"os/exec"
	"syscall"
)

// commandFor runs the command directly: only Linux can tie its life to
// idmpctl's (a parent-death signal).
func commandFor(args []string) *exec.Cmd { return exec.Command(args[0], args[1:]...) }

func setDeathSignal(*syscall.SysProcAttr) {}
