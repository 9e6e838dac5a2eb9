//go:build unix

package e2e

import "syscall"

var (
	stopSignal = syscall.SIGSTOP
	contSignal = syscall.SIGCONT
)
