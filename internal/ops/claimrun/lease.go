package claimrun

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
)

// killGrace is the longest a stopped command gets between SIGTERM and
// SIGKILL (a short lease gives it less: see newSchedule).
var killGrace = 5 * time.Second

// schedule is when, for a lease, renewals are sent and a command whose
// renewals fail is stopped. The server sets lease_until from its clock when
// a renewal (or the acquire) reaches it, which is after it was sent: so the
// claim is surely live until the send time plus the lease. That instant,
// less a margin for the two clocks running at different rates and for the
// kill to take effect, is the deadline: the command is sent SIGTERM a grace
// before it and SIGKILL at it, dead before another worker can take the key.
type schedule struct {
	lease  time.Duration
	every  time.Duration // a renewal is sent this long after the last successful one
	retry  time.Duration // a failed renewal is tried again after this
	margin time.Duration // the deadline is this long before send + lease
	grace  time.Duration // SIGTERM is this long before the deadline
	bound  time.Duration // the longest one renewal may take (--timeout, plus the replicas' wait)
}

func newSchedule(lease, bound time.Duration) schedule {
	return schedule{
		lease:  lease,
		every:  lease / 3,
		retry:  max(min(lease/20, 500*time.Millisecond), 10*time.Millisecond),
		margin: lease/100 + 100*time.Millisecond,
		grace:  min(killGrace, lease/6),
		bound:  bound,
	}
}

// fits reports whether the first renewal, sent at a third of the lease and
// answered within bound, comes before the command would be stopped.
func (s schedule) fits() bool {
	return s.every+s.bound <= s.lease-s.margin-s.grace
}

// CheckLease refuses (64) a lease too short for a renewal to be sent and
// answered within bound (--timeout, plus --wait-timeout with
// --wait-replicas) before the command would have to be stopped.
func CheckLease(lease, bound time.Duration) error {
	s := newSchedule(lease, bound)
	if s.fits() {
		return nil
	}
	return &exit.Error{Code: exit.Usage,
		Err: fmt.Errorf("--lease %s is too short for --timeout %s: the first renewal is sent at a third of the lease (%s) and may take up to %s, "+
			"but the command must be sent SIGTERM at %s and SIGKILL at %s so that it has ended before the lease could lapse",
			lease, bound, ms(s.every), bound, ms(s.lease-s.margin-s.grace), ms(s.lease-s.margin)),
		Hint: fmt.Sprintf("give --lease %s or more, or a shorter --timeout", MinLease(bound))}
}

// ms rounds d to milliseconds, for messages.
func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// MinLease is the shortest lease, in whole milliseconds, CheckLease accepts
// with bound.
func MinLease(bound time.Duration) time.Duration {
	lo, hi := int64(0), int64(1000*time.Hour/time.Millisecond) // lo never fits, hi does
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if newSchedule(time.Duration(mid)*time.Millisecond, bound).fits() {
			hi = mid
		} else {
			lo = mid
		}
	}
	return time.Duration(hi) * time.Millisecond
}

// leaseClock holds when the last write that set the lease (the acquire,
// then each successful renewal) was sent.
type leaseClock struct {
	s    schedule
	mu   sync.Mutex
	sent time.Time
}

func (c *leaseClock) renewed(sent time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sent.After(c.sent) {
		c.sent = sent
	}
}

func (c *leaseClock) lastSent() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent
}

// deadline is the instant by which the command must have ended: the lease
// may lapse on the server soon after it.
func (c *leaseClock) deadline() time.Time {
	return c.lastSent().Add(c.s.lease - c.s.margin)
}

// deadmanAt is when idmpctl's dead man's switch kills it (and the guard the
// command) should idmpctl be stopped: a quarter of the margin after the
// deadline, which leaves the rest of it for the guard's kill.
func (c *leaseClock) deadmanAt() time.Time {
	return c.deadline().Add(c.s.margin / 4)
}

// termAt is when the command is sent SIGTERM unless a renewal succeeds.
func (c *leaseClock) termAt() time.Time {
	return c.deadline().Add(-c.s.grace)
}

// renew renews the claim from a third of the lease on, each renewal bounded
// by the time left before the command would be stopped. A lost claim is
// reported on lost; renewals that failed until the command must be stopped,
// on expire (with the last failure).
func (r *claimedRun) renew(ctx context.Context, stop <-chan struct{}, lost, expire chan<- error) {
	o, s := r.p, r.clock.s
	next := r.clock.lastSent().Add(s.every)
	var last error
	failing := time.Time{}
	for {
		wake := next
		if t := r.clock.termAt(); t.Before(wake) {
			wake = t
		}
		timer := time.NewTimer(time.Until(wake))
		select {
		case <-stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		sent := time.Now()
		left := r.clock.termAt().Sub(sent)
		if left <= 0 {
			if last == nil {
				last = fmt.Errorf("no renewal was answered in time")
			}
			if failing.IsZero() {
				failing = r.clock.lastSent()
			}
			expire <- &exit.Error{Code: exit.Lost, What: "claim run " + strconv.Quote(o.Key),
				Err: fmt.Errorf("renewals failed for %s (the last: %v): the command was stopped before its lease (%s) could lapse",
					time.Since(failing).Round(time.Millisecond), last, o.Lease)}
			return
		}
		cctx, cancel := context.WithTimeout(ctx, min(s.bound, left))
		_, err := claim.Renew(cctx, r.conn, o.Key, r.token, o.Lease, o.TTL, r.durably(nil))
		cancel()
		switch {
		case err == nil:
			r.clock.renewed(sent)
			r.setDeadman()
			r.renewals++
			next, last = sent.Add(s.every), nil
		case exit.Code(err) == exit.Lost:
			lost <- err
			return
		default:
			if last == nil {
				failing = sent
			}
			last, next = err, time.Now().Add(s.retry)
		}
	}
}
