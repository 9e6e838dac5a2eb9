package claim

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

var (
	//go:embed lua/claim_lib.lua
	libLua string
	//go:embed lua/claim_acquire.lua
	acquireLua string
	//go:embed lua/claim_renew.lua
	renewLua string
	//go:embed lua/claim_complete.lua
	completeLua string
	//go:embed lua/claim_fail.lua
	failLua string
	//go:embed lua/claim_release.lua
	releaseLua string

	acquireScript  = redisconn.NewLua[acquireArgs](decodeReply, libLua, acquireLua)
	renewScript    = redisconn.NewLua[renewArgs](decodeReply, libLua, renewLua)
	completeScript = redisconn.NewLua[completeArgs](decodeReply, libLua, completeLua)
	failScript     = redisconn.NewLua[failArgs](decodeReply, libLua, failLua)
	releaseScript  = redisconn.NewLua[releaseArgs](decodeReply, libLua, releaseLua)
)

// The verbs' arguments: the record's key, then the verb's inputs as its
// function in lua/claim_<verb>.lua takes them (a duration "" is one not
// given: msOrKeep).
type (
	acquireArgs struct {
		Key         string   `lua:"KEY,key"`
		Owner       string   `lua:"OWNER"`
		Lease       int64    `lua:"LEASE"` // ms
		TTL         string   `lua:"TTL"`
		DefaultTTL  int64    `lua:"DEFAULT_TTL"`
		Fingerprint string   `lua:"FINGERPRINT"`
		MaxAttempts int64    `lua:"MAX_ATTEMPTS"`
		RetryDelay  int64    `lua:"RETRY_DELAY"` // ms
		Ack         xackArgs // the entry acknowledged (Acking)
	}
	renewArgs struct {
		Key          string `lua:"KEY,key"`
		Token        int64  `lua:"TOKEN"`
		Lease        string `lua:"LEASE"`
		TTL          string `lua:"TTL"`
		DefaultLease int64  `lua:"DEFAULT_LEASE"`
		DefaultTTL   int64  `lua:"DEFAULT_TTL"`
	}
	completeArgs struct {
		Key        string   `lua:"KEY,key"`
		Token      int64    `lua:"TOKEN"`
		TTL        string   `lua:"TTL"`
		DefaultTTL int64    `lua:"DEFAULT_TTL"`
		HasResult  bool     `lua:"HAS_RESULT"`
		Result     string   `lua:"RESULT"`
		Ack        xackArgs // the entry acknowledged (Acking)
	}
	failArgs struct {
		Key        string `lua:"KEY,key"`
		Token      int64  `lua:"TOKEN"`
		TTL        string `lua:"TTL"`
		DefaultTTL int64  `lua:"DEFAULT_TTL"`
		Err        string `lua:"ERR"`
		Release    bool   `lua:"RELEASE"`
	}
	releaseArgs struct {
		Key   string `lua:"KEY,key"`
		Token int64  `lua:"TOKEN"`
	}
	// xackArgs are the stream entry a step acknowledges (Acking): the
	// stream, a second key in the claim's slot, or no key for none.
	xackArgs struct {
		Stream []string `lua:"XACK_STREAM,key,rest"`
		Group  string   `lua:"XACK_GROUP"`
		ID     string   `lua:"XACK_ID"`
	}
)

// Entry is a stream entry of a consumer group, which a complete (and an
// acquire that finds the key COMPLETED) acknowledges with XACK in its own
// script when given Acking: the claim and the XACK are one step. The
// stream must be in the claim key's cluster slot.
type Entry struct{ Stream, Group, ID string }

// Acking makes complete, and an acquire that finds the key done,
// acknowledge e in the same script. The zero Entry acknowledges nothing.
func Acking(e Entry) Option {
	return func(o *sendOpts) { o.entry = e }
}

func (e Entry) args() xackArgs {
	if e.Stream == "" {
		return xackArgs{}
	}
	return xackArgs{Stream: []string{e.Stream}, Group: e.Group, ID: e.ID}
}

// Claim statuses, as stored in the record's status field.
const (
	StatusProcessing = "PROCESSING"
	StatusCompleted  = "COMPLETED"
	StatusFailed     = "FAILED"
)

// DefaultMaxResult is the default cap on a stored result (--max-result).
const DefaultMaxResult = 64 << 10

// The lease and retention of a claim when none is given (--lease, --ttl).
// A record keeps the ones it was taken with (lease_ms, ttl_ms): a later step
// changes them only when given one, DefaultTTL only a record without one.
const (
	DefaultLease = 5 * time.Minute
	DefaultTTL   = 24 * time.Hour
)

// Record is a claim hash as read by the script that last touched it.
// Times are server ms; TTLms is the key's PTTL (-1 no expiry, -2 absent);
// LeaseMs and RetentionMs are the hash's lease_ms and ttl_ms (0 in records
// written before idmpctl stored them).
type Record struct {
	Key         string `json:"key"`
	Status      string `json:"status"`
	Owner       string `json:"owner"`
	Token       int64  `json:"token"`
	Attempts    int64  `json:"attempts"`
	LeaseUntil  int64  `json:"lease_until"`
	LeaseMs     int64  `json:"lease_ms,omitempty"`
	RetentionMs int64  `json:"retention_ms,omitempty"`
	Created     int64  `json:"created"`
	Updated     int64  `json:"updated"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Result      string `json:"result,omitempty"`
	Error       string `json:"error,omitempty"`
	HasResult   bool   `json:"-"`
	TTLms       int64  `json:"ttl_ms"`
	Now         int64  `json:"now"` // server ms at read
}

// LeaseLeftMs is how long a PROCESSING claim stays live (0 when stale or not
// PROCESSING).
func (r Record) LeaseLeftMs() int64 {
	if r.Status != StatusProcessing || r.LeaseUntil <= r.Now {
		return 0
	}
	return r.LeaseUntil - r.Now
}

// Stale reports a PROCESSING claim whose lease has passed: claimable.
func (r Record) Stale() bool {
	return r.Status == StatusProcessing && r.Now >= r.LeaseUntil
}

// AcquireOutcome is what an acquire found and did.
type AcquireOutcome string

// Acquire outcomes. The first three hand the caller a claim.
const (
	Acquired  AcquireOutcome = "acquired"  // the key was absent
	Takeover  AcquireOutcome = "takeover"  // a stale PROCESSING claim was taken over
	Retry     AcquireOutcome = "retry"     // a FAILED record was claimed again
	Busy      AcquireOutcome = "busy"      // a live owner holds it: nothing changed
	Delayed   AcquireOutcome = "delayed"   // FAILED less than RetryDelay ago: nothing changed
	Done      AcquireOutcome = "done"      // COMPLETED: skip the work, replay Record.Result
	Mismatch  AcquireOutcome = "mismatch"  // the stored fingerprint differs: nothing changed
	Exhausted AcquireOutcome = "exhausted" // FAILED with attempts >= MaxAttempts: nothing changed
)

// AcquireParams are the inputs of Acquire.
type AcquireParams struct {
	Key         string
	Owner       string
	Lease       time.Duration // the claim's lease (DefaultLease when --lease is not given)
	TTL         time.Duration // the retention given; 0: the one the record keeps, else DefaultTTL
	Fingerprint string        // optional; see Fingerprint
	MaxAttempts int64         // 0: unlimited
	// RetryDelay is how long after a failure (the record's updated, on the
	// server's clock) a FAILED record may be claimed again (0: at once).
	RetryDelay time.Duration
}

// AcquireResult is the outcome with the record as it stands after the call.
type AcquireResult struct {
	Outcome       AcquireOutcome
	Token         int64  // the caller's fencing token; 0 unless Acquired()
	Attempt       int64  // the caller's attempt number; 0 unless Acquired()
	PreviousOwner string // Takeover: whose stale claim was taken over
	Record        Record
	LeaseLeftMs   int64 // Busy: how long the live owner's lease runs; Delayed: until the retry may come
}

// Acquired reports whether the caller now holds the claim.
func (r AcquireResult) Acquired() bool {
	return r.Outcome == Acquired || r.Outcome == Takeover || r.Outcome == Retry
}

// Validate checks the inputs without a server.
func (p AcquireParams) Validate() error {
	if err := checkKey(p.Key); err != nil {
		return err
	}
	if p.Owner == "" {
		return exit.Usagef("--owner is empty")
	}
	if err := checkLease(p.Lease, p.TTL, true); err != nil {
		return err
	}
	if p.MaxAttempts < 0 {
		return exit.Usagef("--max-attempts is %d: give 0 (unlimited) or more", p.MaxAttempts)
	}
	return nil
}

// Fingerprint is the hex SHA-256 of a request payload.
func Fingerprint(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}

// Acquire claims a key. It is not retried after a network error (Retries
// is ignored): a repeat of a first try that succeeded would report busy; a
// lost reply only delays the key by one lease. With Durably, a claim the
// replicas did not acknowledge is given up again (giveUp): the result says
// what was claimed, the error that it is not held.
func Acquire(ctx context.Context, c *redisconn.Conn, p AcquireParams, opts ...Option) (AcquireResult, error) {
	o := options(opts)
	st, err := acquireStep(p, o.entry)
	if err != nil {
		return AcquireResult{}, err
	}
	rep, err := st.sendRetrying(ctx, c, o) // never repeated: not retrySafe
	if err != nil {
		return AcquireResult{}, err
	}
	res, err := st.acquireResult(rep)
	if err == nil && rep.notAcked != nil {
		err = giveUp(ctx, c, p, res, rep.notAcked)
	}
	return res, err
}

// step is one prepared claim transition: the call of the verb's script
// with its checked inputs, and the script's reading of its reply.
type step struct {
	call      *redisconn.Call
	decode    func(*redisconn.Call) (scriptReply, error) // the script's Reply
	verb      string
	what      string
	key       string
	result    *string // complete: the result sent (not echoed back)
	retrySafe bool    // a repeat after a network error is recognised: Retries may send it again
}

func newStep[A any](s *redisconn.Lua[A, scriptReply], args *A, verb, key string, retrySafe bool) step {
	return step{call: s.Call(args), decode: s.Reply, verb: verb, what: "claim " + verb + " " + strconv.Quote(key),
		key: key, retrySafe: retrySafe}
}

// reply reads a step's reply (err: the round trip's): a transport or
// server error, an internal error for a malformed reply, or the error for
// a key that is no record.
func (st step) reply(err error) (scriptReply, error) {
	rep := scriptReply{}
	if err == nil {
		rep, err = st.decode(st.call)
	}
	if err != nil {
		return scriptReply{}, exit.Wrap(err, st.what)
	}
	rep.record.Key = st.key
	switch rep.outcome {
	case "foreign":
		return scriptReply{}, rep.notClaim(st.what)
	case "lease_over_ttl":
		return scriptReply{}, rep.overRetention(st.what)
	}
	return rep, nil
}

func acquireStep(p AcquireParams, e Entry) (step, error) {
	return newStep(acquireScript, &acquireArgs{Key: p.Key, Owner: p.Owner, Lease: p.Lease.Milliseconds(), TTL: msOrKeep(p.TTL),
		DefaultTTL: DefaultTTL.Milliseconds(), Fingerprint: p.Fingerprint, MaxAttempts: p.MaxAttempts,
		RetryDelay: p.RetryDelay.Milliseconds(), Ack: e.args()}, "acquire", p.Key, false), p.Validate()
}

func (st step) acquireResult(rep scriptReply) (AcquireResult, error) {
	res := AcquireResult{Outcome: AcquireOutcome(rep.outcome), Record: rep.record}
	switch res.Outcome {
	case Acquired, Retry:
	case Takeover:
		res.PreviousOwner = rep.extra
	case Busy:
		res.LeaseLeftMs = rep.record.LeaseLeftMs()
	case Delayed:
		res.LeaseLeftMs, _ = strconv.ParseInt(rep.extra, 10, 64)
	case Done, Mismatch, Exhausted:
	default:
		return AcquireResult{}, rep.unexpected(st.what)
	}
	if res.Acquired() {
		res.Token, res.Attempt = rep.record.Token, rep.record.Attempts
	}
	return res, nil
}

// Renew extends a live claim to now+lease and sets the key's TTL to ttl;
// 0 keeps the one the claim was taken with (a default never weakens a
// stored claim). The current token renews even past its lease, as long as
// nobody took over. Safe to retry. Lost: an *exit.Error (exit.Lost)
// wrapping a *LostError. A lease over the retention is refused (exit.Usage).
func Renew(ctx context.Context, c *redisconn.Conn, key string, token int64, lease, ttl time.Duration, opts ...Option) (Record, error) {
	st, err := renewStep(key, token, lease, ttl)
	return st.do(ctx, c, opts, err, token, "ok")
}

// do sends a step (err: its preparation's) and settles its reply.
func (st step) do(ctx context.Context, c *redisconn.Conn, opts []Option, err error, token int64, success ...string) (Record, error) {
	if err != nil {
		return Record{}, err
	}
	rep, err := st.sendRetrying(ctx, c, options(opts))
	if err != nil {
		return Record{}, err
	}
	return st.settled(rep, token, success...)
}

func renewStep(key string, token int64, lease, ttl time.Duration) (step, error) {
	st := newStep(renewScript, &renewArgs{Key: key, Token: token, Lease: msOrKeep(lease), TTL: msOrKeep(ttl),
		DefaultLease: DefaultLease.Milliseconds(), DefaultTTL: DefaultTTL.Milliseconds()}, "renew", key, true)
	return st, firstErr(checkKey(key), checkToken(token), checkLease(lease, ttl, false))
}

// msOrKeep is a duration as ARGV: its ms, or "" (0: not given) for the
// script to keep what the record holds.
func msOrKeep(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// Complete records COMPLETED (with result when non-nil) and sets the TTL
// (0: the claim's own). The current token completes even past its lease,
// as long as nobody took over. Safe to retry: a repeat by the same token
// only sets the retention again. A result over maxResult bytes (<= 0: no
// cap) is refused (exit.Data).
func Complete(ctx context.Context, c *redisconn.Conn, key string, token int64, result *string, ttl time.Duration, maxResult int, opts ...Option) (Record, error) {
	st, err := completeStep(key, token, result, ttl, maxResult, options(opts).entry)
	return st.do(ctx, c, opts, err, token, "ok", "again")
}

func completeStep(key string, token int64, result *string, ttl time.Duration, maxResult int, e Entry) (step, error) {
	value := ""
	if result != nil {
		value = *result
	}
	st := newStep(completeScript, &completeArgs{Key: key, Token: token, TTL: msOrKeep(ttl),
		DefaultTTL: DefaultTTL.Milliseconds(), HasResult: result != nil, Result: value, Ack: e.args()}, "complete", key, true)
	st.result = result
	err := firstErr(checkKey(key), checkToken(token), checkTTL(ttl))
	if err == nil && maxResult > 0 && len(value) > maxResult {
		err = exit.WithHint(exit.New(exit.Data, st.what, "result is %d bytes, over --max-result %d", len(value), maxResult),
			"raise --max-result, or store a smaller result")
	}
	return st, err
}

// Fail records FAILED with errText (an empty one removes the previous
// attempt's error) and sets the TTL (0: the claim's own); with release it
// deletes the record so a redelivery starts afresh, and returns an empty
// record (TTLms -2). Safe to retry without release; with it, see Release.
func Fail(ctx context.Context, c *redisconn.Conn, key string, token int64, errText string, ttl time.Duration, release bool, opts ...Option) (Record, error) {
	st, err := failStep(key, token, errText, ttl, release)
	return st.do(ctx, c, opts, err, token, "ok", "again", "released")
}

func failStep(key string, token int64, errText string, ttl time.Duration, release bool) (step, error) {
	err := firstErr(checkKey(key), checkToken(token))
	if !release {
		err = firstErr(err, checkTTL(ttl))
	}
	// A release is not retrySafe: see Release.
	return newStep(failScript, &failArgs{Key: key, Token: token, TTL: msOrKeep(ttl),
		DefaultTTL: DefaultTTL.Milliseconds(), Err: errText, Release: release}, "fail", key, !release), err
}

// Release deletes the caller's PROCESSING or FAILED record so a redelivery
// starts afresh; a COMPLETED record is never released (lost). An absent key
// counts as released. Not retried (Retries is ignored): a repeat after a
// new claim re-created the key would say lost, although the release happened.
func Release(ctx context.Context, c *redisconn.Conn, key string, token int64, opts ...Option) error {
	st, err := releaseStep(key, token)
	_, err = st.do(ctx, c, opts, err, token, "released")
	return err
}

func releaseStep(key string, token int64) (step, error) {
	st := newStep(releaseScript, &releaseArgs{Key: key, Token: token}, "release", key, false) // not retrySafe: see Release
	return st, firstErr(checkKey(key), checkToken(token))
}

func checkKey(key string) error {
	if key == "" {
		return exit.Usagef("the key is empty")
	}
	return nil
}

func checkToken(token int64) error {
	if token < 1 {
		return exit.Usagef("--token is %d: a fencing token is 1 or more", token)
	}
	return nil
}

// checkTTL checks a retention given (0: not given, keep the stored one).
func checkTTL(ttl time.Duration) error {
	if ttl != 0 && ttl < time.Millisecond {
		return exit.Usagef("--ttl (%s) must be at least 1ms", duration.Compact(ttl))
	}
	return nil
}

// checkLease checks a lease and a retention given (0: keep the stored one;
// the lease is required at acquire). A lease over the retention is refused
// here when both are given, else by the script against the stored ones.
func checkLease(lease, ttl time.Duration, required bool) error {
	if lease != 0 || required {
		if lease < time.Millisecond {
			return exit.Usagef("--lease (%s) must be at least 1ms", duration.Compact(lease))
		}
	}
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if lease > 0 && ttl > 0 && lease > ttl {
		return leaseOverTTL(lease, ttl, "--ttl")
	}
	return nil
}

// leaseOverTTL refuses a lease longer than the retention: the record
// would expire while its claim is live.
func leaseOverTTL(lease, ttl time.Duration, ttlName string) *exit.Error {
	return &exit.Error{Code: exit.Usage,
		Err: fmt.Errorf("--lease (%s) is longer than %s (%s): the record would expire while its claim is live",
			duration.Compact(lease), ttlName, duration.Compact(ttl)),
		Hint: "raise --ttl or lower --lease"}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
