package records

import (
	"fmt"
	"testing"
)

var (
	validFormats = map[Format]bool{FormatIdmpctl: true, FormatHash: true, FormatJSON: true, FormatMarker: true,
		FormatPowertools: true, FormatPowertoolsLock: true, FormatLock: true, FormatExpress: true, FormatNodeIdempotency: true,
		FormatCamel: true, FormatStream: true,
		FormatUnknown: true, FormatNone: true}
	validStatuses = map[Status]bool{Processing: true, Locked: true, Completed: true, Failed: true, Expired: true,
		Unknown: true, Absent: true}
	validFlags = map[Flag]bool{FlagStale: true, FlagNoTTL: true, FlagOrphanLock: true, FlagExpired: true,
		FlagErrorResponse: true}
)

// checkInvariants holds for every decoded record, whatever the input.
func checkInvariants(t *testing.T, r Record) {
	t.Helper()
	if !validFormats[r.Format] {
		t.Fatalf("format %q", r.Format)
	}
	if !validStatuses[r.Status] {
		t.Fatalf("status %q", r.Status)
	}
	seen := map[Flag]bool{}
	for _, f := range r.Flags {
		if !validFlags[f] || seen[f] {
			t.Fatalf("flags %v", r.Flags)
		}
		seen[f] = true
	}
	if r.ResultBytes < 0 || (r.ResultBytes > 0 && !r.HasResult) {
		t.Fatalf("result %v/%d", r.HasResult, r.ResultBytes)
	}
	if r.HasFlag(FlagStale) && r.Status != Processing && r.Status != Locked {
		t.Fatalf("stale but %s", r.Status)
	}
	isLock := r.Format == FormatLock || r.Format == FormatPowertoolsLock
	if isLock != (r.Status == Locked) || isLock != (r.Guards != "") {
		t.Fatalf("format %s, status %s, guards %q", r.Format, r.Status, r.Guards)
	}
	if r.HasFlag(FlagOrphanLock) && !isLock {
		t.Fatalf("orphan-lock on %s", r.Format)
	}
	if isLock {
		if target, ok := LockTarget(r.Key); !ok || target != r.Guards {
			t.Fatalf("guards %q, LockTarget(%q) = %q, %v", r.Guards, r.Key, target, ok)
		}
	}
	if r.HasFlag(FlagErrorResponse) && (r.Status != Completed || r.Error == "") {
		t.Fatalf("error-response with status %s, error %q", r.Status, r.Error)
	}
	if r.HTTPStatus != 0 && (r.HTTPStatus < 100 || r.HTTPStatus > 999) {
		t.Fatalf("http status %d", r.HTTPStatus)
	}
	if r.Format == FormatUnknown && r.Status != Unknown {
		t.Fatalf("unknown format with status %s", r.Status)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"status":"PROCESSING","owner":"c-1","timestamp":1700000000123}`,
		`{"state":"STARTED"}`,
		`{"status":1e999}`,
		`{"status":"DONE","created":"-1","updated":1e30,"attempts":"NaN","token":-9223372036854775809}`,
		`{"STATUS":"running","deadline":"2023-11-14T22:13:20+01:00","lease_until":[1,2]}`,
		`{"status":"x","status":"DONE"}`,
		`[{"status":"DONE"}]`,
		"{\"status\":\"\xff\xfe\"}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := Decode("idem:k", "string", RawValue{String: &s, StringLen: int64(len(s))}, 1000, now)
		checkInvariants(t, r)
		if r.Format == FormatJSON && r.Fields == nil {
			t.Fatal("json record without fields")
		}
	})
}

func FuzzDecodeHash(f *testing.F) {
	f.Add("status", "PROCESSING", "token", "3", "lease_until", "1700000000000")
	f.Add("state", "done", "updated_at", "1700000000.5", "owner", "w")
	f.Add("Status", "\x00", "attempts", "1e400", "created", "-0")
	f.Add("status", "INPROGRESS", "token", "", "expires_at", "9999999999999999999999")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string) {
		h := map[string]string{k1: v1, k2: v2, k3: v3}
		for _, partial := range []bool{false, true} {
			r := Decode("idem:k", "hash", RawValue{Hash: h, HashPartial: partial}, -1, now)
			checkInvariants(t, r)
			if !r.HasFlag(FlagNoTTL) {
				t.Fatal("no-ttl not flagged")
			}
		}
	})
}

func FuzzDecodeMarker(f *testing.F) {
	f.Add("seen:a", "PROCESSING")
	f.Add("repo:order-17", "order-17")
	f.Add("fn#1:lock", "True")
	f.Add(":", "")
	f.Add("x", `"1"`)
	f.Add("k:\xff", "\xff")
	f.Fuzz(func(t *testing.T, key, value string) {
		var exists bool
		r := Decode(key, "string", RawValue{String: &value, StringLen: int64(len(value)), LockTargetExists: &exists}, -2, now)
		checkInvariants(t, r)
		if r.Key != key {
			t.Fatalf("key %q", r.Key)
		}
	})
}

func FuzzDecodePowertools(f *testing.F) {
	f.Add("INPROGRESS", "1700000000", "1700000000123", "{\"statusCode\":200}", "abc")
	f.Add("COMPLETED", "1.7e9", `"1"`, "", "")
	f.Add("EXPIRED", "null", "-1", "\xff", "\x00")
	f.Add("INPROGRESS", "1e308", "9e18", "x", "y")
	f.Fuzz(func(t *testing.T, status, exp, ipe, data, validation string) {
		// exp and ipe go in raw, so many inputs are malformed JSON on purpose.
		s := fmt.Sprintf(`{"id":"fn#x","expiration":%s,"in_progress_expiration":%s,"status":%q,"data":%q,"validation":%q}`,
			exp, ipe, status, data, validation)
		r := Decode("fn#x", "string", RawValue{String: &s, StringLen: int64(len(s))}, 1000, now)
		checkInvariants(t, r)
		if r.Format == FormatPowertools && r.ExpiresMs > 0 && r.ExpiresMs <= now && r.Status != Expired {
			t.Fatalf("past expiration but %s", r.Status)
		}
	})
}
