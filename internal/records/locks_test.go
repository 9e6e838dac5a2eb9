package records

import (
	"reflect"
	"strings"
	"testing"
)

func TestLockTarget(t *testing.T) {
	for key, want := range map[string]string{
		"fn.handler#5eff007a:lock": "fn.handler#5eff007a", // Powertools: f"{name}:lock"
		"lock:idempotency:abc":     "idempotency:abc",     // middleware: lock:idempotency:{key}
		"lock:a:lock":              "lock:a",              // the suffix wins
		"lock:{orders}:17":         "{orders}:17",
		"lock::lock":               "lock:",
	} {
		if got, ok := LockTarget(key); !ok || got != want {
			t.Errorf("LockTarget(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	for _, key := range []string{"lock:", ":lock", "lock", "idem:lock:x", "locks:x", "x:locked", "LOCK:x", "x:LOCK", ""} {
		if got, ok := LockTarget(key); ok {
			t.Errorf("LockTarget(%q) = %q, true", key, got)
		}
	}
}

// TestDecodeLocks: lock keys as their writers leave them (locks.go names
// the sources), and lock-named keys that are not locks.
func TestDecodeLocks(t *testing.T) {
	yes, no := boolp(true), boolp(false)
	const uuid = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d"
	// A UUID's shape in bytes 0x10-0x19, which are no hex digits.
	ctlUUID := strings.Map(func(r rune) rune {
		if r == '-' {
			return r
		}
		return 0x10 + r%10
	}, uuid)
	type lockWant struct {
		format Format
		status Status
		raw    string
		owner  string
		guards string
		flags  []Flag
	}
	for _, tc := range []struct {
		name, key, typ string
		val            RawValue
		exists         *bool
		ttl            int64
		want           lockWant
	}{
		// The seed-style middleware: SET lock:idempotency:{key} 1 NX EX 30.
		{"middleware flag, record present", "lock:idempotency:k1", "string", str("1"), yes, 30000,
			lockWant{FormatLock, Locked, "1", "", "idempotency:k1", nil}},
		{"middleware flag, record gone", "lock:idempotency:k1", "string", str("1"), no, 30000,
			lockWant{FormatLock, Locked, "1", "", "idempotency:k1", []Flag{FlagOrphanLock}}},
		{"middleware flag, not checked", "lock:idempotency:k1", "string", str("1"), nil, 30000,
			lockWant{FormatLock, Locked, "1", "", "idempotency:k1", nil}},
		{"owner uuid", "lock:idempotency:k2", "string", str(uuid), yes, 30000,
			lockWant{FormatLock, Locked, "", uuid, "idempotency:k2", nil}},
		{"owner uuid, long TTL", "lock:idempotency:k2", "string", str(uuid), yes, 86400000,
			lockWant{FormatLock, Locked, "", uuid, "idempotency:k2", nil}},
		{"processing word", "lock:idempotency:k3", "string", str("processing"), yes, 60000,
			lockWant{FormatLock, Locked, "processing", "", "idempotency:k3", nil}},
		{"locked word, 24 h", "lock:idempotency:k4", "string", str("locked"), yes, 86400000,
			lockWant{FormatLock, Locked, "locked", "", "idempotency:k4", nil}},
		{"true at lock:", "lock:job", "string", str("true"), nil, 5000,
			lockWant{FormatLock, Locked, "true", "", "job", nil}},
		{"host:pid, no TTL", "lock:job", "string", str("web-1:4242"), nil, -1,
			lockWant{FormatLock, Locked, "", "web-1:4242", "job", []Flag{FlagNoTTL, FlagStale}}},
		{"pid@host", "lock:job", "string", str("4242@web-1"), nil, -1,
			lockWant{FormatLock, Locked, "", "4242@web-1", "job", []Flag{FlagNoTTL, FlagStale}}},
		{"hex token", "lock:job", "string", str("9f86d081884c7d65"), nil, -1,
			lockWant{FormatLock, Locked, "", "9f86d081884c7d65", "job", []Flag{FlagNoTTL, FlagStale}}},
		{"nanoid token", "lock:job", "string", str("V1StGXR8_Z5jdHi6B-myT"), nil, -1,
			lockWant{FormatLock, Locked, "", "V1StGXR8_Z5jdHi6B-myT", "job", []Flag{FlagNoTTL, FlagStale}}},
		{"quoted uuid", "lock:job", "string", str(`"` + uuid + `"`), nil, 1000,
			lockWant{FormatLock, Locked, "", uuid, "job", nil}},
		{"plain name, short TTL", "lock:job", "string", str("worker-7"), nil, 30000,
			lockWant{FormatLock, Locked, "", "worker-7", "job", nil}},

		// Powertools' takeover lock keeps its format; it is LOCKED now.
		{"powertools lock", "fn#5:lock", "string", str("True"), yes, 9000,
			lockWant{FormatPowertoolsLock, Locked, "True", "", "fn#5", nil}},
		{"powertools lock orphan", "fn#5:lock", "string", str("true"), no, 9000,
			lockWant{FormatPowertoolsLock, Locked, "true", "", "fn#5", []Flag{FlagOrphanLock}}},
		{"suffix lock with a token", "fn#5:lock", "string", str(uuid), no, 9000,
			lockWant{FormatLock, Locked, "", uuid, "fn#5", []Flag{FlagOrphanLock}}},

		// Redisson's RLock hash, and JSON or hashes that name their holder.
		{"redisson", "lock:order:17", "hash", hash(uuid+":1", "1"), no, 30000,
			lockWant{FormatLock, Locked, "", uuid + ":1", "order:17", []Flag{FlagOrphanLock}}},
		{"json holder", "lock:order:18", "string", str(`{"owner":"w-1","acquired_at":1700000000}`), yes, 30000,
			lockWant{FormatLock, Locked, "", "w-1", "order:18", nil}},
		{"hash holder", "order:19:lock", "hash", hash("holder", "w-2", "token", "7"), yes, 30000,
			lockWant{FormatLock, Locked, "", "w-2", "order:19", nil}},

		{"json record saying locked", "lock:order:20", "string", str(`{"status":"locked","owner":"w-1"}`), yes, 30000,
			lockWant{FormatLock, Locked, "locked", "w-1", "order:20", nil}},
		{"hash saying acquired", "order:21:lock", "hash", hash("state", "ACQUIRED", "holder", "w-3"), no, 30000,
			lockWant{FormatLock, Locked, "ACQUIRED", "w-3", "order:21", []Flag{FlagOrphanLock}}},
		{"json saying locked elsewhere", "order:22", "string", str(`{"status":"locked","owner":"w-1"}`), nil, 30000,
			lockWant{FormatJSON, Processing, "locked", "w-1", "", nil}},

		// Lock-named keys that hold records are decoded by their content.
		{"json record", "lock:idempotency:k5", "string", str(`{"status":"COMPLETED","result":"ok"}`), yes, 30000,
			lockWant{FormatJSON, Completed, "COMPLETED", "", "", nil}},
		{"idmpctl record", "lock:k6", "hash", hash("status", "PROCESSING", "token", "1", "owner", "w"), yes, 30000,
			lockWant{FormatIdmpctl, Processing, "PROCESSING", "w", "", nil}},
		{"status word", "lock:k7", "string", str("COMPLETED"), yes, 30000,
			lockWant{FormatMarker, Completed, "COMPLETED", "", "", nil}},
		{"released flag", "lock:k8", "string", str("0"), yes, 30000,
			lockWant{FormatUnknown, Unknown, "", "", "", nil}},
		{"false", "lock:k8", "string", str("false"), yes, 30000,
			lockWant{FormatUnknown, Unknown, "", "", "", nil}},
		{"plain name, no TTL", "lock:job", "string", str("worker-7"), nil, -1,
			lockWant{FormatUnknown, Unknown, "", "", "", []Flag{FlagNoTTL}}},
		{"sentence", "lock:job", "string", str("held by worker 7"), nil, 1000,
			lockWant{FormatUnknown, Unknown, "", "", "", nil}},
		{"control bytes are no uuid", "lock:order:23", "hash", hash(ctlUUID+":1", "1"), nil, 30000,
			lockWant{FormatUnknown, Unknown, "", "", "", nil}},
		{"json without holder", "lock:cfg", "string", str(`{"a":1}`), nil, 1000,
			lockWant{FormatUnknown, Unknown, "", "", "", nil}},

		// Not lock-named: "1" stays a marker, a UUID stays unknown.
		{"marker one", "idempotency:k1", "string", str("1"), nil, 30000,
			lockWant{FormatMarker, Completed, "1", "", "", nil}},
		{"uuid elsewhere", "idempotency:k9", "string", str(uuid), nil, 30000,
			lockWant{FormatUnknown, Unknown, "", "", "", nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.val
			v.LockTargetExists = tc.exists
			r := Decode(tc.key, tc.typ, v, tc.ttl, now)
			got := lockWant{r.Format, r.Status, r.RawStatus, r.Owner, r.Guards, r.Flags}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decode(%q)\n got %+v\nwant %+v", tc.key, got, tc.want)
			}
		})
	}
}

// TestLocksCountApart: two Powertools requests in flight and their two
// takeover locks count as 2 PROCESSING and 2 LOCKED, not PROCESSING 4.
func TestLocksCountApart(t *testing.T) {
	inflight := `{"status":"INPROGRESS","expiration":1700003600,"in_progress_expiration":1700000160000}`
	counts := map[Status]int{}
	for _, kv := range [][2]string{{"fn#a", inflight}, {"fn#b", inflight}, {"fn#a:lock", "True"}, {"fn#b:lock", "true"}} {
		counts[Decode(kv[0], "string", RawValue{String: strp(kv[1]), StringLen: int64(len(kv[1])), LockTargetExists: boolp(true)}, 9000, now).Status]++
	}
	if want := map[Status]int{Processing: 2, Locked: 2}; !reflect.DeepEqual(counts, want) {
		t.Errorf("counts %v, want %v", counts, want)
	}
}

func TestStatuses(t *testing.T) {
	seen := map[Status]bool{}
	for _, st := range Statuses() {
		if seen[st] {
			t.Errorf("duplicate %s", st)
		}
		seen[st] = true
		if got, ok := ParseStatus(string(st)); !ok || got != st {
			t.Errorf("ParseStatus(%s) = %s, %v", st, got, ok)
		}
	}
	for st := range validStatuses {
		if !seen[st] {
			t.Errorf("Statuses() lacks %s", st)
		}
	}
}

// TestPurgeBlocked: the lock rule of purge, with every combination of the
// flags against a live lock, a lock without a TTL, and a record.
func TestPurgeBlocked(t *testing.T) {
	live := Decode("lock:idempotency:k", "string", RawValue{String: strp("1"), StringLen: 1, LockTargetExists: boolp(false)}, 30000, now)
	forever := Decode("lock:idempotency:k", "string", str("1"), -1, now)
	gone := Record{Key: "lock:x", Format: FormatLock, Status: Locked, Guards: "x", TTLms: -2}
	record := Decode("idempotency:k", "string", str(`{"status":"COMPLETED"}`), 30000, now)
	if !live.HasFlag(FlagOrphanLock) || live.HasFlag(FlagStale) || !forever.HasFlag(FlagStale) {
		t.Fatalf("fixtures: live %v, forever %v", live.Flags, forever.Flags)
	}
	if reason, _ := live.PurgeBlocked(PurgeFlags{Locked: true}); reason != "a lock with 30s of TTL left: it ends by itself; --force deletes it now" {
		t.Errorf("reason %q", reason)
	}
	for _, tc := range []struct {
		name string
		r    Record
		f    PurgeFlags
		want bool // blocked
	}{
		{"record, no flags", record, PurgeFlags{}, false},
		{"record, LOCKED asked", record, PurgeFlags{Locked: true}, false},
		{"live lock, status not asked", live, PurgeFlags{}, true},
		{"live lock, --force without LOCKED", live, PurgeFlags{Force: true, Stale: true}, true},
		{"live lock, LOCKED", live, PurgeFlags{Locked: true}, true},
		{"live orphan lock, LOCKED --stale", live, PurgeFlags{Locked: true, Stale: true}, true},
		{"live lock, LOCKED --force", live, PurgeFlags{Locked: true, Force: true}, false},
		{"no-TTL lock, status not asked", forever, PurgeFlags{Stale: true}, true},
		{"no-TTL lock, LOCKED", forever, PurgeFlags{Locked: true}, true},
		{"no-TTL lock, LOCKED --stale", forever, PurgeFlags{Locked: true, Stale: true}, false},
		{"no-TTL lock, LOCKED --force", forever, PurgeFlags{Locked: true, Force: true}, false},
		{"lock gone since the read", gone, PurgeFlags{Locked: true}, false},
	} {
		reason, blocked := tc.r.PurgeBlocked(tc.f)
		if blocked != tc.want || blocked != (reason != "") {
			t.Errorf("%s: PurgeBlocked(%+v) = %q, %v; want blocked %v", tc.name, tc.f, reason, blocked, tc.want)
		}
	}
}

func FuzzDecodeLock(f *testing.F) {
	f.Add("lock:idempotency:k", "1", int64(30000), false)
	f.Add("fn#1:lock", "True", int64(9000), true)
	f.Add("lock:job", "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d", int64(-1), true)
	f.Add("lock:job", "worker-7", int64(3600000), false)
	f.Add("lock::lock", `{"owner":"w"}`, int64(1), false)
	f.Add("lock:\xff", "\"\xff\"", int64(-2), true)
	f.Fuzz(func(t *testing.T, key, value string, ttl int64, exists bool) {
		for _, typ := range []string{"string", "hash"} {
			v := RawValue{String: &value, StringLen: int64(len(value)), LockTargetExists: &exists}
			if typ == "hash" {
				v = RawValue{Hash: map[string]string{value: "1"}, LockTargetExists: &exists}
			}
			r := Decode(key, typ, v, ttl, now)
			checkInvariants(t, r)
			if r.Status == Locked {
				if r.HasFlag(FlagOrphanLock) == exists {
					t.Fatalf("orphan-lock %v with target exists %v", r.HasFlag(FlagOrphanLock), exists)
				}
				if reason, blocked := r.PurgeBlocked(PurgeFlags{Stale: true, Force: true}); !blocked || reason == "" {
					t.Fatal("a lock purged without LOCKED asked")
				}
				if _, blocked := r.PurgeBlocked(PurgeFlags{Locked: true, Stale: true}); blocked != (ttl > 0) {
					t.Fatalf("ttl %d: blocked %v with --stale", ttl, blocked)
				}
			} else if _, blocked := r.PurgeBlocked(PurgeFlags{}); blocked {
				t.Fatal("a record that is no lock blocked")
			}
		}
	})
}
