package claim

// Durable transitions wait until the replicas asked acknowledged the write.
// One that was not stands on the primary but may be lost in a failover: an
// *exit.Error wraps a *redisconn.NotAckedError, and an acquire gives up its
// claim, so that nobody holds a key on a claim a failover could erase.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// Option changes how a transition is sent.
type Option func(*sendOpts)

type sendOpts struct {
	durability redisconn.Durability
	ack        *redisconn.Ack
	retries    int
	entry      Entry // Acking
}

// Durably makes a transition that writes wait until d is met (WAIT or
// WAITAOF, in its script's round trip); ack, when not nil, receives what
// was acknowledged. An outcome that writes nothing is not checked.
func Durably(d redisconn.Durability, ack *redisconn.Ack) Option {
	return func(o *sendOpts) { o.durability, o.ack = d, ack }
}

// Retries lets a transition that is safe to repeat (renew, complete, fail:
// a repeat by the same token is recognised) go again after a network
// error, up to n times, with redisconn.WithRetriesWithin's backoff; the others
// ignore it.
func Retries(n int) Option {
	return func(o *sendOpts) { o.retries = n }
}

func options(opts []Option) sendOpts {
	var o sendOpts
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// sendRetrying is send, repeated after a network error as o allows (only
// a retrySafe step).
func (st step) sendRetrying(ctx context.Context, c *redisconn.Conn, o sendOpts) (rep scriptReply, err error) {
	if !st.retrySafe || o.retries <= 0 {
		return st.send(ctx, c, o)
	}
	err = redisconn.WithRetriesWithin(ctx, o.retries, 0, func() (err error) {
		rep, err = st.send(ctx, c, o)
		return err
	}, nil)
	return rep, err
}

// send runs the step, durably when asked. A write that was not
// acknowledged is on rep.notAcked (the reply is good otherwise).
func (st step) send(ctx context.Context, c *redisconn.Conn, o sendOpts) (scriptReply, error) {
	ack, err := c.Run(ctx, redisconn.RunOpts{Key: st.key, Durability: o.durability}, st.call)
	rep, err := st.reply(err) // the call's own error is its reply's
	if err != nil || !o.durability.On() {
		return rep, err
	}
	if o.ack != nil {
		*o.ack = ack
	}
	if rep.wrote() {
		var na *redisconn.NotAckedError
		if errors.As(o.durability.Check(ack), &na) {
			rep.notAcked = na
		}
	}
	return rep, nil
}

// wrote reports whether the call wrote to the key (a repeated complete or
// fail sets the retention again: a write too, whose wait covers the first).
func (rep scriptReply) wrote() bool {
	switch rep.outcome {
	case string(Acquired), string(Takeover), string(Retry), "ok", "again":
		return true
	case "released":
		return rep.extra != "absent"
	}
	return false
}

// unacked is the error of a write that stands on the primary but was not
// acknowledged as asked: exit.Unavailable, or the wait's own code.
func unacked(what string, na *redisconn.NotAckedError, story, hint string) error {
	return &exit.Error{Code: na.Code(), What: what, Err: fmt.Errorf("%w: %s", na, story), Hint: hint}
}

// settled is settle, then the verdict on a write that was not acknowledged.
func (st step) settled(rep scriptReply, token int64, success ...string) (Record, error) {
	if rep.outcome == "ok" && st.result != nil { // complete: the script does not echo it back
		rep.record.Result, rep.record.HasResult = *st.result, true
	}
	r, err := rep.settle(st.what, token, success...)
	if err != nil || rep.notAcked == nil {
		return r, err
	}
	story, hint := "the record was deleted on the primary, but a failover could bring the claim back (until its lease passes)", ""
	lost := " stands on the primary but could be lost in a failover (the claim would be PROCESSING again)"
	again := " is safe to repeat with the same token: repeat it once the replicas are back"
	switch {
	case st.verb == "renew":
		story, hint = "the renewal stands on the primary but could be lost in a failover", "renew is safe to repeat with the same token"
	case st.verb == "complete":
		story, hint = StatusCompleted+lost, "complete"+again
	case st.verb == "fail" && rep.outcome != "released":
		story, hint = StatusFailed+lost, "fail"+again
	}
	return r, unacked(st.what, rep.notAcked, story, hint)
}

// giveUp undoes an acquire that was not acknowledged (GiveUp). The undo is
// not waited for: a failover that loses it likely loses the claim too, and
// otherwise the lease bounds the stall.
func giveUp(ctx context.Context, c *redisconn.Conn, p AcquireParams, res AcquireResult, na *redisconn.NotAckedError) error {
	what := "claim acquire " + strconv.Quote(p.Key) // claim run's acquire too, as its other errors say
	made := fmt.Sprintf("the claim (token %d) was made on the primary but could be lost in a failover", res.Token)
	done, err := GiveUp(ctx, c, p.Key, res, "not acknowledged by the replicas asked: given up", p.TTL)
	done = "so it was " + done
	if err != nil {
		return unacked(what, na, fmt.Sprintf("%s, and giving it up failed: %v", made, err),
			fmt.Sprintf("the key stays PROCESSING until its lease passes (%s)", duration.Compact(p.Lease)))
	}
	return unacked(what, na, made+", "+done, "retry once the replicas are back (INFO replication on the primary lists them)")
}

// GiveUp undoes an acquire whose caller cannot use its claim: a key that
// was free is released; a takeover or a retry is recorded FAILED with
// reason, keeping ttl (0: the record's own), so that attempts and tokens
// carry on and a redelivery can claim it at once. done says which, in words.
func GiveUp(ctx context.Context, c *redisconn.Conn, key string, res AcquireResult, reason string, ttl time.Duration) (done string, err error) {
	if res.Outcome == Acquired {
		return "released: the key is free", Release(ctx, c, key, res.Token)
	}
	_, err = Fail(ctx, c, key, res.Token, reason, ttl, false)
	return "recorded FAILED: a redelivery can claim it at once", err
}

// GiveUpUnprinted gives up a claim whose token could not be written (a
// full disk), which held would only delay a redelivery by a lease. It
// returns lost, the output's error, naming the claim and what became of it.
func GiveUpUnprinted(ctx context.Context, c *redisconn.Conn, key string, ttl time.Duration, res AcquireResult, lost *exit.Error) error {
	done, err := GiveUp(ctx, c, key, res, "its token could not be written: given up", ttl)
	e := *lost
	e.What = "claim acquire " + strconv.Quote(key)
	e.Hint = fmt.Sprintf("the claim (token %d) was %s", res.Token, done)
	if err != nil {
		e.Hint = fmt.Sprintf("the claim (token %d) could not be given up (%v): the key stays PROCESSING until its lease passes", res.Token, err)
	}
	return &e
}
