package records

import "fmt"

// Decode normalises one key with the default DecodeOptions. nowMs is the
// server's time; with nowMs <= 0 nothing is judged stale or expired.
func Decode(key, redisType string, value RawValue, ttlMs, nowMs int64) Record {
	return DecodeWith(DecodeOptions{}, key, redisType, value, ttlMs, nowMs)
}

// String is the --powertools-attrs form of a, every name spelt out;
// ParsePowertoolsAttrs reads it back to a (a name holding ',' cannot be
// spelt, and ParsePowertoolsAttrs never makes one).
func (a PowertoolsAttrs) String() string {
	a = a.withDefaults()
	return fmt.Sprintf("status=%s,expiry=%s,in_progress_expiry=%s,data=%s,validation=%s",
		a.Status, a.Expiry, a.InProgressExpiry, a.Data, a.Validation)
}
