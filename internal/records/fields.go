package records

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Field names other libraries use for the parts of a record. The first name
// present wins; the lookup is exact first, then case-insensitive.
var (
	statusNames      = []string{"status", "state"}
	ownerNames       = []string{"owner", "worker", "worker_id", "workerId", "consumer", "holder", "locked_by", "lockedBy", "instance"}
	tokenNames       = []string{"token", "fencing_token", "fencingToken"}
	attemptNames     = []string{"attempts", "attempt", "retries", "retry_count", "retryCount"}
	createdNames     = []string{"created", "created_at", "createdAt", "started_at", "startedAt", "timestamp", "ts"}
	updatedNames     = []string{"updated", "updated_at", "updatedAt", "completed_at", "completedAt"}
	leaseNames       = []string{"lease_until", "leaseUntil", "locked_until", "lockedUntil", "lock_until", "lease_expires_at"}
	deadlineNames    = []string{"deadline", "expires_at", "expiresAt", "expire_at", "expireAt", "expiry", "expiration", "expires"}
	fingerprintNames = []string{"fingerprint", "payload_hash", "payloadHash", "request_hash", "requestHash", "validation"}
	resultNames      = []string{"result", "response", "response_data", "responseData", "data", "output"}
	errorNames       = []string{"error", "err", "reason", "failure"}
)

// lookup returns the value of the first of names present in m.
func lookup(m map[string]string, names ...string) (string, bool) {
	for _, n := range names {
		if v, ok := m[n]; ok {
			return v, true
		}
	}
	for _, n := range names {
		for k, v := range m {
			if strings.EqualFold(k, n) {
				return v, true
			}
		}
	}
	return "", false
}

// exactInt reads an integer written by idmpctl itself (no unit guessing).
func exactInt(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// looseInt reads an integer that may be written as a float ("3.0").
func looseInt(s string) int64 {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 9e18 {
		return 0
	}
	return int64(f)
}

// timestampMs reads a time others wrote: Unix seconds, ms, µs or ns (told
// apart by magnitude), integer or float, or RFC 3339. 0 when unreadable.
func timestampMs(s string) int64 {
	s = strings.Trim(strings.TrimSpace(s), `"`)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return scaleMs(max(n, 0)) // integers exactly: ns do not fit a float
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err == nil && !math.IsNaN(f) && f <= 9e18:
		return scaleMs(max(f, 0))
	case err == nil:
		return 0
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil && t.Unix() > 0 {
		return t.UnixMilli()
	}
	return 0
}

// scaleMs is a Unix time n > 0 in ms, its unit told by its magnitude.
func scaleMs[T int64 | float64](n T) int64 {
	switch {
	case n < 1e11: // seconds until the year 5138
		return int64(n * 1e3)
	case n < 1e14:
		return int64(n)
	case n < 1e17:
		return int64(n / 1e3)
	}
	return int64(n / 1e6)
}

// secondsMs reads a Unix time in seconds (Powertools' expiration).
func secondsMs(s string) int64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || f <= 0 || f > 9e15 {
		return 0
	}
	return int64(f * 1e3)
}

// millis reads a Unix time in ms (Powertools' in_progress_expiration).
func millis(s string) int64 {
	if n := looseInt(s); n > 0 && float64(n) <= 9e18 {
		return n
	}
	return 0
}

// DecodedFields lists the hash fields the decoders read but payloads: what a
// partial read of a large hash must still fetch.
func DecodedFields() []string {
	names := []string{"owner", "token", "attempts", "lease_until", "created", "updated", "fingerprint", "error"}
	for _, group := range [][]string{statusNames, ownerNames, tokenNames, attemptNames, createdNames,
		updatedNames, leaseNames, deadlineNames, fingerprintNames, errorNames} {
		names = append(names, group...)
	}
	seen := make(map[string]bool, len(names))
	out := names[:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// PayloadFields lists the hash fields that hold a stored result, which a
// caller may measure (HSTRLEN) instead of reading.
func PayloadFields() []string { return append([]string(nil), resultNames...) }
