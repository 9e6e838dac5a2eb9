package records

import (
	"fmt"
	"strings"
)

// Lock keys sit beside the record they guard and are never results:
//
//   - Powertools' orphan-record takeover lock, KEY:lock holding "True"
//     (Python) or "true" (TypeScript) for orphan_lock_timeout (10 s):
//     powertools-lambda-python v3.2.0's persistence/redis.py _acquire_lock,
//     powertools-lambda-typescript v2.35.0's CachePersistenceLayer.ts.
//   - The middleware lock of seed projects and tutorials,
//     `SET lock:idempotency:{key} <value> NX EX <short>`, holding "1",
//     "locked", "processing" or the holder's token, as in Redis' own lock
//     recipe (redis.io "Distributed locks").
//   - Redisson's RLock: a hash with one field "<uuid>:<threadId>" holding
//     the reentrancy count, with PEXPIRE.
//
// The name says a key can be a lock (LockTarget), the value that it is one
// (lockValue); a short TTL admits token-like values of no telling shape.

// LockTTLHintMs is the TTL under which a lock-named key holding a token of
// no telling shape ("worker-7") is a lock; telling ones are at any TTL.
const LockTTLHintMs = 60 * 60 * 1000

// maxLockValue bounds what can be a lock's value (a flag or a token).
const maxLockValue = 128

// LockTarget names the key a lock-named key guards: X for "X:lock"
// (Powertools) and Y for "lock:Y" (middleware locks); the suffix wins when
// both apply. ok is false for other keys and for an empty target.
func LockTarget(key string) (target string, ok bool) {
	switch {
	case len(key) > len(":lock") && strings.HasSuffix(key, ":lock"):
		return key[:len(key)-len(":lock")], true
	case len(key) > len("lock:") && strings.HasPrefix(key, "lock:"):
		return key[len("lock:"):], true
	}
	return "", false
}

// lockWords are values that say "held" without naming the holder.
var lockWords = map[string]bool{
	"1": true, "TRUE": true, "YES": true, "Y": true, "ON": true,
	"LOCK": true, "LOCKED": true, "HELD": true, "BUSY": true, "TAKEN": true,
}

// unlockWords say "not held" where a lock is kept as a flag.
var unlockWords = map[string]bool{
	"FALSE": true, "NO": true, "N": true, "OFF": true, "UNLOCKED": true, "FREE": true, "RELEASED": true,
}

// lockValue reads the string value of a lock-named key. held is true when
// it is a lock; owner is the holder's token when the value names one.
func lockValue(s string, ttlMs int64) (owner string, held bool) {
	v := unquote(strings.TrimSpace(s))
	if v == "" || len(v) > maxLockValue {
		return "", false
	}
	switch up := strings.ToUpper(v); {
	case lockWords[up] || NormaliseStatus(v) == Processing:
		return "", true
	case unlockWords[up] || strings.Trim(v, "0") == "" || NormaliseStatus(v) != Unknown:
		// "not held" where a flag is kept, or a record's status: read by content.
		return "", false
	case !tokenShaped(v):
		return "", false
	}
	if isUUID(v) || isHex(v) && len(v) >= 8 || isAllDigits(v) || hostPid(v) || randomToken(v) || ttlMs > 0 && ttlMs <= LockTTLHintMs {
		return v, true
	}
	return "", false
}

// Character classes of lock values.
const (
	digits  = "0123456789"
	letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)

// tokenShaped: the characters of ids, host names, base64 and base64url.
func tokenShaped(s string) bool { return strings.Trim(s, letters+digits+"._:@/+=-") == "" }

func isAllDigits(s string) bool { return s != "" && strings.Trim(s, digits) == "" }

func isHex(s string) bool { return s != "" && strings.Trim(s, digits+"abcdefABCDEF") == "" }

// isUUID: 8-4-4-4-12 hex digits.
func isUUID(s string) bool {
	return len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' &&
		isHex(s[:8]+s[9:13]+s[14:18]+s[19:23]+s[24:])
}

// hostPid: "host:pid" (idmpctl's default owner and many lock libraries'),
// "pid@host" (the JVM's RuntimeMXBean name), or a UUID with a ":<thread>"
// suffix (Redisson's lock name).
func hostPid(s string) bool {
	if i := strings.LastIndexByte(s, ':'); i > 0 && isAllDigits(s[i+1:]) {
		return true
	}
	if i := strings.IndexByte(s, '@'); i > 0 && i < len(s)-1 && isAllDigits(s[:i]) {
		return true
	}
	return false
}

// randomToken: 16 or more base64/base64url characters mixing letters and
// digits, as random tokens (nanoid, base64 of random bytes) do.
func randomToken(s string) bool {
	return len(s) >= 16 && strings.Trim(s, letters+digits+"+/=_-") == "" &&
		strings.ContainsAny(s, letters) && strings.ContainsAny(s, digits)
}

// lockObject: a JSON object or hash at a lock-named key that did not decode
// as a record is a lock when it names its holder: an owner or token field,
// or Redisson's single "<uuid>:<threadId>" field holding a count.
func lockObject(m map[string]string) (owner string, held bool) {
	if v, ok := lookup(m, ownerNames...); ok && v != "" {
		return v, true
	}
	if _, ok := lookup(m, tokenNames...); ok {
		return "", true
	}
	if len(m) == 1 {
		for k, v := range m {
			if i := strings.LastIndexByte(k, ':'); i > 0 && isUUID(k[:i]) && isAllDigits(k[i+1:]) && isAllDigits(v) {
				return k, true
			}
		}
	}
	return "", false
}

// lockStatusWords are the status words of a record that says it is a lock.
var lockStatusWords = map[string]bool{"LOCKED": true, "LOCK": true, "HELD": true, "ACQUIRED": true, "CLAIMED": true}

// lockFromObject makes r, decoded from the hash or JSON object m at a
// lock-named key, a lock when m is no record but names its holder, or is a
// json/hash record whose status is a lockStatusWords word.
func lockFromObject(r *Record, m map[string]string, targetExists *bool) {
	target, lockNamed := LockTarget(r.Key)
	if !lockNamed {
		return
	}
	switch r.Format {
	case FormatUnknown:
		owner, held := lockObject(m)
		if !held {
			return
		}
		decodeGeneric(r, m)
		if owner != "" {
			r.Owner = owner
		}
	case FormatJSON, FormatHash:
		if !lockStatusWords[statusKey(r.RawStatus)] {
			return
		}
	default:
		return
	}
	setLock(r, FormatLock, target, targetExists)
}

// setLock makes r a lock record guarding target.
func setLock(r *Record, format Format, target string, targetExists *bool) {
	r.Format, r.Status, r.Guards = format, Locked, target
	if targetExists != nil && !*targetExists {
		r.Flags = append(r.Flags, FlagOrphanLock)
	}
}

// PurgeFlags are the purge options that decide about locks and live
// records.
type PurgeFlags struct {
	Locked    bool // LOCKED is among the statuses asked for (--status LOCKED)
	Stale     bool // --stale
	Force     bool // --force
	OlderThan bool // --older-than was given
}

// PurgeBlocked is purge's lock rule, for a candidate that passed the other
// filters. A lock goes only with --status LOCKED; one whose TTL runs only
// with --force (Redis ends it soon, and deleting it early lets a second
// worker in; a gone record (orphan-lock) does not prove the holder gone:
// locks are taken before the record is written); one without a TTL with
// --stale or --force. reason is for purge's report.
func (r Record) PurgeBlocked(f PurgeFlags) (reason string, blocked bool) {
	if r.Status != Locked {
		return "", false
	}
	switch {
	case !f.Locked:
		return "a lock: purged only with --status LOCKED", true
	case f.Force:
		return "", false
	case r.TTLms > 0:
		return fmt.Sprintf("a lock with %s of TTL left: it ends by itself; --force deletes it now", roundMs(r.TTLms)), true
	case r.TTLms == -1 && !f.Stale:
		return "a lock without a TTL: --stale or --force deletes it", true
	}
	return "", false
}
