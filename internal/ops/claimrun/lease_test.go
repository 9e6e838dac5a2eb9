package claimrun

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// The schedule stops the command before the lease could lapse, with the
// first renewal in between; CheckLease refuses a lease that leaves no room
// for it, and MinLease is the shortest it accepts.
func TestSchedule(t *testing.T) {
	s := newSchedule(3*time.Second, time.Second)
	if s.every != time.Second || s.grace != 500*time.Millisecond || s.margin != 130*time.Millisecond || !s.fits() {
		t.Errorf("3s lease, 1s timeout: %+v", s)
	}
	if d := newSchedule(5*time.Minute, 5*time.Second); d.grace != killGrace || d.lease-d.margin != 5*time.Minute-3100*time.Millisecond {
		t.Errorf("5m lease: %+v", d)
	}
	if err := CheckLease(3*time.Second, time.Second); err != nil {
		t.Errorf("3s lease, 1s timeout: %v", err)
	}
	err := CheckLease(time.Second, 5*time.Second)
	var e *exit.Error
	if !errors.As(err, &e) || e.Code != exit.Usage || !strings.Contains(err.Error(), "--lease 1s is too short for --timeout 5s") {
		t.Fatalf("1s lease, 5s timeout: %v", err)
	}
	for _, bound := range []time.Duration{50 * time.Millisecond, time.Second, 5 * time.Second, time.Minute} {
		m := MinLease(bound)
		if CheckLease(m, bound) != nil || CheckLease(m-2*time.Millisecond, bound) == nil {
			t.Errorf("MinLease(%s) = %s is not the shortest lease CheckLease accepts", bound, m)
		}
		if !strings.Contains(CheckLease(m-2*time.Millisecond, bound).(*exit.Error).Hint, m.String()) {
			t.Errorf("the hint does not name %s", m)
		}
	}
}

// The lease clock only moves forward, and stops the command a grace
// before its deadline.
func TestLeaseClock(t *testing.T) {
	c := &leaseClock{s: newSchedule(3*time.Second, time.Second)}
	t0 := time.Now()
	c.renewed(t0)
	c.renewed(t0.Add(-time.Second)) // a late reply of an older renewal
	if got := c.deadline(); !got.Equal(t0.Add(3*time.Second - 130*time.Millisecond)) {
		t.Errorf("deadline %s after the send", got.Sub(t0))
	}
	if got := c.deadline().Sub(c.termAt()); got != 500*time.Millisecond {
		t.Errorf("SIGTERM %s before the deadline", got)
	}
}

// A reader that went away stops the streaming, not the capture, and never
// fails a write.
func TestStreamWriter(t *testing.T) {
	out := &failAfter{n: 1}
	w := &streamWriter{out: out, capture: &capWriter{max: 5}}
	for _, s := range []string{"ab", "cd", "ef"} {
		if n, err := w.Write([]byte(s)); n != 2 || err != nil {
			t.Fatalf("write %q: %d %v", s, n, err)
		}
	}
	if out.got != "ab" || w.broken == nil || string(w.capture.buf) != "abcde" || !w.capture.over {
		t.Errorf("streamed %q (broken %v), captured %q (over %v)", out.got, w.broken, w.capture.buf, w.capture.over)
	}
}

type failAfter struct {
	n   int
	got string
}

func (f *failAfter) Write(b []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("broken pipe")
	}
	f.n--
	f.got += string(b)
	return len(b), nil
}
