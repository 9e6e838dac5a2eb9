// Package records decodes the idempotency records that idmpctl and other
// libraries leave in Redis into one normalised view. It is pure: callers read
// the key (TYPE, PTTL, the value) and hand the replies to DecodeWith, which never
// panics and never fails: what it cannot read is Format unknown.
//
// Recognition rules, in order (the first that fits wins):
//
//	type none                          -> none, status ABSENT
//	idmpctl's emulated stream state ({S}:idmp, {S}:idmp:pids,
//	  {S}:idmp:ids:<pid>, {S}:idmp:order:<pid>, batch progress)
//	                                    -> idmp-state, no status (not a record)
//	hash with status and token fields   -> idmpctl (docs/claim.md's record)
//	hash at a lock-named key whose status is LOCKED|HELD|ACQUIRED|CLAIMED,
//	  or with no status but naming its holder (an owner or token field,
//	  Redisson's one "<uuid>:<thread>" field) -> lock, LOCKED
//	hash with a status or state field   -> hash (any case of the field name)
//	set                                 -> camel (one repository; Members = SCARD)
//	stream                              -> stream, no status (not a record)
//	string holding a JSON object with status INPROGRESS|COMPLETED|EXPIRED
//	  and an expiration field           -> powertools (AWS Powertools'
//	  Redis/cache persistence layers, see powertools.go; attribute names
//	  as configured with DecodeOptions.Powertools, then the defaults)
//	string holding a JSON object with no status or state member, a
//	  request object (method, url or headers) and maybe a response object
//	                                    -> express (express-idempotency's
//	  IdempotencyResource via express-idempotency-redis-adapter, see
//	  http.go): PROCESSING without a response, COMPLETED with one
//	string holding a JSON object with status IN_PROGRESS|COMPLETE and a
//	  fingerPrint, a response object or a node-idempotency: key prefix
//	                                    -> node-idempotency (@node-idempotency's
//	  StoragePayload via its redis storage adapter, see http.go)
//	string holding a JSON object at a lock-named key, as for hashes
//	                                    -> lock, LOCKED
//	string holding a JSON object with a status or state member -> json
//	string at a lock-named key holding a lock value -> lock, LOCKED
//	  (powertools-lock for KEY:lock holding true/True, Powertools'
//	  takeover lock)
//	string holding a status word or "1"/"true" (optionally JSON-quoted)
//	                                    -> marker
//	string P:V holding V (V non-empty)  -> camel (Camel's string repository)
//	anything else                       -> unknown
//
// HTTP middlewares (http.go names the libraries) store the response they
// replay: HTTPStatus is its status code, ResultSummary says "HTTP 201, 57
// bytes", and a 4xx/5xx or error response is flagged error-response with
// its message in Error; such a record is COMPLETED (the request completed,
// with an error, and replays it), not FAILED (which docs/claim.md keeps for
// failures a retry may redo).
//
// Secrets: HTTP middlewares store the request, headers included (express-
// idempotency keeps req.headers whole, Authorization and Cookie too).
// Redact replaces the values of secret-named fields and members
// (IsSecretName: authorization, cookie, set-cookie, x-api-key, password,
// token, ... in any case and spelling) at any depth of Record.Fields,
// following JSON kept as text in strings, and keeps every other byte.
// Callers redact every record they print unless asked to show secrets;
// RedactJSON does the same for a raw JSON value.
//
// Locks (locks.go names the libraries): a key is lock-named when LockTarget
// names the key it guards (K:lock and lock:K), and is a lock when its value
// says "held": "1", true/True, yes, locked, held, busy, a PROCESSING word
// (processing, started, running, ...), or a holder's token (a UUID, host:pid,
// pid@host, 8+ hex digits, digits, a random token of 16+ base64 characters
// mixing letters and digits; any other token-shaped value only when the TTL
// is at most LockTTLHintMs). "0", false, no, unlocked and a record's
// terminal status words (COMPLETED, FAILED, ...) are not locks: such keys,
// and lock-named keys holding records, are decoded by their content. A lock
// is never a result: its status is LOCKED, Guards names the guarded key,
// FlagOrphanLock says that key does not exist (RawValue.LockTargetExists),
// and PurgeBlocked holds the rule purge applies to locks.
//
// A set is read as a Camel repository because no other known idempotency
// store keeps its ids in a set; no cross-key heuristic is needed, and purge
// deletes a whole set only with --any-type.
//
// Times: a PROCESSING record is stale once LeaseEndMs (the earlier of its
// lease and its deadline) has passed, and LeaseLeftMs counts down to that
// same instant, so the two never disagree. A lock without a TTL is stale
// too: nothing ends it. PurgeLive holds the rule purge applies to live
// work: a PROCESSING record before LeaseEndMs (LiveUntilMs), or with no
// lease or deadline at all, is not deleted without --force. AgeMs says when a record carries no time at all, so
// that callers print "age unknown" rather than a fresh age.
package records

import (
	"fmt"
	"time"

	"github.com/idmpctl/idmpctl/internal/idmp"
)

// Format names the shape a record was written in.
type Format string

// Formats, as shown by inspect and accepted in JSON output.
const (
	FormatIdmpctl         Format = "idmpctl"
	FormatHash            Format = "hash"
	FormatJSON            Format = "json"
	FormatMarker          Format = "marker"
	FormatPowertools      Format = "powertools"
	FormatPowertoolsLock  Format = "powertools-lock"
	FormatLock            Format = "lock" // a lock key beside the record it guards (lock:K, K:lock)
	FormatExpress         Format = "express"
	FormatNodeIdempotency Format = "node-idempotency"
	FormatCamel           Format = "camel"
	FormatStream          Format = "stream"
	FormatUnknown         Format = "unknown"
	FormatIDMPState       Format = "idmp-state" // idmpctl's emulated stream IDMP state (purge --stream clears it)
	FormatNone            Format = "none"       // the key does not exist
)

// Formats lists the formats a key can be read as (FormatNone, for a key
// that does not exist, last), in the order of their declaration.
func Formats() []Format {
	return []Format{FormatIdmpctl, FormatHash, FormatJSON, FormatMarker, FormatPowertools, FormatPowertoolsLock,
		FormatLock, FormatExpress, FormatNodeIdempotency, FormatCamel, FormatStream, FormatUnknown, FormatIDMPState, FormatNone}
}

// Status is a normalised record status.
type Status string

// Statuses. ABSENT is for keys that do not exist (inspect of a missing key).
// LOCKED is a lock key's: it holds no result, whatever its value says.
const (
	Processing Status = "PROCESSING"
	Locked     Status = "LOCKED"
	Completed  Status = "COMPLETED"
	Failed     Status = "FAILED"
	Expired    Status = "EXPIRED"
	Unknown    Status = "UNKNOWN"
	Absent     Status = "ABSENT"
)

// Flag marks what an operator needs to see.
type Flag string

// Flags.
const (
	FlagStale         Flag = "stale"          // PROCESSING past its lease or deadline; a lock without a TTL
	FlagNoTTL         Flag = "no-ttl"         // the key never expires
	FlagOrphanLock    Flag = "orphan-lock"    // a lock whose guarded record does not exist
	FlagExpired       Flag = "expired"        // past its own expiration (Powertools)
	FlagErrorResponse Flag = "error-response" // the stored response is an error (HTTP 4xx/5xx), replayed as such
	FlagOrphanState   Flag = "orphan-state"   // emulated IDMP state whose stream is gone (RawValue.StateStreamExists)
)

// Record is the normalised view of one key. Times are Unix milliseconds
// (0 = not known); TTLms is PTTL's reply (-1 no TTL, -2 missing).
type Record struct {
	Key          string `json:"key"`
	Format       Format `json:"format"`
	Type         string `json:"type"`             // the Redis type (TYPE)
	Status       Status `json:"status,omitempty"` // none for a stream or idmp-state key: no record
	RawStatus    string `json:"raw_status,omitempty"`
	Owner        string `json:"owner,omitempty"`
	Token        int64  `json:"token,omitempty"`
	Attempts     int64  `json:"attempts,omitempty"`
	CreatedMs    int64  `json:"created,omitempty"`
	UpdatedMs    int64  `json:"updated,omitempty"`
	LeaseUntilMs int64  `json:"lease_until,omitempty"`
	DeadlineMs   int64  `json:"deadline,omitempty"` // in-progress deadline (Powertools in_progress_expiration)
	ExpiresMs    int64  `json:"expires,omitempty"`  // the record's own expiry (Powertools expiration)
	TTLms        int64  `json:"ttl_ms"`             // the key's TTL left (PTTL): -1 none
	// LeaseMs and RetentionMs are the lease and the retention an idmpctl
	// claim was taken with (its lease_ms and ttl_ms fields), as claim's
	// JSON names them.
	LeaseMs     int64             `json:"lease_ms,omitempty"`
	RetentionMs int64             `json:"retention_ms,omitempty"`
	NowMs       int64             `json:"now,omitempty"` // the server time the record was judged at
	Fingerprint string            `json:"fingerprint,omitempty"`
	HasResult   bool              `json:"has_result,omitempty"`
	ResultBytes int               `json:"result_bytes,omitempty"`
	HTTPStatus  int               `json:"http_status,omitempty"` // the stored response's status code (HTTP middlewares)
	Error       string            `json:"error,omitempty"`
	Members     int64             `json:"members,omitempty"` // a Camel set's SCARD
	Guards      string            `json:"guards,omitempty"`  // a lock's guarded key (LockTarget)
	Truncated   bool              `json:"truncated,omitempty"`
	Flags       []Flag            `json:"flags,omitempty"`
	Fields      map[string]string `json:"fields,omitempty"` // hash fields or top-level JSON members, raw
}

// RawValue is what the caller read for a key; only the part for its type is
// set.
type RawValue struct {
	// String is the value of a string key, or its first bytes when StringLen
	// is larger (the read was capped).
	String    *string
	StringLen int64
	// Hash holds a hash's fields; HashPartial says it holds only some (a
	// huge hash is read in part, plus every field the decoders use).
	Hash        map[string]string
	HashPartial bool
	// HashLens holds the lengths of payload fields (PayloadFields) whose
	// values were not read; a field with length 0 counts as absent.
	HashLens map[string]int64
	SetCard  int64
	// LockTargetExists says, for a lock-named key (LockTarget(key) is ok),
	// whether its target exists (nil: not checked).
	LockTargetExists *bool
	// StateStreamExists says, for a key named as emulated IDMP state
	// (idmp.StateStreams), whether one of the streams it may belong to
	// exists as a stream (nil: not checked). State without its stream is
	// orphaned: nothing but the next call on the name drops it.
	StateStreamExists *bool
}

// Recognised reports whether the record is an idempotency record in a format
// purge may delete without --any-type: not unknown, not a missing key, not a
// stream (purge --stream), not a whole Camel set. Locks are recognised;
// PurgeBlocked decides whether purge may take them.
func (r Record) Recognised() bool {
	switch r.Format {
	case FormatUnknown, FormatNone, FormatStream, FormatIDMPState, "":
		return false
	case FormatCamel:
		return r.Type == "string"
	}
	return true
}

// IsRecord reports whether the key is an idempotency record of some kind
// (unknown included): not a stream, not idmpctl's emulated IDMP state of
// one, not a missing key. Only records have a status and count by status.
func (r Record) IsRecord() bool {
	switch r.Format {
	case FormatStream, FormatIDMPState, FormatNone:
		return false
	}
	return true
}

// HasFlag reports whether f is set.
func (r Record) HasFlag(f Flag) bool {
	for _, g := range r.Flags {
		if g == f {
			return true
		}
	}
	return false
}

// LastActivityMs is the record's most recent known time (updated, else
// created), 0 when it carries none.
func (r Record) LastActivityMs() int64 {
	if r.UpdatedMs > 0 {
		return r.UpdatedMs
	}
	return max(r.CreatedMs, 0)
}

// AgeMs is how long ago the record was last active (LastActivityMs) at the
// time it was judged (NowMs). known is false when the record carries no
// time (Powertools, @node-idempotency, markers, older express-idempotency
// records) or no clock was given: show "age unknown", never a fresh age.
// A record written by a client whose clock runs ahead of the server's has
// a negative age.
func (r Record) AgeMs() (ms int64, known bool) {
	last := r.LastActivityMs()
	if last <= 0 || r.NowMs <= 0 {
		return 0, false
	}
	return r.NowMs - last, true
}

// LeaseEndMs is the instant a PROCESSING record stops being protected: the
// earlier of its lease (lease_until) and its deadline (Powertools'
// in_progress_expiration) where both are set; 0 when neither is. The record
// is stale once this instant has passed, so stale and lease-left follow one
// rule (a live lease never hides a passed deadline).
func (r Record) LeaseEndMs() int64 {
	switch {
	case r.LeaseUntilMs > 0 && r.DeadlineMs > 0:
		return min(r.LeaseUntilMs, r.DeadlineMs)
	case r.LeaseUntilMs > 0:
		return r.LeaseUntilMs
	}
	return max(r.DeadlineMs, 0)
}

// LeaseLeftMs is the time from NowMs to LeaseEndMs of a PROCESSING record:
// negative once it has passed (then the record is flagged stale). known is
// false for other statuses, for records without a lease or deadline, and
// without a clock.
func (r Record) LeaseLeftMs() (ms int64, known bool) {
	end := r.LeaseEndMs()
	if r.Status != Processing || end <= 0 || r.NowMs <= 0 {
		return 0, false
	}
	return end - r.NowMs, true
}

// LiveUntilMs is the instant until which purge must keep a PROCESSING
// record, as the server judges it: the end of its lease or deadline while
// that is still ahead of NowMs, else 0 (not PROCESSING, no deadline, or
// past it).
func (r Record) LiveUntilMs() int64 {
	if left, known := r.LeaseLeftMs(); known && left > 0 {
		return r.LeaseEndMs()
	}
	return 0
}

// PurgeLive applies the rule that keeps live work from purge: a PROCESSING
// record whose lease or deadline (an idmpctl claim's lease_until,
// Powertools' in_progress_expiration, any format's) is still ahead is
// deleted only with --force: its worker may be running, and a second one
// would start the same work with a fresh claim. A PROCESSING record with
// no deadline at all cannot be told from abandoned: only --older-than (it
// was last updated long ago) or --force selects it. reason says why a
// kept record stays, for purge's report.
func (r Record) PurgeLive(f PurgeFlags) (reason string, blocked bool) {
	if r.Status != Processing || f.Force {
		return "", false
	}
	if left, known := r.LeaseLeftMs(); known {
		if left <= 0 {
			return "", false
		}
		d := time.Duration(left) * time.Millisecond
		if d >= time.Second {
			d = d.Round(time.Second)
		}
		return fmt.Sprintf("PROCESSING with %s of its lease or deadline left: its worker may be running; --force deletes it now", d), true
	}
	if r.LeaseEndMs() > 0 {
		return "PROCESSING with a lease or deadline that could not be judged (no server time): --force deletes it", true
	}
	if !f.OlderThan {
		return "PROCESSING without a lease or deadline: its worker may be running; --older-than or --force deletes it", true
	}
	return "", false
}

// DecodeOptions tune DecodeWith to how applications configured their libraries.
// The zero value is every library's default.
type DecodeOptions struct {
	// Powertools names the JSON attributes of Powertools records written
	// with custom attribute names (--powertools-attrs); records with the
	// default names are recognised as well.
	Powertools PowertoolsAttrs
}

// DecodeWith is Decode with options.
func DecodeWith(opts DecodeOptions, key, redisType string, value RawValue, ttlMs, nowMs int64) Record {
	r := Record{Key: key, Type: redisType, TTLms: ttlMs, Format: FormatUnknown, Status: Unknown, NowMs: max(nowMs, 0)}
	if part, ok := idmp.ParseStateKey(key, redisType); ok {
		r.Format, r.Status, r.RawStatus = FormatIDMPState, "", part
		judge(&r, nowMs)
		if value.StateStreamExists != nil && !*value.StateStreamExists {
			r.Flags = append(r.Flags, FlagOrphanState)
		}
		return r
	}
	switch redisType {
	case "none", "":
		r.Type, r.Format, r.Status, r.TTLms = "none", FormatNone, Absent, -2
		return r
	case "hash":
		r.Truncated = value.HashPartial
		decodeHash(&r, value.Hash, value.HashLens, value.LockTargetExists)
	case "string":
		if value.String != nil {
			s := *value.String
			r.Truncated = value.StringLen > int64(len(s))
			decodeString(&r, s, value.LockTargetExists, opts)
		}
	case "set":
		r.Format, r.Status, r.RawStatus, r.Members = FormatCamel, Completed, "set", value.SetCard
	case "stream":
		r.Format, r.Status = FormatStream, ""
	}
	judge(&r, nowMs)
	return r
}

// judge sets the flags that depend on time and TTL.
func judge(r *Record, nowMs int64) {
	if r.TTLms == -1 {
		r.Flags = append(r.Flags, FlagNoTTL)
	}
	if nowMs <= 0 {
		return
	}
	if r.Format == FormatPowertools && r.ExpiresMs > 0 && r.ExpiresMs <= nowMs {
		r.Status = Expired
	}
	if r.Status == Expired {
		r.Flags = append(r.Flags, FlagExpired)
	}
	if r.Status == Locked && r.TTLms == -1 {
		// A lock that never expires outlives a crashed holder for good.
		r.Flags = append(r.Flags, FlagStale)
	}
	if left, known := r.LeaseLeftMs(); known && left <= 0 {
		r.Flags = append(r.Flags, FlagStale)
	}
}
