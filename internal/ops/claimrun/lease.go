package claimrun

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// killGrace is the longest a stopped command gets between SIGTERM and
// SIGKILL (a short lease gives it less: see newSchedule).
var killGrace = 5 * time.Second

// schedule is when, for a lease, renewals are sent and a command whose
// renewals fail is stopped. The server sets lease_until when a renewal
// reaches it, after it was sent: the claim is surely live until send +
// lease. Less a margin (clock rates, the kill's latency) that is the
// deadline: SIGTERM a grace before it, SIGKILL at it.
type schedule struct {
	lease  time.Duration
	every  time.Duration // a renewal is sent this long after the last successful one
	retry  time.Duration // a failed renewal is tried again after this
	margin time.Duration // the deadline is this long before send + lease
	grace  time.Duration // SIGTERM is this long before the deadline
	bound  time.Duration // the longest one renewal may take (--timeout, plus the replicas' wait)
}

// marginFixed is the part of the margin that does not grow with the lease:
// room for two kills that each must come in time on a loaded machine (see
// deadmanAt). 100ms was too little: with 1s-5s leases on two busy cores,
// idmpctl's own kill at the deadline came 60-140ms late at times, and the
// guard's, after the dead man's switch, up to 55ms.
const marginFixed = 200 * time.Millisecond

func newSchedule(lease, bound time.Duration) schedule {
	return schedule{
		lease:  lease,
		every:  lease / 3,
		retry:  max(min(lease/20, 500*time.Millisecond), 10*time.Millisecond),
		margin: lease/100 + marginFixed,
		grace:  min(killGrace, lease/6),
		bound:  bound,
	}
}

// MinLease is the shortest lease claim run takes: the first renewal, sent
// at a third of the lease, must be answered before the stop, a margin
// (lease/100 + 200ms) and a grace (lease/6) before the lease could lapse;
// at 1s that leaves it 290ms.
const MinLease = time.Second

// CheckLease refuses (64) a lease shorter than MinLease. --timeout plays no
// part: a renewal is bounded by the time left before the stop (renew).
func CheckLease(lease time.Duration) error {
	if lease >= MinLease {
		return nil
	}
	s := newSchedule(lease, 0)
	return &exit.Error{Code: exit.Usage,
		Err: fmt.Errorf("--lease %s is too short for claim run: its command must be stopped %s before the lease could lapse, "+
			"and the first renewal, sent at %s, answered before that", lease, ms(s.margin+s.grace), ms(s.every)),
		Hint: fmt.Sprintf("give --lease %s or more", MinLease)}
}

// ms rounds d to milliseconds, for messages.
func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// renewBound is how long a renewal sent at sent may take: the time left
// before SIGTERM, capped by --timeout (and the replicas' wait). One still
// unanswered then has failed: the command is stopped on time.
func (s schedule) renewBound(sent, termAt time.Time) time.Duration {
	return min(s.bound, termAt.Sub(sent))
}

// renewDurability is d for a renewal given left to be answered: WAIT takes
// at most half of it, so that the server replies before the client gives
// up; never 0, which WAIT reads as "for ever".
func renewDurability(d redisconn.Durability, left time.Duration) redisconn.Durability {
	if d.On() {
		d.Timeout = max(min(d.Timeout, left/2), time.Millisecond).Truncate(time.Millisecond)
	}
	return d
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

// deadmanAt is when the dead man's switch kills a stopped idmpctl (and the
// guard the command): half the margin after the deadline, split evenly
// between idmpctl's own SIGKILL, which must come before the switch fires
// (else it dies mid-stop: 137, no message), and the guard's, before the
// lease could lapse. At a 1s lease that is 105ms each (it was 27ms first).
func (c *leaseClock) deadmanAt() time.Time {
	return c.deadline().Add(c.s.margin / 2)
}

// termAt is when the command is sent SIGTERM unless a renewal succeeds.
func (c *leaseClock) termAt() time.Time {
	return c.deadline().Add(-c.s.grace)
}

// renew renews the claim from a third of the lease on. A lost claim is
// reported on lost; renewals that failed until the stop, on expire.
func (r *claimedRun) renew(ctx context.Context, stop <-chan struct{}, lost, expire chan<- error) {
	o, s := r.p, r.clock.s
	next := r.clock.lastSent().Add(s.every)
	// last is the last failure; answered, the last the server answered (a
	// refusal says why) when a timeout came after it.
	var last, answered error
	failing := time.Time{}
	for {
		timer := time.NewTimer(min(time.Until(next), time.Until(r.clock.termAt())))
		select {
		case <-stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		sent := time.Now()
		left := r.clock.termAt().Sub(sent)
		if left <= 0 {
			why := "no renewal was answered in time"
			if last != nil {
				why = fmt.Sprintf("the last: %v", last)
			}
			if answered != nil && answered != last {
				why += fmt.Sprintf("; the last answer: %v", answered)
			}
			if failing.IsZero() {
				failing = r.clock.lastSent()
			}
			expire <- &exit.Error{Code: exit.Lost, What: o.What,
				Err: fmt.Errorf("renewals failed for %s (%s): the command was stopped before its lease (%s) could lapse",
					time.Since(failing).Round(time.Millisecond), why, o.Lease)}
			return
		}
		bound := s.renewBound(sent, r.clock.termAt())
		cctx, cancel := context.WithTimeout(ctx, bound)
		_, err := claim.Renew(cctx, r.conn, o.Key, r.p.Token, o.Lease, o.TTL, claim.Durably(renewDurability(o.Durability, bound), nil))
		cancel()
		switch {
		case err == nil:
			r.clock.renewed(sent)
			r.setDeadman()
			r.Renewals++
			next, last = sent.Add(s.every), nil
		case exit.Code(err) == exit.Lost:
			lost <- err
			return
		default:
			if last == nil {
				failing, answered = sent, nil
			}
			if exit.TimedOut(err) && ctx.Err() == nil {
				// Go's "read tcp ...: i/o timeout" in our words: which bound.
				within := fmt.Sprintf("%s (--timeout)", ms(bound))
				if bound < s.bound {
					within = fmt.Sprintf("the %s left before the command had to be stopped", ms(bound))
				}
				err = fmt.Errorf("claim renew %q: no reply within %s", o.Key, within)
			} else {
				answered = err
			}
			last, next = err, time.Now().Add(s.retry)
		}
	}
}
