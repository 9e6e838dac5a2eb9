package cmd

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/spf13/cobra"
)

// guardScript is the guard: a small /bin/sh that leads the command's
// process group (idmpctl starts it with Setpgid) and gets a parent-death
// signal (Pdeathsig). When idmpctl dies (kill -9 included) nobody renews
// the claim any more, so the guard kills the whole group: the command and
// everything it started. A signal while idmpctl lives was sent to the whole
// group, the command included: the guard lets the command decide. The
// command keeps the guard's stdin (a background job would get /dev/null)
// and its exit status (128+n for a signal) is the guard's.
//
// A shell, not idmpctl itself: dash starts in a fraction of the time a Go
// binary of this size does, and claim run pays for the guard at every
// message.
const guardScript = `command -v "$1" >/dev/null 2>&1 || { printf 'idmpctl: claim run: %s: not found\n' "$1" >&2; exit 127; }
exec 3<&0
parent=$PPID
caught=
guard() {
  caught=1
  read -r _ _ _ now _ < /proc/$$/stat
  [ "$now" = "$parent" ] || kill -KILL 0
}
trap guard INT TERM HUP
"$@" 0<&3 3<&- &
child=$!
while :; do
  wait "$child" 2>/dev/null
  status=$?
  [ -n "$caught" ] || break
  caught=
  kill -0 "$child" 2>/dev/null || { wait "$child" 2>/dev/null; status=$?; break; }
done
exit "$status"`

// guardShell is the shell that runs guardScript.
const guardShell = "/bin/sh"

// commandFor runs the command under the guard; where /bin/sh is missing,
// under idmpctl's own guard verb, which does the same.
func commandFor(args []string) *exec.Cmd {
	if _, err := os.Stat(guardShell); err == nil {
		cmd := exec.Command(guardShell, append([]string{"-c", guardScript, "idmpctl-guard"}, args...)...)
		return cmd
	}
	self, err := os.Executable()
	if err != nil {
		return exec.Command(args[0], args[1:]...)
	}
	cmd := exec.Command(self, append([]string{guardCommand, "--"}, args...)...)
	cmd.Args[0] = "idmpctl"
	return cmd
}

// guardCommand is the hidden verb that leads the command's process group
// where there is no /bin/sh.
const guardCommand = "__claim-guard"

// setDeathSignal makes the kernel signal the guard when idmpctl dies.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGTERM }

func init() {
	registerVerb(guardCommand, func(f *Factory) *cobra.Command {
		return &cobra.Command{
			Use:                guardCommand + " -- COMMAND [ARGS...]",
			Hidden:             true,
			DisableFlagParsing: true,
			RunE: func(c *cobra.Command, args []string) error {
				// Flags are not parsed (they belong to the command), so the
				// command must follow "--"; anything else gets the help.
				if len(args) < 2 || args[0] != "--" {
					return c.Help()
				}
				return runGuard(f, args[1:])
			},
		}
	})
}

// runGuard runs the command in the guard's own process group and waits.
// A SIGINT/SIGTERM while idmpctl lives was sent to the whole group (the
// command has it too); once idmpctl is gone, the guard kills the group.
func runGuard(f *Factory, args []string) error {
	parent := os.Getppid()
	if parent == 1 {
		return exit.Status(exit.Lost) // idmpctl died before we started
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(f.Err, "idmpctl: claim run: %v\n", err)
		return exit.Status(startFailureCode(err))
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case <-sigs:
			if os.Getppid() != parent {
				_ = syscall.Kill(0, syscall.SIGKILL)
			}
		case err := <-done:
			if code := exitCodeOf(err); code != 0 {
				return exit.Status(code)
			}
			return nil
		}
	}
}
