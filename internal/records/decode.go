package records

import (
	"encoding/json"
	"strings"
)

// maxMarker bounds what can be a plain status marker.
const maxMarker = 32

func decodeHash(r *Record, h map[string]string, lens map[string]int64, lockTargetExists *bool) {
	r.Fields = h
	_, hasStatus := h["status"]
	_, hasToken := h["token"]
	if raw, ok := lookup(h, statusNames...); hasStatus && hasToken {
		r.Format = FormatIdmpctl
		decodeIdmpctl(r, h)
		if !r.HasResult && lens["result"] > 0 {
			r.HasResult, r.ResultBytes = true, int(lens["result"])
		}
	} else if ok {
		r.Format = FormatHash
		r.RawStatus, r.Status = raw, NormaliseStatus(raw)
		decodeGeneric(r, h)
		if !r.HasResult {
			for _, n := range resultNames {
				if l := lens[n]; l > 0 {
					r.HasResult, r.ResultBytes = true, int(l)
					break
				}
			}
		}
	}
	lockFromObject(r, h, lockTargetExists)
}

// decodeIdmpctl reads docs/claim.md's record: integers are server ms, exactly.
func decodeIdmpctl(r *Record, h map[string]string) {
	c := ParseClaimFields(h)
	r.RawStatus, r.Status = c.Status, NormaliseStatus(c.Status)
	r.Owner, r.Token, r.Attempts = c.Owner, c.Token, c.Attempts
	r.LeaseUntilMs, r.CreatedMs, r.UpdatedMs = c.LeaseUntil, c.Created, c.Updated
	r.LeaseMs, r.RetentionMs = c.LeaseMs, c.TTLMs
	r.Fingerprint, r.Error = c.Fingerprint, c.Error
	if c.HasResult {
		r.HasResult, r.ResultBytes = true, len(c.Result)
	}
}

// decodeGeneric reads the common field names of other libraries, guessing
// units where they vary.
func decodeGeneric(r *Record, m map[string]string) {
	text := func(names []string, dst *string) {
		if v, ok := lookup(m, names...); ok {
			*dst = v
		}
	}
	number := func(names []string, dst *int64, read func(string) int64) {
		if v, ok := lookup(m, names...); ok {
			*dst = read(v)
		}
	}
	text(ownerNames, &r.Owner)
	number(tokenNames, &r.Token, looseInt)
	number(attemptNames, &r.Attempts, looseInt)
	number(createdNames, &r.CreatedMs, timestampMs)
	number(updatedNames, &r.UpdatedMs, timestampMs)
	number(leaseNames, &r.LeaseUntilMs, timestampMs)
	number(deadlineNames, &r.DeadlineMs, timestampMs)
	text(fingerprintNames, &r.Fingerprint)
	if v, ok := lookup(m, resultNames...); ok && v != "null" {
		r.HasResult, r.ResultBytes = true, len(v)
	}
	if v, ok := lookup(m, errorNames...); ok && v != "null" {
		r.Error = v
	}
}

func decodeString(r *Record, s string, lockTargetExists *bool, opts DecodeOptions) {
	trimmed := strings.TrimSpace(s)
	target, lockNamed := LockTarget(r.Key)
	if strings.HasPrefix(trimmed, "{") {
		m, ok := jsonObject(trimmed)
		if !ok {
			return
		}
		r.Fields = m
		decodeJSONObject(r, m, opts)
		lockFromObject(r, m, lockTargetExists)
		return
	}
	if lockNamed {
		if owner, held := lockValue(s, r.TTLms); held {
			format := FormatLock
			if strings.HasSuffix(r.Key, ":lock") && strings.EqualFold(trimmed, "true") {
				format = FormatPowertoolsLock
			}
			setLock(r, format, target, lockTargetExists)
			if owner != "" {
				r.Owner = owner
			} else {
				r.RawStatus = s
			}
			return
		}
	}
	if st, ok := marker(trimmed); ok {
		r.Format, r.Status, r.RawStatus = FormatMarker, st, s
		return
	}
	if s != "" && len(r.Key) > len(s)+1 && strings.HasSuffix(r.Key, ":"+s) {
		// Camel's RedisStringIdempotentRepository: SET NX "repo:id" "id".
		r.Format, r.Status = FormatCamel, Completed
	}
}

// decodeJSONObject decodes a JSON string's members: Powertools (with the
// attribute names of opts, then the defaults), the HTTP middlewares, then
// any object with a status or state member.
func decodeJSONObject(r *Record, m map[string]string, opts DecodeOptions) {
	for _, a := range opts.powertoolsAttrs() {
		if isPowertools(m, a) {
			decodePowertools(r, m, a)
			return
		}
	}
	if isExpress(m) {
		decodeExpress(r, m)
		return
	}
	if isNodeIdempotency(r.Key, m) {
		decodeNodeIdempotency(r, m)
		return
	}
	if raw, ok := lookup(m, statusNames...); ok {
		r.Format = FormatJSON
		r.RawStatus, r.Status = raw, NormaliseStatus(raw)
		decodeGeneric(r, m)
	}
}

// marker recognises a plain status string: a status word, or "1"/"true"
// (the `SET key 1 NX` "seen" marker, read as COMPLETED), optionally
// JSON-quoted as Jackson serialisers write it.
func marker(s string) (Status, bool) {
	if len(s) > maxMarker {
		return Unknown, false
	}
	if s = unquote(s); s == "1" || strings.EqualFold(s, "true") {
		return Completed, true
	}
	st := NormaliseStatus(s)
	return st, st != Unknown
}

// unquote strips one pair of double quotes (as Jackson writes a string
// value) and the spaces inside them.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}

// jsonObject reads a JSON object's top-level members as strings: JSON
// strings unquoted, anything else (numbers, objects, arrays) as its raw text.
func jsonObject(s string) (map[string]string, bool) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil || raw == nil {
		return nil, false
	}
	m := make(map[string]string, len(raw))
	for k, v := range raw {
		if len(v) > 0 && v[0] == '"' {
			var str string
			if json.Unmarshal(v, &str) == nil {
				m[k] = str
				continue
			}
		}
		m[k] = string(v)
	}
	return m, true
}
