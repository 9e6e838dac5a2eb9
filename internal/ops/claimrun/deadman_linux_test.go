package claimrun

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// deadmanChild is the argument that makes this test binary run
// runDeadmanChild: a process with a dead man's switch, for a test to stop.
const deadmanChild = "__deadman-child"

// runDeadmanChild sets a switch 300ms ahead ("disarm": and disarms it at
// once), says so on stdout, then lives 3s and exits 0.
func runDeadmanChild(mode string) {
	d, err := newDeadman()
	if err != nil {
		os.Exit(3)
	}
	if err := d.set(time.Now().Add(300 * time.Millisecond)); err != nil {
		os.Exit(4)
	}
	if mode == "disarm" {
		d.disarm()
	}
	_, _ = os.Stdout.WriteString("set\n")
	time.Sleep(3 * time.Second)
	os.Exit(0)
}

// A process stopped past its switch's instant is killed (SIGKILL acts on a
// stopped process); a disarmed switch kills nothing.
func TestDeadman(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		killed bool
	}{{"armed", true}, {"disarm", false}} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], deadmanChild, tc.mode)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var b [4]byte
			if _, err := out.Read(b[:]); err != nil {
				t.Fatalf("the child did not set its switch: %v", err)
			}
			if err := syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
			_ = cmd.Wait()
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			killed := ws.Signaled() && ws.Signal() == syscall.SIGKILL
			if killed != tc.killed {
				t.Errorf("ended with %v, want killed=%v", ws, tc.killed)
			}
		})
	}
}
