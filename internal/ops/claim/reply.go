package claim

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/records"
)

// ErrNotRecord marks a key that holds something a claim script never
// wrote (errors.Is); such a key is never written to.
var ErrNotRecord = errors.New("not a claim record")

// LostError says why a token no longer holds its claim, wrapped in an
// *exit.Error (exit.Lost); Record is the key's state (Status "": absent).
type LostError struct {
	Token  int64
	Record Record
}

func (e *LostError) Error() string {
	r := e.Record
	switch {
	case r.Status == "":
		return "the key does not exist"
	case r.Token != e.Token && r.Status == StatusProcessing:
		return fmt.Sprintf("token %d is not current: the key is now held by token %d (owner %s)", e.Token, r.Token, r.Owner)
	case r.Token != e.Token:
		return fmt.Sprintf("token %d is not current: the key is %s, by token %d (owner %s)", e.Token, r.Status, r.Token, r.Owner)
	}
	return "the key is " + r.Status
}

// scriptReply is the shape every claim script returns: outcome, server ms,
// PTTL, one outcome-specific string, then the hash's fields after the call.
type scriptReply struct {
	outcome  string
	extra    string // takeover: the previous owner; released: "absent" when nothing was deleted; foreign: the key's TYPE
	record   Record
	fields   map[string]string
	notAcked *redisconn.NotAckedError // the call wrote, and the replicas asked did not acknowledge it
}

// decodeReply is the claim scripts' decoder (redisconn.NewLua): the step
// gives the record its key; a reply of another shape is an internal error.
func decodeReply(v any) (scriptReply, error) {
	list, ok := v.([]any)
	if !ok {
		return scriptReply{}, exit.New(exit.Internal, "", "unexpected reply from the claim script: not a list: %v", v)
	}
	rep, err := parseReply("", list)
	if err != nil {
		return scriptReply{}, exit.New(exit.Internal, "", "unexpected reply from the claim script: %v", err)
	}
	return rep, nil
}

func parseReply(key string, v []any) (scriptReply, error) {
	if len(v) < 4 || len(v)%2 != 0 {
		return scriptReply{}, fmt.Errorf("%d elements", len(v))
	}
	outcome, ok1 := v[0].(string)
	now, ok2 := v[1].(int64)
	pttl, ok3 := v[2].(int64)
	extra, ok4 := v[3].(string)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return scriptReply{}, fmt.Errorf("header %v", v[:4])
	}
	fields := make(map[string]string, (len(v)-4)/2)
	for i := 4; i < len(v); i += 2 {
		k, okk := v[i].(string)
		val, okv := v[i+1].(string)
		if !okk || !okv {
			return scriptReply{}, fmt.Errorf("field %v", v[i])
		}
		fields[k] = val
	}
	rep := scriptReply{outcome: outcome, extra: extra, fields: fields}
	rep.record = Record{Key: key, TTLms: pttl, Now: now}
	if pttl == -2 { // absent (deleted by this call, or never there)
		return rep, nil
	}
	c := records.ParseClaimFields(fields)
	r := &rep.record
	r.Status, r.Owner, r.Token, r.Attempts, r.LeaseUntil = c.Status, c.Owner, c.Token, c.Attempts, c.LeaseUntil
	r.LeaseMs, r.RetentionMs = c.LeaseMs, c.TTLMs
	r.Created, r.Updated, r.Fingerprint, r.Error = c.Created, c.Updated, c.Fingerprint, c.Error
	r.Result, r.HasResult = c.Result, c.HasResult
	return rep, nil
}

// settle turns a renew/complete/fail/release reply into the record, a lost
// error, or an internal error for an outcome the verb never returns.
func (rep scriptReply) settle(what string, token int64, success ...string) (Record, error) {
	for _, s := range success {
		if rep.outcome == s {
			return rep.record, nil
		}
	}
	if rep.outcome == "lost" {
		return rep.record, &exit.Error{Code: exit.Lost, What: what, Err: &LostError{Token: token, Record: rep.record}}
	}
	return Record{}, rep.unexpected(what)
}

// overRetention refuses a lease longer than the retention the record
// keeps (the script's extra: "lease ttl", in ms); nothing was written.
func (rep scriptReply) overRetention(what string) error {
	var lease, ttl int64
	if _, err := fmt.Sscanf(rep.extra, "%d %d", &lease, &ttl); err != nil {
		return exit.New(exit.Internal, what, "unexpected reply from the claim script: lease_over_ttl %q", rep.extra)
	}
	e := leaseOverTTL(time.Duration(lease)*time.Millisecond, time.Duration(ttl)*time.Millisecond, "the retention the record keeps")
	e.What = what
	e.Hint = "nothing was written; give --ttl to change the retention, or a shorter --lease"
	return e
}

func (rep scriptReply) unexpected(what string) error {
	return exit.New(exit.Internal, what, "unexpected outcome %q from the claim script", rep.outcome)
}

// notClaim explains what the key holds instead of a claim record.
func (rep scriptReply) notClaim(what string) error {
	var why string
	switch {
	case rep.extra != "hash":
		why = "the key holds a " + rep.extra
	case rep.fields["status"] == "" && rep.fields["state"] == "":
		why = "a hash without a status field"
	case rep.fields["status"] == "":
		why = fmt.Sprintf("a hash with state %q, not a claim status", rep.fields["state"])
	case rep.fields["status"] != StatusProcessing && rep.fields["status"] != StatusCompleted && rep.fields["status"] != StatusFailed:
		why = fmt.Sprintf("a hash whose status %q is not PROCESSING, COMPLETED or FAILED", rep.fields["status"])
	case rep.fields["status"] == StatusProcessing && !allDigits(rep.fields["lease_until"]):
		why = "a PROCESSING hash without a valid lease_until"
	default:
		why = fmt.Sprintf("a hash whose token %q is not a positive integer", rep.fields["token"])
	}
	return &exit.Error{Code: exit.Data, What: what, Err: fmt.Errorf("%w: %s", ErrNotRecord, why),
		Hint: "nothing was written; idmpctl inspect shows what the key holds"}
}

func allDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
