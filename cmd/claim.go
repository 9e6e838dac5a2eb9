package cmd

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/spf13/cobra"
)

// ClaimFlags are the inputs of the claim verbs. Each verb has the flags it
// uses (has), and only those: --help lists them, and any other is refused.
type ClaimFlags struct {
	has        claimFlagSet
	Key        string
	Owner      string
	OwnerSet   bool // --owner was given; otherwise Complete looks up hostname:pid
	Lease, TTL time.Duration
	// LeaseSet and TTLSet say whether --lease and --ttl were given: a flag
	// not given never changes what a stored claim was taken with.
	LeaseSet, TTLSet bool
	// takes says the verb takes a claim (acquire, run): its lease is
	// --lease or its default; other verbs keep the stored lease.
	takes       bool
	Payload     string
	MaxAttempts int64
	MaxResult   int
	Durable     WaitFlags

	fingerprint string
}

// claimFlagSet says which of the shared claim flags a verb takes.
type claimFlagSet uint8

const (
	hasOwner claimFlagSet = 1 << iota
	hasLease
	hasTTL
	hasPayload
	hasMaxAttempts
	hasMaxResult

	acquireFlags = hasOwner | hasLease | hasTTL | hasPayload | hasMaxAttempts
	renewFlags   = hasLease | hasTTL
	// complete and fail write the outcome and keep the lease; release
	// deletes the record.
	completeFlags = hasTTL | hasMaxResult
	failFlags     = hasTTL
	releaseFlags  = claimFlagSet(0)
	// claim run acquires, renews and records the outcome.
	runFlags = acquireFlags | hasMaxResult
)

func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// complete does the I/O the flags need before validation: the default
// owner (looked up only when a claim verb runs) and the --payload file.
func (o *ClaimFlags) complete(f *Factory) error {
	if o.has&hasOwner != 0 && !o.OwnerSet {
		o.Owner = defaultOwner()
	}
	if o.Payload != "" {
		p, err := readArg(f.In, "payload", o.Payload, false)
		if err != nil {
			return err
		}
		o.fingerprint = claim.Fingerprint([]byte(p))
	}
	return nil
}

// validate checks the verb's flags, without I/O.
func (o *ClaimFlags) validate() error {
	has := func(f claimFlagSet) bool { return o.has&f != 0 }
	switch {
	case has(hasOwner) && o.Owner == "":
		return exit.Usagef("--owner must not be empty")
	case o.Key == "":
		return exit.Usagef("the KEY must not be empty")
	case has(hasLease) && o.Lease <= 0:
		return exit.Usagef("--lease %s: must be greater than zero", render.Duration(o.Lease))
	case has(hasTTL) && o.TTL <= 0:
		return exit.Usagef("--ttl %s: must be greater than zero", render.Duration(o.TTL))
	case o.TTLSet && (o.takes || o.LeaseSet) && o.Lease > o.TTL:
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--lease %s is longer than --ttl %s", render.Duration(o.Lease), render.Duration(o.TTL)),
			Hint: "the record must outlive its lease: raise --ttl or lower --lease"}
	case o.MaxResult < 0:
		return exit.Usagef("--max-result %d: must not be negative", o.MaxResult)
	case o.MaxAttempts < 0:
		return exit.Usagef("--max-attempts %d: give 0 (unlimited) or more", o.MaxAttempts)
	}
	return o.Durable.validate()
}

func validateToken(token int64) error {
	switch {
	case token == 0:
		return exit.Usagef("--token is required: the token acquire printed (1 or more)")
	case token < 0:
		return exit.Usagef("--token %d: a fencing token is 1 or more (the token acquire printed)", token)
	}
	return nil
}

func (o *ClaimFlags) acquireParams() claim.AcquireParams {
	return claim.AcquireParams{Key: o.Key, Owner: o.Owner, Lease: o.Lease, TTL: o.ttlGiven(),
		Fingerprint: o.fingerprint, MaxAttempts: o.MaxAttempts}
}

// leaseGiven is --lease when given, else 0: keep the lease the claim was
// taken with.
func (o *ClaimFlags) leaseGiven() time.Duration {
	if o.LeaseSet {
		return o.Lease
	}
	return 0
}

// ttlGiven is --ttl when given, else 0: keep the retention the claim was
// taken with.
func (o *ClaimFlags) ttlGiven() time.Duration {
	if o.TTLSet {
		return o.TTL
	}
	return 0
}

// noteChanged records which flags were given (validate is pure).
func (o *ClaimFlags) noteChanged(c *cobra.Command) {
	o.OwnerSet = c.Flags().Changed("owner")
	o.LeaseSet, o.TTLSet = c.Flags().Changed("lease"), c.Flags().Changed("ttl")
	o.Durable.noteChanged(c)
}

// addClaimFlags adds claim run's flags: every shared one.
func addClaimFlags(c *cobra.Command, o *ClaimFlags) { addClaimFlagsFor(c, o, runFlags) }

// addClaimFlagsFor adds the shared flags a verb takes, and the wait flags
// (every verb writes).
func addClaimFlagsFor(c *cobra.Command, o *ClaimFlags, has claimFlagSet) {
	o.has = has
	fl := c.Flags()
	if has&hasOwner != 0 {
		fl.StringVar(&o.Owner, "owner", "", "who holds the claim (default hostname:pid)")
		allowEmpty(fl, "owner") // refused by Validate
	}
	// --help shows the default that holds: a renew keeps the lease the
	// claim was taken with, every write keeps the record's retention.
	// Cobra's own "(default 5m)" would say otherwise, so the flags that
	// default to what is stored show no value of their own.
	if has&hasLease != 0 {
		if has&hasOwner != 0 { // acquire, run: a new claim's lease
			durationVar(fl, &o.Lease, "lease", claim.DefaultLease, "how long a claim stays live without renewal")
		} else {
			durationVar(fl, &o.Lease, "lease", claim.DefaultLease, "how long the claim stays live from now (default: the lease the claim was taken with)")
			fl.Lookup("lease").DefValue = ""
		}
	}
	if has&hasTTL != 0 {
		durationVar(fl, &o.TTL, "ttl", claim.DefaultTTL, "retention of the record, set on every write (default: the record's own, else "+compactDuration(claim.DefaultTTL)+")")
		fl.Lookup("ttl").DefValue = ""
	}
	if has&hasPayload != 0 {
		fl.StringVar(&o.Payload, "payload", "", "request payload (STRING or @FILE): its SHA-256 must match on redelivery")
		allowEmpty(fl, "payload") // an empty request is a request
	}
	if has&hasMaxAttempts != 0 {
		fl.Int64Var(&o.MaxAttempts, "max-attempts", 0, "refuse a retry after this many attempts (0: unlimited)")
	}
	if has&hasMaxResult != 0 {
		fl.IntVar(&o.MaxResult, "max-result", claim.DefaultMaxResult, "largest result stored, in bytes (0: no cap)")
	}
	addWaitFlags(c, &o.Durable)
}

// durably is the claim option of the wait flags; ack receives what was
// acknowledged.
func (o *ClaimFlags) durably(ack *redisconn.Ack) claim.Option {
	return claim.Durably(o.Durable.durability(), ack)
}

func addTokenFlag(c *cobra.Command, token *int64) {
	c.Flags().Int64Var(token, "token", 0, "the fencing token acquire printed")
}

// claimVerb builds one verb: KEY, the shared flags, then complete (I/O),
// validate (none) and runF or run.
func claimVerb(f *Factory, use, short string, o *ClaimFlags, has claimFlagSet, prepare func(c *cobra.Command) error, run func(context.Context) error) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Key = args[0]
			o.noteChanged(c)
			if err := o.complete(f); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			if err := prepare(c); err != nil {
				return err
			}
			return run(c.Context())
		},
	}
	addClaimFlagsFor(c, o, has)
	return c
}

// NewCmdClaim builds `claim` and its verbs.
func NewCmdClaim(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "claim acquire|renew|complete|fail|release|run KEY",
		Short: "Claim idempotency keys: at most once per key, with leases and fencing tokens",
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
	c.AddCommand(NewCmdClaimAcquire(f, nil), NewCmdClaimRenew(f, nil), NewCmdClaimComplete(f, nil),
		NewCmdClaimFail(f, nil), NewCmdClaimRelease(f, nil), NewCmdClaimRun(f, nil))
	return c
}

// AcquireOptions are claim acquire's inputs.
type AcquireOptions struct {
	Factory *Factory
	ClaimFlags
}

// NewCmdClaimAcquire builds claim acquire; runF replaces the run step in tests.
func NewCmdClaimAcquire(f *Factory, runF func(*AcquireOptions) error) *cobra.Command {
	o := &AcquireOptions{Factory: f}
	o.takes = true
	return claimVerb(f, "acquire KEY", "Claim KEY and print the fencing token", &o.ClaimFlags, acquireFlags,
		func(*cobra.Command) error { return nil },
		func(ctx context.Context) error {
			if runF != nil {
				return runF(o)
			}
			return claimAcquireRun(ctx, o)
		})
}

// RenewOptions are claim renew's inputs.
type RenewOptions struct {
	Factory *Factory
	ClaimFlags
	Token int64
}

// NewCmdClaimRenew builds claim renew; runF replaces the run step in tests.
func NewCmdClaimRenew(f *Factory, runF func(*RenewOptions) error) *cobra.Command {
	o := &RenewOptions{Factory: f}
	c := claimVerb(f, "renew KEY", "Extend the lease of the claim held with --token", &o.ClaimFlags, renewFlags,
		func(*cobra.Command) error { return validateToken(o.Token) },
		func(ctx context.Context) error {
			if runF != nil {
				return runF(o)
			}
			return claimRenewRun(ctx, o)
		})
	addTokenFlag(c, &o.Token)
	return c
}

// CompleteOptions are claim complete's inputs.
type CompleteOptions struct {
	Factory *Factory
	ClaimFlags
	Token     int64
	Result    string
	ResultSet bool // --result was given (an empty result is still stored)
}

// NewCmdClaimComplete builds claim complete; runF replaces the run step in tests.
func NewCmdClaimComplete(f *Factory, runF func(*CompleteOptions) error) *cobra.Command {
	o := &CompleteOptions{Factory: f}
	c := claimVerb(f, "complete KEY", "Record COMPLETED (with --result) for the claim held with --token", &o.ClaimFlags, completeFlags,
		func(c *cobra.Command) error {
			if err := validateToken(o.Token); err != nil {
				return err
			}
			if o.ResultSet = c.Flags().Changed("result"); o.ResultSet {
				r, err := readArg(f.In, "result", o.Result, true)
				if err != nil {
					return err
				}
				o.Result = r
			}
			return nil
		},
		func(ctx context.Context) error {
			if runF != nil {
				return runF(o)
			}
			return claimCompleteRun(ctx, o)
		})
	addTokenFlag(c, &o.Token)
	c.Flags().StringVar(&o.Result, "result", "", "outcome to replay to a redelivery (STRING, @FILE or - for stdin)")
	allowEmpty(c.Flags(), "result") // an empty outcome
	return c
}

// FailOptions are claim fail's inputs.
type FailOptions struct {
	Factory *Factory
	ClaimFlags
	Token     int64
	ErrorText string
	Release   bool
}

// NewCmdClaimFail builds claim fail; runF replaces the run step in tests.
func NewCmdClaimFail(f *Factory, runF func(*FailOptions) error) *cobra.Command {
	o := &FailOptions{Factory: f}
	c := claimVerb(f, "fail KEY", "Record FAILED (with --error), or --release, for the claim held with --token", &o.ClaimFlags, failFlags,
		func(*cobra.Command) error { return validateToken(o.Token) },
		func(ctx context.Context) error {
			if runF != nil {
				return runF(o)
			}
			return claimFailRun(ctx, o)
		})
	addTokenFlag(c, &o.Token)
	c.Flags().StringVar(&o.ErrorText, "error", "", "reason of the failure")
	allowEmpty(c.Flags(), "error") // no reason given
	c.Flags().BoolVar(&o.Release, "release", false, "delete the record instead of recording FAILED")
	return c
}

// ReleaseOptions are claim release's inputs.
type ReleaseOptions struct {
	Factory *Factory
	ClaimFlags
	Token int64
}

// NewCmdClaimRelease builds claim release; runF replaces the run step in tests.
func NewCmdClaimRelease(f *Factory, runF func(*ReleaseOptions) error) *cobra.Command {
	o := &ReleaseOptions{Factory: f}
	c := claimVerb(f, "release KEY", "Delete the claim held with --token", &o.ClaimFlags, releaseFlags,
		func(*cobra.Command) error { return validateToken(o.Token) },
		func(ctx context.Context) error {
			if runF != nil {
				return runF(o)
			}
			return claimReleaseRun(ctx, o)
		})
	addTokenFlag(c, &o.Token)
	return c
}

// acquireJSON is acquire's -o json. attempts is the record's count of
// claims, this one included; attempt is its old name, kept beside it for
// now (docs/output.md).
type acquireJSON struct {
	Key           string           `json:"key"`
	Outcome       string           `json:"outcome"`
	Token         int64            `json:"token,omitempty"`
	Attempts      int64            `json:"attempts,omitempty"`
	Attempt       int64            `json:"attempt,omitempty"`
	PreviousOwner string           `json:"previous_owner,omitempty"`
	LeaseLeftMs   int64            `json:"lease_left_ms,omitempty"`
	Record        *claimRecordJSON `json:"record,omitempty"`
	ackJSON
}

// claimRecordJSON is a claim record in -o json: claim.Record's names, and
// its millisecond timestamps under names that say so, beside the old ones
// (created, updated, lease_until, now), kept as aliases for now
// (docs/output.md). retention_ms and lease_ms are the record's ttl_ms and lease_ms
// fields; ttl_ms is the key's TTL left.
type claimRecordJSON struct {
	*claim.Record
	CreatedAt    int64 `json:"created_ms"`
	UpdatedAt    int64 `json:"updated_ms"`
	LeaseUntilAt int64 `json:"lease_until_ms"`
	NowAt        int64 `json:"now_ms"`
}

func claimJSON(r claim.Record) *claimRecordJSON {
	return &claimRecordJSON{Record: &r, CreatedAt: r.Created, UpdatedAt: r.Updated, LeaseUntilAt: r.LeaseUntil, NowAt: r.Now}
}

func claimAcquireRun(ctx context.Context, o *AcquireOptions) error {
	ctx, cancel := o.Factory.callBound(ctx, o.Durable.bound())
	defer cancel()
	conn, err := o.Factory.Conn(ctx)
	if err != nil {
		return err
	}
	var ack redisconn.Ack
	res, err := claim.Acquire(ctx, conn, o.acquireParams(), o.durably(&ack))
	if err != nil {
		return err // an unacknowledged claim was given up: no token
	}
	aj := o.ackFor(res.Acquired(), &ack)
	p := o.Factory.Printer
	switch p.Format {
	case render.JSON:
		if err := p.JSON(acquireJSON{Key: o.Key, Outcome: string(res.Outcome), Token: res.Token, Attempts: res.Attempt, Attempt: res.Attempt,
			PreviousOwner: res.PreviousOwner, LeaseLeftMs: res.LeaseLeftMs, Record: claimJSON(res.Record), ackJSON: aj}); err != nil {
			return err
		}
	case render.Table:
		printClaim(p, "claim acquire "+render.Field(o.Key)+": "+string(res.Outcome), res.Record, aj.pairs()...)
	default:
		switch {
		case res.Acquired():
			p.Line("%d", res.Token)
		case res.Outcome == claim.Done:
			fmt.Fprint(p.Out, res.Record.Result)
		}
	}
	if lost := o.Factory.outputLost(); lost != nil && res.Acquired() {
		o.Factory.outputTold = true
		return giveUpUnprinted(ctx, conn, o, res, lost)
	}
	return acquireExit(p, "claim acquire", o.Key, res, 0)
}

// giveUpUnprinted gives up a claim whose token could not be written (a
// full disk): its caller cannot complete it, and held it would only delay
// a redelivery by a lease. As an unacknowledged claim: released when the
// key was free, recorded FAILED after a takeover or a retry.
func giveUpUnprinted(ctx context.Context, conn *redisconn.Conn, o *AcquireOptions, res claim.AcquireResult, lost error) error {
	var err error
	done := "released: the key is free"
	if res.Outcome == claim.Acquired {
		err = claim.Release(ctx, conn, o.Key, res.Token)
	} else {
		_, err = claim.Fail(ctx, conn, o.Key, res.Token, "its token could not be written: given up", o.ttlGiven(), false)
		done = "recorded FAILED: a redelivery can claim it at once"
	}
	e := *lost.(*exit.Error)
	e.What = "claim acquire " + strconv.Quote(o.Key)
	e.Hint = fmt.Sprintf("the claim (token %d) was %s", res.Token, done)
	if err != nil {
		e.Hint = fmt.Sprintf("the claim (token %d) could not be given up (%v): the key stays PROCESSING until its lease passes", res.Token, err)
	}
	return &e
}

// acquireExit tells on stderr what a non-acquired outcome means, and
// returns its exit code. verb is the command that acquired ("claim
// acquire", "claim run"): errors say what the user ran. wait is claim
// run's --wait, which a busy key outlasted (0: none given).
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
			Err: fmt.Errorf("attempts exhausted: FAILED after %d attempts (last error: %s)", r.Attempts, orDash(r.Error))}
	}
	return nil
}

func printClaim(p *render.Printer, title string, r claim.Record, extra ...render.Pair) {
	pairs := []render.Pair{{"status", render.Field(r.Status)}, {"owner", render.Field(r.Owner)}, {"token", strconv.FormatInt(r.Token, 10)},
		{"attempts", countText(p, r.Attempts)}}
	if r.Status == claim.StatusProcessing {
		pairs = append(pairs, render.Pair{"lease-left", msDuration(p, r.LeaseUntil-r.Now)})
	}
	pairs = append(pairs, render.Pair{"ttl", ttlText(p, r.TTLms)})
	if r.Fingerprint != "" {
		pairs = append(pairs, render.Pair{"fingerprint", render.Field(r.Fingerprint)})
	}
	if r.HasResult {
		pairs = append(pairs, render.Pair{"result", resultText(p, r.Result, int64(len(r.Result)))})
	}
	if r.Error != "" {
		pairs = append(pairs, render.Pair{"error", render.Field(r.Error)})
	}
	p.KV(title, append(pairs, extra...))
}

// ackFor is the acknowledgement to show for a call that wrote (an outcome
// that wrote nothing waited for nothing).
func (o *ClaimFlags) ackFor(wrote bool, ack *redisconn.Ack) ackJSON {
	if !wrote {
		return ackJSON{}
	}
	return toAckJSON(o.Durable.durability(), ack)
}

// claimStepOut prints the outcome of renew/complete/fail/release; a
// renewal adds the lease it granted (raw: "renewed", a tab, its ms).
func claimStepOut(p *render.Printer, verb, key, raw string, r claim.Record, aj ackJSON) error {
	renewed := verb == "renew"
	switch p.Format {
	case render.JSON:
		j := map[string]any{"key": key, "verb": verb, "outcome": raw, "record": claimJSON(r)}
		if renewed {
			j["lease_ms"], j["lease_until_ms"], j["lease_until"] = r.LeaseMs, r.LeaseUntil, r.LeaseUntil
		}
		if aj.ReplicasAcked != nil {
			j["replicas_acked"] = *aj.ReplicasAcked
		}
		if aj.LocalAOF != nil {
			j["local_aof_fsynced"] = *aj.LocalAOF
		}
		return p.JSON(j)
	case render.Table:
		pairs := aj.pairs()
		if renewed {
			pairs = append([]render.Pair{{"lease", msDuration(p, r.LeaseMs)}}, pairs...)
		}
		printClaim(p, "claim "+verb+" "+render.Field(key)+": "+raw, r, pairs...)
	default:
		if renewed {
			p.Line("%s\t%d", raw, r.LeaseMs)
			return nil
		}
		p.Line("%s", raw)
	}
	return nil
}

func claimRenewRun(ctx context.Context, o *RenewOptions) error {
	ctx, cancel := o.Factory.callBound(ctx, o.Durable.bound())
	defer cancel()
	conn, err := o.Factory.Conn(ctx)
	if err != nil {
		return err
	}
	var r claim.Record
	var ack redisconn.Ack
	err = redisconn.WithRetries(ctx, o.Factory.Global.Retries, func() (err error) {
		r, err = claim.Renew(ctx, conn, o.Key, o.Token, o.leaseGiven(), o.ttlGiven(), o.durably(&ack))
		return err
	}, nil)
	if err != nil {
		return err
	}
	return claimStepOut(o.Factory.Printer, "renew", o.Key, "renewed", r, o.ackFor(true, &ack))
}

func claimCompleteRun(ctx context.Context, o *CompleteOptions) error {
	ctx, cancel := o.Factory.callBound(ctx, o.Durable.bound())
	defer cancel()
	conn, err := o.Factory.Conn(ctx)
	if err != nil {
		return err
	}
	var result *string
	if o.ResultSet {
		result = &o.Result
	}
	var r claim.Record
	var ack redisconn.Ack
	err = redisconn.WithRetries(ctx, o.Factory.Global.Retries, func() (err error) {
		r, err = claim.Complete(ctx, conn, o.Key, o.Token, result, o.ttlGiven(), o.MaxResult, o.durably(&ack))
		return err
	}, nil)
	if err != nil {
		return err
	}
	return claimStepOut(o.Factory.Printer, "complete", o.Key, r.Status, r, o.ackFor(true, &ack))
}

func claimFailRun(ctx context.Context, o *FailOptions) error {
	ctx, cancel := o.Factory.callBound(ctx, o.Durable.bound())
	defer cancel()
	conn, err := o.Factory.Conn(ctx)
	if err != nil {
		return err
	}
	retries := o.Factory.Global.Retries
	if o.Release {
		retries = 0 // see claim.Release: not blindly retryable
	}
	var r claim.Record
	var ack redisconn.Ack
	err = redisconn.WithRetries(ctx, retries, func() (err error) {
		r, err = claim.Fail(ctx, conn, o.Key, o.Token, o.ErrorText, o.ttlGiven(), o.Release, o.durably(&ack))
		return err
	}, nil)
	if err != nil {
		return err
	}
	outcome := r.Status
	if o.Release {
		outcome = "RELEASED"
	}
	return claimStepOut(o.Factory.Printer, "fail", o.Key, outcome, r, o.ackFor(true, &ack))
}

func claimReleaseRun(ctx context.Context, o *ReleaseOptions) error {
	ctx, cancel := o.Factory.callBound(ctx, o.Durable.bound())
	defer cancel()
	conn, err := o.Factory.Conn(ctx)
	if err != nil {
		return err
	}
	var ack redisconn.Ack
	if err := claim.Release(ctx, conn, o.Key, o.Token, o.durably(&ack)); err != nil {
		return err
	}
	return claimStepOut(o.Factory.Printer, "release", o.Key, "RELEASED", claim.Record{Key: o.Key, TTLms: -2}, o.ackFor(true, &ack))
}
