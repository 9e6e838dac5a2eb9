package records

// ClaimFields is docs/claim.md's record as its hash holds it (the field names
// are a contract: operators read them with HGETALL). Integers are server
// milliseconds, written by idmpctl itself: read exactly, no unit guessing.
type ClaimFields struct {
	Status      string
	Owner       string
	Token       int64
	Attempts    int64
	LeaseUntil  int64
	LeaseMs     int64 // the lease the claim was taken with (lease_ms)
	TTLMs       int64 // the retention the claim was taken with (ttl_ms)
	Created     int64
	Updated     int64
	Fingerprint string
	Error       string
	Result      string
	HasResult   bool
}

// ParseClaimFields is the one decoder of a claim's hash, for inspect and the
// claim scripts' replies. Without attempts (older records) it is token, as
// the claim scripts count it.
func ParseClaimFields(h map[string]string) ClaimFields {
	f := ClaimFields{
		Status: h["status"], Owner: h["owner"],
		Token: exactInt(h["token"]), Attempts: exactInt(h["attempts"]),
		LeaseUntil: exactInt(h["lease_until"]), LeaseMs: exactInt(h["lease_ms"]), TTLMs: exactInt(h["ttl_ms"]),
		Created: exactInt(h["created"]), Updated: exactInt(h["updated"]),
		Fingerprint: h["fingerprint"], Error: h["error"],
	}
	f.Result, f.HasResult = h["result"]
	if _, ok := h["attempts"]; !ok {
		f.Attempts = f.Token
	}
	return f
}
