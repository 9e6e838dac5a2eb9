//go:build unix && !linux

package cmd

import "syscall"

// setDeathSignal: only Linux can tie the command's life to idmpctl's.
func setDeathSignal(*syscall.SysProcAttr) {}
