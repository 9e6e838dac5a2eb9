package claim

// Issue 16: a claim keeps the lease and the retention it was taken with,
// its fencing tokens never repeat, and no claim is ever half written.

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// Steps given no lease and no retention keep the ones the claim was taken
// with: a renewal every 20 minutes of a 1h claim stays live, and a 7-day
// dedupe window stays 7 days through complete and fail.
func TestClaimDefaultsKeepTheStoredClaim(t *testing.T) {
	ctx, c := claimClient(t)
	const week = 7 * 24 * time.Hour
	p := AcquireParams{Key: "job", Owner: "w1", Lease: time.Hour, TTL: week}
	tok := mustAcquire(t, ctx, c, p, Acquired).Token
	if h := hash(t, ctx, c, "job"); h["lease_ms"] != "3600000" || h["ttl_ms"] != "604800000" {
		t.Fatalf("acquire stored lease_ms %q and ttl_ms %q", h["lease_ms"], h["ttl_ms"])
	}
	rec, err := Renew(ctx, c, "job", tok, 0, 0)
	if err != nil || rec.LeaseUntil-rec.Now != time.Hour.Milliseconds() || rec.LeaseMs != time.Hour.Milliseconds() {
		t.Fatalf("renew without a lease: %+v %v, want the 1h lease kept", rec, err)
	}
	wantTTL(t, ctx, c, "job", week)
	if _, err := Complete(ctx, c, "job", tok, nil, 0, 0); err != nil {
		t.Fatal(err)
	}
	wantTTL(t, ctx, c, "job", week)

	fp := AcquireParams{Key: "job2", Owner: "w1", Lease: time.Hour, TTL: week}
	tok = mustAcquire(t, ctx, c, fp, Acquired).Token
	if _, err := Fail(ctx, c, "job2", tok, "boom", 0, false); err != nil {
		t.Fatal(err)
	}
	wantTTL(t, ctx, c, "job2", week)
	// A retry that gives no retention keeps the week too; its lease is its own.
	fp.Lease, fp.TTL = time.Minute, 0
	tok = mustAcquire(t, ctx, c, fp, Retry).Token
	wantTTL(t, ctx, c, "job2", week)
	if h := hash(t, ctx, c, "job2"); h["lease_ms"] != "60000" || h["ttl_ms"] != "604800000" {
		t.Errorf("retry stored lease_ms %q and ttl_ms %q", h["lease_ms"], h["ttl_ms"])
	}
	// Given flags change them, and are kept in turn.
	if _, err := Renew(ctx, c, "job2", tok, 2*time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if rec, err = Renew(ctx, c, "job2", tok, 0, 0); err != nil || rec.LeaseUntil-rec.Now != 120_000 {
		t.Fatalf("renew after a given lease: %+v %v", rec, err)
	}
	if _, err := Complete(ctx, c, "job2", tok, nil, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	wantTTL(t, ctx, c, "job2", time.Hour)
	if h := hash(t, ctx, c, "job2"); h["ttl_ms"] != "3600000" {
		t.Errorf("complete --ttl 1h stored ttl_ms %q", h["ttl_ms"])
	}
}

// A record written before lease_ms and ttl_ms existed: a renewal without a
// lease grants the lease its last acquire granted, and no step shortens
// its retention.
func TestClaimDefaultsOnAnOlderRecord(t *testing.T) {
	ctx, c := claimClient(t)
	now := time.Now().UnixMilli()
	c.Client().HSet(ctx, "old", "status", "PROCESSING", "owner", "w", "token", "3", "attempts", "3",
		"lease_until", strconv.FormatInt(now+90_000, 10), "created", strconv.FormatInt(now, 10), "updated", strconv.FormatInt(now, 10))
	c.Client().PExpire(ctx, "old", 48*time.Hour)
	rec, err := Renew(ctx, c, "old", 3, 0, 0)
	if err != nil || rec.LeaseUntil-rec.Now != 90_000 {
		t.Fatalf("renew of an older record: %+v %v, want its 90s lease", rec, err)
	}
	wantTTL(t, ctx, c, "old", 48*time.Hour)
	if _, err := Complete(ctx, c, "old", 3, nil, 0, 0); err != nil {
		t.Fatal(err)
	}
	wantTTL(t, ctx, c, "old", 48*time.Hour)
}

// A claim record with neither lease_ms nor updated (hand-made, or another
// writer's): a renewal without a lease falls back to the 5m default, but
// never to a lease_until earlier than the one the record holds: a default
// never shortens a live lease.
func TestClaimDefaultLeaseNeverShortens(t *testing.T) {
	ctx, c := claimClient(t)
	now := time.Now().UnixMilli()
	until := now + time.Hour.Milliseconds()
	c.Client().HSet(ctx, "bare", "status", "PROCESSING", "owner", "w", "token", "1", "attempts", "1",
		"lease_until", strconv.FormatInt(until, 10), "created", strconv.FormatInt(now, 10))
	c.Client().PExpire(ctx, "bare", 2*time.Hour)
	rec, err := Renew(ctx, c, "bare", 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.LeaseUntil < until {
		t.Errorf("renew without --lease moved lease_until from %d to %d (%s earlier)", until, rec.LeaseUntil,
			time.Duration(until-rec.LeaseUntil)*time.Millisecond)
	}
	// Given, a shorter lease is taken as asked.
	if rec, err = Renew(ctx, c, "bare", 1, time.Minute, 0); err != nil || rec.LeaseUntil-rec.Now != time.Minute.Milliseconds() {
		t.Errorf("renew --lease 1m: %+v %v", rec, err)
	}
}

// Fencing tokens strictly increase for a key, also across the deletion of
// its record (release, fail --release, DEL, a purge) and its expiry: a
// zombie's token never matches a later claim.
func TestClaimTokensNeverRepeat(t *testing.T) {
	ctx, c := claimClient(t)
	p := AcquireParams{Key: "job", Owner: "w", Lease: 50 * time.Millisecond, TTL: 100 * time.Millisecond}
	var seen []int64
	take := func(want AcquireOutcome) int64 {
		t.Helper()
		tok := mustAcquire(t, ctx, c, p, want).Token
		if n := len(seen); n > 0 && tok <= seen[n-1] {
			t.Fatalf("token %d after %d: not increasing (all: %v)", tok, seen[n-1], seen)
		}
		seen = append(seen, tok)
		return tok
	}
	tok := take(Acquired)
	if err := Release(ctx, c, "job", tok); err != nil {
		t.Fatal(err)
	}
	tok = take(Acquired)
	if _, err := Fail(ctx, c, "job", tok, "", 0, true); err != nil {
		t.Fatal(err)
	}
	take(Acquired)
	c.Client().Del(ctx, "job")
	tok = take(Acquired)
	mustFail(t, ctx, c, "job", tok)
	take(Retry)
	time.Sleep(60 * time.Millisecond)
	take(Takeover)
	time.Sleep(150 * time.Millisecond) // the record expires
	if n, _ := c.Client().Exists(ctx, "job").Result(); n != 0 {
		t.Fatal("the record did not expire")
	}
	zombie := take(Acquired)
	c.Client().Del(ctx, "job")
	fresh := take(Acquired)
	// The zombie holding the token before the deletion is lost, not current.
	_, err := Complete(ctx, c, "job", zombie, nil, 0, 0)
	wantCode(t, err, exit.Lost, "is not current")
	if _, err := Complete(ctx, c, "job", fresh, nil, 0, 0); err != nil {
		t.Fatal(err)
	}
	// A record of an older idmpctl with a small token carries on above it.
	c.Client().HSet(ctx, "older", "status", "FAILED", "owner", "w", "token", "7", "attempts", "7",
		"lease_until", "1", "created", "1", "updated", "1")
	if res := mustAcquire(t, ctx, c, AcquireParams{Key: "older", Owner: "w", Lease: time.Minute}, Retry); res.Token <= 7 || res.Attempt != 8 {
		t.Errorf("retry of an older record: token %d attempt %d", res.Token, res.Attempt)
	}
}

// A lease longer than the retention the record keeps is a usage error,
// and nothing is written: the record would expire with its claim live.
func TestClaimLeaseLongerThanRetention(t *testing.T) {
	ctx, c := claimClient(t)
	p := AcquireParams{Key: "job", Owner: "w", Lease: time.Minute, TTL: time.Hour}
	tok := mustAcquire(t, ctx, c, p, Acquired).Token
	before := hash(t, ctx, c, "job")
	_, err := Renew(ctx, c, "job", tok, 2*time.Hour, 0)
	wantCode(t, err, exit.Usage, "--lease (2h) is longer than the retention the record keeps (1h)")
	_, err = Renew(ctx, c, "job", tok, 0, 30*time.Second)
	wantCode(t, err, exit.Usage, "--lease (1m) is longer than")
	mustFail(t, ctx, c, "job", tok)
	before = hash(t, ctx, c, "job")
	_, err = Acquire(ctx, c, AcquireParams{Key: "job", Owner: "w2", Lease: 2 * time.Hour})
	wantCode(t, err, exit.Usage, "--lease (2h) is longer than the retention the record keeps (1h)")
	if after := hash(t, ctx, c, "job"); after["status"] != "FAILED" || after["token"] != before["token"] {
		t.Errorf("a refused acquire wrote: %v", after)
	}
	// A key without a record: the default retention (24h).
	_, err = Acquire(ctx, c, AcquireParams{Key: "new", Owner: "w", Lease: 25 * time.Hour})
	wantCode(t, err, exit.Usage, "--lease (25h) is longer than the retention the record keeps (24h)")
	if n, _ := c.Client().Exists(ctx, "new").Result(); n != 0 {
		t.Error("a refused acquire created the key")
	}
}

// Permissions are checked before the first write: a user who may not set
// the expiry, delete a field or delete the key gets NOPERM (77), and the
// key is as it was: never a claim without its expiry.
func TestClaimPermissionsBeforeTheFirstWrite(t *testing.T) {
	if !redistest.AtLeast(7, 0) {
		t.Skip("redis.acl_check_cmd needs Redis 7.0")
	}
	admin, srv := redistest.Conn(t)
	ctx := context.Background()
	for _, acl := range [][]string{
		{"ACL", "SETUSER", "nopexpire", "on", ">pw", "~*", "+@all", "-pexpire"},
		{"ACL", "SETUSER", "nohdel", "on", ">pw", "~*", "+@all", "-hdel"},
		{"ACL", "SETUSER", "nodel", "on", ">pw", "~*", "+@all", "-del"},
		{"ACL", "SETUSER", "nohset", "on", ">pw", "~*", "+@all", "-hset"},
	} {
		args := make([]any, len(acl))
		for i, a := range acl {
			args[i] = a
		}
		if err := admin.Client().Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	as := func(user string) *redisconn.Conn {
		c, err := redistest.Dial(ctx, redisconn.ConnConfig{URL: "unix://" + user + ":pw@" + srv.Addr, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	p := AcquireParams{Key: "job", Owner: "w", Lease: time.Minute, TTL: time.Hour}
	for _, user := range []string{"nopexpire", "nohset"} {
		_, err := Acquire(ctx, as(user), p)
		wantCode(t, err, exit.Permission, "NOPERM")
		if n, _ := admin.Client().Exists(ctx, "job").Result(); n != 0 {
			t.Errorf("%s: a refused acquire left the key: %v", user, hash(t, ctx, admin, "job"))
		}
	}
	tok := mustAcquire(t, ctx, admin, p, Acquired).Token
	admin.Client().HSet(ctx, "job", "error", "an older attempt's")
	before := hash(t, ctx, admin, "job")
	steps := map[string]func(c *redisconn.Conn) error{
		"renew":    func(c *redisconn.Conn) error { _, err := Renew(ctx, c, "job", tok, 0, 0); return err },
		"complete": func(c *redisconn.Conn) error { _, err := Complete(ctx, c, "job", tok, nil, 0, 0); return err },
		"fail":     func(c *redisconn.Conn) error { _, err := Fail(ctx, c, "job", tok, "", 0, false); return err },
	}
	for name, step := range steps {
		for _, user := range []string{"nopexpire", "nohset"} {
			wantCode(t, step(as(user)), exit.Permission, "NOPERM")
		}
		if name == "fail" {
			wantCode(t, step(as("nohdel")), exit.Permission, "NOPERM")
		}
	}
	wantCode(t, Release(ctx, as("nodel"), "job", tok), exit.Permission, "NOPERM")
	_, err := Fail(ctx, as("nodel"), "job", tok, "", 0, true)
	wantCode(t, err, exit.Permission, "NOPERM")
	if after := hash(t, ctx, admin, "job"); len(after) != len(before) || after["status"] != before["status"] ||
		after["updated"] != before["updated"] || after["error"] != before["error"] {
		t.Errorf("refused steps changed the record:\n%v\n%v", before, after)
	}
	wantTTL(t, ctx, admin, "job", time.Hour)
}

// A user who may not read the record (HGETALL) is refused with NOPERM (77),
// whatever the key holds: the script must not take the refusal for a key
// that is no claim record (65, "the key holds a none"). A user who may only
// read the key (%R~) is refused too (by EVAL's key check). Nothing is
// written either way.
func TestClaimReadPermission(t *testing.T) {
	if !redistest.AtLeast(7, 0) {
		t.Skip("redis.acl_check_cmd and selectors need Redis 7.0")
	}
	admin, srv := redistest.Conn(t)
	ctx := context.Background()
	for _, acl := range [][]any{
		{"ACL", "SETUSER", "nohgetall", "on", ">pw", "~*", "+@all", "-hgetall"},
		{"ACL", "SETUSER", "readonly", "on", ">pw", "%R~*", "+@all"},
	} {
		if err := admin.Client().Do(ctx, acl...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	as := func(user string) *redisconn.Conn {
		c, err := redistest.Dial(ctx, redisconn.ConnConfig{URL: "unix://" + user + ":pw@" + srv.Addr, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	p := AcquireParams{Key: "job", Owner: "w", Lease: time.Minute, TTL: time.Hour}
	for _, user := range []string{"nohgetall", "readonly"} {
		_, err := Acquire(ctx, as(user), p)
		wantCode(t, err, exit.Permission, "")
		if n, _ := admin.Client().Exists(ctx, "job").Result(); n != 0 {
			t.Errorf("%s: a refused acquire left the key: %v", user, hash(t, ctx, admin, "job"))
		}
	}
	tok := mustAcquire(t, ctx, admin, p, Acquired).Token
	before := hash(t, ctx, admin, "job")
	for _, user := range []string{"nohgetall", "readonly"} {
		c := as(user)
		_, err := Acquire(ctx, c, p)
		wantCode(t, err, exit.Permission, "")
		_, err = Renew(ctx, c, "job", tok, 0, 0)
		wantCode(t, err, exit.Permission, "")
		_, err = Complete(ctx, c, "job", tok, nil, 0, 0)
		wantCode(t, err, exit.Permission, "")
		_, err = Fail(ctx, c, "job", tok, "", 0, false)
		wantCode(t, err, exit.Permission, "")
		wantCode(t, Release(ctx, c, "job", tok), exit.Permission, "")
	}
	if after := hash(t, ctx, admin, "job"); len(after) != len(before) || after["updated"] != before["updated"] || after["status"] != before["status"] {
		t.Errorf("refused steps changed the record:\n%v\n%v", before, after)
	}
}
