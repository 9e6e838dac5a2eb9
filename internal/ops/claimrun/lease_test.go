package claimrun

import (
	"errors"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// The schedule stops the command before the lease could lapse, with the
// first renewal in between. CheckLease takes any lease from MinLease up,
// whatever --timeout: the leases the seeds use (5-10s) with the default 5s.
func TestSchedule(t *testing.T) {
	s := newSchedule(3*time.Second, time.Second)
	if s.every != time.Second || s.grace != 500*time.Millisecond || s.margin != 230*time.Millisecond {
		t.Errorf("3s lease, 1s timeout: %+v", s)
	}
	if d := newSchedule(5*time.Minute, 5*time.Second); d.grace != killGrace || d.lease-d.margin != 5*time.Minute-3200*time.Millisecond {
		t.Errorf("5m lease: %+v", d)
	}
	for _, lease := range []time.Duration{MinLease, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 5 * time.Minute} {
		if err := CheckLease(lease); err != nil {
			t.Errorf("--lease %s: %v", lease, err)
		}
		// The first renewal has time, before the SIGTERM, to be answered.
		s := newSchedule(lease, 5*time.Second)
		if room := s.lease - s.margin - s.grace - s.every; room < 280*time.Millisecond {
			t.Errorf("--lease %s: the first renewal has %s", lease, room)
		}
	}
	err := CheckLease(MinLease - time.Millisecond)
	var e *exit.Error
	if !errors.As(err, &e) || e.Code != exit.Usage || e.Hint != "give --lease 1s or more" ||
		err.Error() != "--lease 999ms is too short for claim run: its command must be stopped 376ms before the lease could lapse, and the first renewal, sent at 333ms, answered before that" {
		t.Fatalf("999ms lease: %v (%+v)", err, e)
	}
}

// Each renewal is bounded by the time left before the SIGTERM, with
// --timeout as its cap; the replicas' wait takes at most half of it and
// never 0 (WAIT's "for ever").
func TestRenewBound(t *testing.T) {
	s := newSchedule(2*time.Second, 5*time.Second)
	t0 := time.Now()
	if got := s.renewBound(t0, t0.Add(800*time.Millisecond)); got != 800*time.Millisecond {
		t.Errorf("800ms left, 5s timeout: %s", got)
	}
	if got := newSchedule(time.Minute, time.Second).renewBound(t0, t0.Add(30*time.Second)); got != time.Second {
		t.Errorf("30s left, 1s timeout: %s", got)
	}
	d := redisconn.Durability{Replicas: 1, Timeout: 2 * time.Second}
	for _, tc := range []struct{ left, want time.Duration }{
		{10 * time.Second, 2 * time.Second},
		{time.Second, 500 * time.Millisecond},
		{1500 * time.Microsecond, time.Millisecond},
		{time.Microsecond, time.Millisecond},
	} {
		if got := renewDurability(d, tc.left); got.Timeout != tc.want || got.Replicas != 1 {
			t.Errorf("%s left: %+v, want a wait of %s", tc.left, got, tc.want)
		}
	}
	if got := renewDurability(redisconn.Durability{}, time.Second); got.On() || got.Timeout != 0 {
		t.Errorf("no durability asked: %+v", got)
	}
}

// The lease clock only moves forward, and stops the command a grace
// before its deadline.
func TestLeaseClock(t *testing.T) {
	c := &leaseClock{s: newSchedule(3*time.Second, time.Second)}
	t0 := time.Now()
	c.renewed(t0)
	c.renewed(t0.Add(-time.Second)) // a late reply of an older renewal
	if got := c.deadline(); !got.Equal(t0.Add(3*time.Second - 230*time.Millisecond)) {
		t.Errorf("deadline %s after the send", got.Sub(t0))
	}
	if got := c.deadline().Sub(c.termAt()); got != 500*time.Millisecond {
		t.Errorf("SIGTERM %s before the deadline", got)
	}
	if got := c.deadmanAt().Sub(c.deadline()); got != 115*time.Millisecond {
		t.Errorf("the dead man's switch %s after the deadline, want half the margin", got)
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
