//go:build unix

package main

import "syscall"

var (
	stopSignal = syscall.SIGSTOP
	contSignal = syscall.SIGCONT
)
