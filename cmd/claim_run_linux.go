package cmd

import "syscall"

// setDeathSignal stops the command when idmpctl dies (kill -9 included): no
// one renews its claim any more, so it must not run on unguarded.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
