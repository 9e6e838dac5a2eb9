package claimrun

import (
	"fmt"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// A deadman is a POSIX timer (timer_create) that SIGKILLs idmpctl at the
// instant its command must have ended, unless a renewal moved it on. The
// guard acts only when idmpctl dies: a stopped idmpctl (SIGSTOP, Ctrl-Z, a
// debugger) renews and stops nothing, but SIGKILL still kills it, and the
// guard then kills the group. While idmpctl runs, its own stop comes first.
type deadman struct {
	mu    sync.Mutex
	id    int32
	armed bool
}

// The timer counts on CLOCK_BOOTTIME, which goes on while the machine is
// suspended, as the server's clock does.
const clockBoottime = 7

// sigevent is the kernel's struct sigevent (64 bytes): SIGEV_SIGNAL (0).
type sigevent struct {
	value  uintptr
	signo  int32
	notify int32
	_      [64 - unsafe.Sizeof(uintptr(0)) - 8]byte
}

// itimerspec is the kernel's struct itimerspec: no interval, one expiry.
type itimerspec struct {
	interval, value syscall.Timespec
}

// newDeadman creates the timer, disarmed.
func newDeadman() (*deadman, error) {
	ev := sigevent{signo: int32(syscall.SIGKILL)}
	var id int32
	if _, _, e := syscall.RawSyscall(syscall.SYS_TIMER_CREATE, clockBoottime,
		uintptr(unsafe.Pointer(&ev)), uintptr(unsafe.Pointer(&id))); e != 0 {
		return nil, fmt.Errorf("timer_create: %w", e)
	}
	return &deadman{id: id, armed: true}, nil
}

// set makes the timer kill idmpctl at at (at once when it is past).
func (d *deadman) set(at time.Time) error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.armed {
		return nil
	}
	return d.settime(max(time.Until(at), time.Nanosecond))
}

// disarm stops the timer for good: the command ended.
func (d *deadman) disarm() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.armed {
		return
	}
	_ = d.settime(0)
	_, _, _ = syscall.RawSyscall(syscall.SYS_TIMER_DELETE, uintptr(d.id), 0, 0)
	d.armed = false
}

func (d *deadman) settime(after time.Duration) error {
	spec := itimerspec{value: syscall.NsecToTimespec(int64(after))}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_TIMER_SETTIME, uintptr(d.id), 0,
		uintptr(unsafe.Pointer(&spec)), 0, 0, 0); e != 0 {
		return fmt.Errorf("timer_settime: %w", e)
	}
	return nil
}
