// Package records decodes the idempotency records that idmpctl and other
// libraries leave in Redis into one normalised view. It is pure: callers
// read the key (TYPE, PTTL, the value) and hand the replies to DecodeWith,
// which never panics and never fails: what it cannot read is Format unknown.
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
//	  and an expiration field           -> powertools (powertools.go;
//	  attribute names of DecodeOptions.Powertools, then the defaults)
//	string holding a JSON object with no status or state member, a
//	  request object (method, url or headers) and maybe a response object
//	                                    -> express (http.go): PROCESSING
//	  without a response, COMPLETED with one
//	string holding a JSON object with status IN_PROGRESS|COMPLETE and a
//	  fingerPrint, a response object or a node-idempotency: key prefix
//	                                    -> node-idempotency (http.go)
//	string holding a JSON object at a lock-named key, as for hashes
//	                                    -> lock, LOCKED
//	string holding a JSON object with a status or state member -> json
//	string at a lock-named key holding a lock value -> lock, LOCKED
//	  (powertools-lock for KEY:lock holding true/True)
//	string holding a status word or "1"/"true" (optionally JSON-quoted)
//	                                    -> marker
//	string P:V holding V (V non-empty)  -> camel (Camel's string repository)
//	anything else                       -> unknown
//
// A stored HTTP error response (4xx/5xx) is COMPLETED and flagged
// error-response, not FAILED: the request completed and replays the error,
// while docs/claim.md keeps FAILED for failures a retry may redo. A set is
// read as a Camel repository because no other known store keeps its ids in
// one. Middlewares store request headers whole, so callers print records
// through Redact (redact.go) unless asked to show secrets.
package records

import (
	"fmt"
	"slices"
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
	// StateStreamExists says, for a key named as emulated IDMP state, whether
	// a stream it may belong to (idmp.StateStreams) exists (nil: not checked).
	// State without its stream is orphaned: only the next call on the name
	// drops it.
	StateStreamExists *bool
}

// Recognised reports whether purge may delete the record without
// --any-type: not unknown, missing, a stream or its IDMP state, or a whole
// Camel set. Locks are (PurgeBlocked decides).
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
func (r Record) HasFlag(f Flag) bool { return slices.Contains(r.Flags, f) }

// LastActivityMs is the record's most recent known time (updated, else
// created), 0 when it carries none.
func (r Record) LastActivityMs() int64 {
	if r.UpdatedMs > 0 {
		return r.UpdatedMs
	}
	return max(r.CreatedMs, 0)
}

// AgeMs is how long before NowMs the record was last active. known is false
// without a time (Powertools, @node-idempotency, markers...) or a clock:
// show "age unknown", never a fresh age. A client clock ahead makes it < 0.
func (r Record) AgeMs() (ms int64, known bool) {
	last := r.LastActivityMs()
	if last <= 0 || r.NowMs <= 0 {
		return 0, false
	}
	return r.NowMs - last, true
}

// LeaseEndMs is when a PROCESSING record stops being protected: the earlier
// of its lease and its deadline (0: neither). Stale and lease-left both
// follow it, so a live lease never hides a passed deadline.
func (r Record) LeaseEndMs() int64 {
	if r.LeaseUntilMs > 0 && r.DeadlineMs > 0 {
		return min(r.LeaseUntilMs, r.DeadlineMs)
	}
	return max(r.LeaseUntilMs, r.DeadlineMs, 0)
}

// LeaseLeftMs is LeaseEndMs - NowMs of a PROCESSING record (negative once
// stale); known is false for other statuses, without a lease or a clock.
func (r Record) LeaseLeftMs() (ms int64, known bool) {
	end := r.LeaseEndMs()
	if r.Status != Processing || end <= 0 || r.NowMs <= 0 {
		return 0, false
	}
	return end - r.NowMs, true
}

// LiveUntilMs is until when purge must keep a PROCESSING record: LeaseEndMs
// while still ahead of NowMs, else 0.
func (r Record) LiveUntilMs() int64 {
	if left, known := r.LeaseLeftMs(); known && left > 0 {
		return r.LeaseEndMs()
	}
	return 0
}

// PurgeLive keeps live work from purge: a PROCESSING record whose lease or
// deadline is ahead goes only with --force (its worker may be running, and a
// second would redo the work); one with none cannot be told from abandoned
// and goes only with --older-than or --force. reason is for purge's report.
func (r Record) PurgeLive(f PurgeFlags) (reason string, blocked bool) {
	if r.Status != Processing || f.Force {
		return "", false
	}
	if left, known := r.LeaseLeftMs(); known {
		if left <= 0 {
			return "", false
		}
		return fmt.Sprintf("PROCESSING with %s of its lease or deadline left: its worker may be running; --force deletes it now", roundMs(left)), true
	}
	if r.LeaseEndMs() > 0 {
		return "PROCESSING with a lease or deadline that could not be judged (no server time): --force deletes it", true
	}
	if !f.OlderThan {
		return "PROCESSING without a lease or deadline: its worker may be running; --older-than or --force deletes it", true
	}
	return "", false
}

// DecodeOptions tune DecodeWith to how applications configured their
// libraries; the zero value is every library's default.
type DecodeOptions struct {
	// Powertools names the JSON attributes of Powertools records written
	// with custom attribute names (--powertools-attrs); records with the
	// default names are recognised as well.
	Powertools PowertoolsAttrs
}

// DecodeWith decodes one key from what was read of it (the package doc's
// rules), judged at the server time nowMs.
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

// roundMs is ms as a duration, to the second from one second on.
func roundMs(ms int64) time.Duration {
	d := time.Duration(ms) * time.Millisecond
	if d >= time.Second {
		d = d.Round(time.Second)
	}
	return d
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
