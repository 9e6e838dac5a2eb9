package cmd

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// NewCmdClaim builds `claim` and its verbs.
func NewCmdClaim(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "claim acquire|renew|complete|fail|release|run KEY",
		Short: "Claim idempotency keys: at most once, with leases and tokens",
		Long: `The claim protocol for idempotency keys. Every transition is one Lua script
decided on the server's clock. The record is a hash at KEY with the fields
status, owner, token, attempts, lease_until, lease_ms, ttl_ms, created,
updated, fingerprint, result and error.

  acquire   absent or claimable -> PROCESSING; prints the fencing token
            exit 0 acquired (also a stale takeover or a retry after FAILED)
            exit 1 already COMPLETED (prints the stored result): skip the work
            exit 75 busy (a live owner holds it), 65 fingerprint mismatch,
            attempts exhausted, or a key that is not a claim record
  renew     extend the lease of a live claim; prints "renewed" and the lease
            in ms (exit 76 when lost)
  complete  PROCESSING -> COMPLETED with --result (exit 76 when lost)
  fail      -> FAILED with --error, or --release to delete (exit 76 when lost)
  release   delete the claim so a redelivery starts afresh (exit 76 when lost)
  run       claim, run a command with the claim renewed, record the outcome

A claim keeps the lease and the retention it was taken with (lease_ms,
ttl_ms): renew, complete and fail change them only when --lease or --ttl is
given, and a retry without --ttl keeps the record's retention. A lease
longer than the retention is refused (64). Fencing tokens come from the
server's clock (microseconds) and only grow for a key, also after its
record was deleted or expired: a stale worker's token never matches again.

--wait-replicas N makes every write wait until N replicas acknowledged it
(WAIT, in the write's own round trip; --wait-aof: WAITAOF, Redis 7.2+),
for at most --wait-timeout. Fewer is exit 69: the write stands on the
primary but a failover could lose it. An acquire that was not acknowledged
is given up again (released, or recorded FAILED after a takeover or a
retry) and prints no token; renew, complete and fail can be repeated.`,
	}
	for _, st := range claimSteps {
		c.AddCommand(newCmdClaimStep(f, st.name, nil))
	}
	c.AddCommand(NewCmdClaimRun(f, nil))
	return c
}

// ClaimStepOptions are the inputs of a claim step (acquire, renew,
// complete, fail, release); each verb reads only the flags it takes.
type ClaimStepOptions struct {
	Factory *Factory
	ClaimFlags
	Token     int64  // --token: renew, complete, fail, release
	Result    string // complete's --result
	ResultSet bool   // --result was given (an empty result is still stored)
	ErrorText string // fail's --error
	Release   bool   // fail --release: delete the record instead
}

// claimStep defines one claim verb but run. A verb with send makes one
// transition and shows its ClaimStep view; acquire, whose outcome is more
// than a record, has run instead.
type claimStep struct {
	name, short string
	has         claimFlagSet
	flags       func(fl *pflag.FlagSet, o *ClaimStepOptions)
	// prepare reads what the verb's own flags name, before any server
	// (complete's --result, STRING, @FILE or -).
	prepare func(c *cobra.Command, o *ClaimStepOptions) error
	send    func(ctx context.Context, conn *redisconn.Conn, o *ClaimStepOptions, opts ...claim.Option) (outcome string, r claim.Record, err error)
	run     func(ctx context.Context, conn *redisconn.Conn, o *ClaimStepOptions) error
}

// claimSteps are the claim verbs but run, in --help's order.
var claimSteps = []claimStep{
	{name: "acquire", short: "Claim KEY and print the fencing token", has: acquireFlags,
		run: claimAcquireRun},
	{name: "renew", short: "Extend the lease of the claim held with --token", has: renewFlags,
		send: func(ctx context.Context, conn *redisconn.Conn, o *ClaimStepOptions, opts ...claim.Option) (string, claim.Record, error) {
			r, err := claim.Renew(ctx, conn, o.Key, o.Token, o.leaseGiven(), o.ttlGiven(), opts...)
			return "renewed", r, err
		}},
	{name: "complete", short: "Record COMPLETED (with --result) for the claim held with --token", has: completeFlags,
		flags: func(fl *pflag.FlagSet, o *ClaimStepOptions) {
			fl.StringVar(&o.Result, "result", "", "outcome to replay to a redelivery (STRING, @FILE or - for stdin)")
			allowEmpty(fl, "result") // an empty outcome
		},
		prepare: func(c *cobra.Command, o *ClaimStepOptions) error {
			if o.ResultSet = c.Flags().Changed("result"); o.ResultSet {
				r, err := readArg(o.Factory.In, "result", o.Result, true)
				if err != nil {
					return err
				}
				o.Result = r
			}
			return nil
		},
		send: func(ctx context.Context, conn *redisconn.Conn, o *ClaimStepOptions, opts ...claim.Option) (string, claim.Record, error) {
			var result *string
			if o.ResultSet {
				result = &o.Result
			}
			r, err := claim.Complete(ctx, conn, o.Key, o.Token, result, o.ttlGiven(), o.MaxResult, opts...)
			return r.Status, r, err
		}},
	{name: "fail", short: "Record FAILED (with --error), or --release, for --token's claim", has: failFlags,
		flags: func(fl *pflag.FlagSet, o *ClaimStepOptions) {
			fl.StringVar(&o.ErrorText, "error", "", "reason of the failure")
			fl.BoolVar(&o.Release, "release", false, "delete the record instead of recording FAILED")
		},
		send: func(ctx context.Context, conn *redisconn.Conn, o *ClaimStepOptions, opts ...claim.Option) (string, claim.Record, error) {
			r, err := claim.Fail(ctx, conn, o.Key, o.Token, o.ErrorText, o.ttlGiven(), o.Release, opts...)
			if o.Release {
				return "RELEASED", r, err
			}
			return r.Status, r, err
		}},
	{name: "release", short: "Delete the claim held with --token", has: releaseFlags,
		send: func(ctx context.Context, conn *redisconn.Conn, o *ClaimStepOptions, opts ...claim.Option) (string, claim.Record, error) {
			err := claim.Release(ctx, conn, o.Key, o.Token, opts...)
			return "RELEASED", claim.Record{Key: o.Key, TTLms: -2}, err
		}},
}

// newCmdClaimStep builds the claim verb name of claimSteps; runF replaces
// the run step in tests.
func newCmdClaimStep(f *Factory, name string, runF func(*ClaimStepOptions) error) *cobra.Command {
	st := claimSteps[slices.IndexFunc(claimSteps, func(st claimStep) bool { return st.name == name })]
	o := &ClaimStepOptions{Factory: f}
	c := &cobra.Command{
		Use:   st.name + " KEY",
		Short: st.short,
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Key = args[0]
			o.noteChanged(c)
			checks := []func() error{func() error { return o.complete(f) }, o.validate}
			if !o.takesClaim() {
				checks = append(checks, func() error { return validateToken(o.Token) })
			}
			if st.prepare != nil {
				checks = append(checks, func() error { return st.prepare(c, o) })
			}
			run := func(ctx context.Context, o *ClaimStepOptions) error { return claimStepRun(ctx, st, o) }
			return runValidated(c, o, runF, run, checks...)
		},
	}
	addClaimFlagsFor(c, &o.ClaimFlags, st.has)
	if !o.takesClaim() { // it acts on the claim held with --token
		c.Flags().Int64Var(&o.Token, "token", 0, "the fencing token acquire printed")
	}
	if st.flags != nil {
		st.flags(c.Flags(), o)
	}
	return c
}

// claimStepRun is one claim step, bounded as one call (connecting, the
// wait for replicas and retries included); claim.Retries decides which
// steps are repeated after a network error.
func claimStepRun(ctx context.Context, st claimStep, o *ClaimStepOptions) error {
	ctx, cancel := o.Factory.callBound(ctx, o.Durable.durability().Timeout)
	defer cancel()
	conn, err := o.Factory.Conn(ctx)
	if err != nil {
		return err
	}
	if st.run != nil {
		return st.run(ctx, conn, o)
	}
	var ack redisconn.Ack
	outcome, r, err := st.send(ctx, conn, o, o.durably(&ack), claim.Retries(o.Factory.Global.Retries))
	if err != nil {
		return err
	}
	return o.Factory.Printer.Show(view.ClaimStep{Verb: st.name, Key: o.Key, Outcome: outcome, Record: r, Ack: o.ackFor(true, &ack)})
}

// claimAcquireRun is claim acquire's step; a token not written is given up.
func claimAcquireRun(ctx context.Context, conn *redisconn.Conn, o *ClaimStepOptions) error {
	var ack redisconn.Ack
	res, err := claim.Acquire(ctx, conn, o.acquireParams(), o.durably(&ack))
	if err != nil {
		return err // an unacknowledged claim was given up: no token
	}
	p := o.Factory.Printer
	if err := p.Show(view.ClaimAcquire{Key: o.Key, Result: res, Ack: o.ackFor(res.Acquired(), &ack)}); err != nil {
		return err
	}
	if lost := o.Factory.IOStreams().OutputLost(); lost != nil && res.Acquired() {
		o.Factory.outputTold = true
		return claim.GiveUpUnprinted(ctx, conn, o.Key, o.ttlGiven(), res, lost.(*exit.Error))
	}
	return acquireExit(p, "claim acquire", o.Key, res, 0)
}

// acquireExit tells on stderr what a non-acquired outcome means, and
// returns its exit code. verb is what the user ran; wait is claim run's
// --wait, which a busy key outlasted (0: none given).
func acquireExit(p *render.Printer, verb, key string, res claim.AcquireResult, wait time.Duration) error {
	r := res.Record
	what := verb + " " + strconv.Quote(key)
	switch res.Outcome {
	case claim.Takeover:
		p.Status("idmpctl: took over %q from %s, whose lease had passed (token %d, attempt %d)", key, res.PreviousOwner, res.Token, res.Attempt)
	case claim.Done:
		return exit.Status(exit.Done)
	case claim.Busy:
		// A --wait that outlasts the lease left, in whole seconds (a poll
		// is due as the lease passes).
		outlast := duration.Format(time.Duration((max(res.LeaseLeftMs, 1)+999)/1000) * time.Second)
		hint := "retry later, or use claim run --wait"
		switch {
		case wait > 0:
			hint = fmt.Sprintf("waited %s (--wait %s) and it is still held: retry later, or wait longer: --wait %s outlasts this lease, unless its owner renews it",
				duration.Format(wait), duration.Format(wait), outlast)
		case verb == "claim run":
			hint = fmt.Sprintf("retry later, or wait for it: --wait %s outlasts this lease, unless its owner renews it", outlast)
		}
		return &exit.Error{Code: exit.Busy, What: what,
			Err:  fmt.Errorf("busy: held by %s (token %d) for %s more", render.Field(r.Owner), r.Token, render.Ms(res.LeaseLeftMs)),
			Hint: hint}
	case claim.Mismatch:
		return &exit.Error{Code: exit.Data, What: what,
			Err:  fmt.Errorf("fingerprint mismatch: the key was claimed for a different payload (stored %.12s...)", r.Fingerprint),
			Hint: "the same key with a different request is a client bug; use a new key for a new request"}
	case claim.Exhausted:
		return &exit.Error{Code: exit.Data, What: what,
			Err: fmt.Errorf("attempts exhausted: FAILED after %s (last error: %s)", render.N(r.Attempts, "attempt"), cmp.Or(r.Error, "-"))}
	}
	return nil
}
