package cmd

// The flags the claim verbs share, with their validation.

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
	"github.com/spf13/cobra"
)

// ClaimFlags are the inputs of the claim verbs; each has only the flags it uses.
type ClaimFlags struct {
	has        claimFlagSet
	Key, Owner string
	OwnerSet   bool // --owner was given; otherwise complete looks up hostname:pid
	Lease, TTL time.Duration
	// LeaseSet and TTLSet say whether --lease and --ttl were given: a flag
	// not given never changes what a stored claim was taken with.
	LeaseSet, TTLSet bool
	Payload          string
	MaxAttempts      int64
	MaxResult        int
	Durable          WaitFlags

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
	// complete and fail keep the lease; release deletes the record.
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

// takesClaim says the verb takes a claim (acquire, run: those with --owner):
// its lease is --lease or its default; the others keep the stored lease.
func (o *ClaimFlags) takesClaim() bool { return o.has&hasOwner != 0 }

// complete does the I/O before validation: the default owner, --payload.
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
	case o.TTLSet && (o.takesClaim() || o.LeaseSet) && o.Lease > o.TTL:
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

// leaseGiven and ttlGiven are --lease and --ttl when given, else 0: keep
// the lease or the retention the claim was taken with.
func (o *ClaimFlags) leaseGiven() time.Duration { return givenOr0(o.LeaseSet, o.Lease) }
func (o *ClaimFlags) ttlGiven() time.Duration   { return givenOr0(o.TTLSet, o.TTL) }

func givenOr0(set bool, d time.Duration) time.Duration {
	if set {
		return d
	}
	return 0
}

// noteChanged records which flags were given (validate is pure).
func (o *ClaimFlags) noteChanged(c *cobra.Command) {
	o.OwnerSet = c.Flags().Changed("owner")
	o.LeaseSet, o.TTLSet = c.Flags().Changed("lease"), c.Flags().Changed("ttl")
	o.Durable.TimeoutSet = c.Flags().Changed("wait-timeout")
}

// addClaimFlagsFor adds the shared flags a verb takes, and the wait flags.
func addClaimFlagsFor(c *cobra.Command, o *ClaimFlags, has claimFlagSet) {
	o.has = has
	fl := c.Flags()
	if has&hasOwner != 0 {
		fl.StringVar(&o.Owner, "owner", "", "who holds the claim (default hostname:pid)")
		allowEmpty(fl, "owner") // refused by Validate
	}
	// A renew keeps the stored lease and every write the stored retention:
	// cobra's "(default 5m)" would say otherwise, so those show no default.
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
	}
	if has&hasMaxAttempts != 0 {
		fl.Int64Var(&o.MaxAttempts, "max-attempts", 0, "refuse a retry after this many attempts (0: unlimited)")
	}
	if has&hasMaxResult != 0 {
		fl.IntVar(&o.MaxResult, "max-result", claim.DefaultMaxResult, "largest result stored, in bytes (0: no cap)")
		annotateExample(fl, "max-result", "bytes", "1048576 (1 MiB)")
	}
	addWaitFlags(c, &o.Durable)
}

// durably is the wait flags' claim option; ack receives what was acknowledged.
func (o *ClaimFlags) durably(ack *redisconn.Ack) claim.Option {
	return claim.Durably(o.Durable.durability(), ack)
}

// ackFor is the acknowledgement to show (none for an outcome that wrote nothing).
func (o *ClaimFlags) ackFor(wrote bool, ack *redisconn.Ack) view.Ack {
	if !wrote {
		return view.Ack{}
	}
	return view.AckOf(o.Durable.durability(), ack)
}
