package records

import (
	"fmt"
	"strings"
	"time"
)

// Lock keys sit beside the record they guard and are never results:
//
//   - Powertools' orphan-record takeover lock, KEY:lock holding "True"
//     (Python) or "true" (TypeScript) for orphan_lock_timeout (10 s):
//     powertools-lambda-python v3.2.0's
//     aws_lambda_powertools/utilities/idempotency/persistence/redis.py
//     _acquire_lock, and powertools-lambda-typescript v2.35.0's
//     packages/idempotency/src/persistence/CachePersistenceLayer.ts
//     #acquireLock.
//   - The middleware lock of seed projects and tutorials,
//     `SET lock:idempotency:{key} <value> NX EX <short>` beside the
//     idempotency:{key} record, holding "1", "locked", "processing" or the
//     holder's token (a UUID), as in Redis' own lock recipe
//     (`SET resource my_random_value NX PX 30000`, redis.io "Distributed
//     locks").
//   - Redisson's RLock (RedissonLock.tryLockInnerAsync): a hash with one
//     field "<uuid>:<threadId>" holding the reentrancy count, with PEXPIRE.
//
// The name decides that a key can be a lock (LockTarget); the value decides
// that it is one (lockValue), and a short TTL admits values that look like
// tokens without a telling shape.

// LockTTLHintMs is the TTL under which a lock-named key holding a token of
// no telling shape (e.g. "worker-7") is read as a lock. Locks are held for
// seconds or minutes; the hint is a help, never a requirement: "1", "true",
// "locked", UUIDs, host:pid and random tokens are locks at any TTL.
const LockTTLHintMs = 60 * 60 * 1000

// maxLockValue bounds what can be a lock's value (a flag or a token).
const maxLockValue = 128

// LockTarget names the key a lock-named key guards: X for "X:lock"
// (Powertools) and Y for "lock:Y" (middleware locks); the suffix wins when
// both apply. ok is false for other keys and for an empty target. The key
// reader sends EXISTS target for every key where ok is true and passes the
// answer as RawValue.LockTargetExists.
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
	v := strings.TrimSpace(s)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = strings.TrimSpace(v[1 : len(v)-1])
	}
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
	if isUUID(v) || isHex(v) && len(v) >= 8 || isAllDigits(v) || hostPid(v) || randomToken(v) {
		return v, true
	}
	if ttlMs > 0 && ttlMs <= LockTTLHintMs {
		return v, true
	}
	return "", false
}

// tokenShaped: the characters of ids, host names, base64 and base64url.
func tokenShaped(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("._:@/+=-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func isAllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

// isUUID: 8-4-4-4-12 hex digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
		} else if !isHex(s[i : i+1]) {
			return false
		}
	}
	return true
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
	if len(s) < 16 {
		return false
	}
	var letter, digit bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case strings.IndexByte("+/=_-", c) >= 0:
		default:
			return false
		}
	}
	return letter && digit
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

// lockFromObject turns r, decoded from the hash or JSON object m, into a
// lock when its key is lock-named and m is one: no record by the other
// rules but naming its holder, or a json/hash record whose status says
// LOCKED, HELD, ACQUIRED or CLAIMED. Other records at lock-named keys keep
// their decoding.
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

// PurgeBlocked applies the lock rule of purge to a candidate that passed
// purge's other filters. Records that are not locks are never blocked. A
// lock (status LOCKED):
//
//   - is never selected unless LOCKED was asked for: a purge by any other
//     status, or by none, leaves locks alone;
//   - whose TTL is running is deleted only with --force: Redis ends it by
//     itself within that TTL, and deleting it early lets a second worker in
//     while the holder may still be working. Its guarded record being gone
//     (orphan-lock) does not prove the holder gone: locks are taken before
//     the record is written, and some guard work recorded elsewhere;
//   - without a TTL (it never ends by itself, so it is flagged stale) is
//     deleted with --stale or --force.
//
// reason says why a blocked lock stays, for purge's report.
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
		left := time.Duration(r.TTLms) * time.Millisecond
		if left >= time.Second {
			left = left.Round(time.Second)
		}
		return fmt.Sprintf("a lock with %s of TTL left: it ends by itself; --force deletes it now", left), true
	case r.TTLms == -1 && !f.Stale:
		return "a lock without a TTL: --stale or --force deletes it", true
	}
	return "", false
}
