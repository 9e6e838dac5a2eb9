package claim

// Renew, complete, fail and release: the steps after a claim.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

func TestClaimCompleteAfterLeaseWithoutTakeover(t *testing.T) {
	ctx, c := claimClient(t)
	p := acquireParams("job", "w1")
	p.Lease = 100 * time.Millisecond
	tok := mustAcquire(t, ctx, c, p, Acquired).Token
	time.Sleep(150 * time.Millisecond)
	now, err := c.Client().Time(ctx).Result()
	if lease := hash(t, ctx, c, "job")["lease_until"]; err != nil || lease >= strconv.FormatInt(now.UnixMilli(), 10) {
		t.Fatalf("lease_until %s at server time %v (%v), want passed", lease, now, err)
	}
	// Fencing: the token is still current, so the late worker's outcome counts.
	rec, err := Renew(ctx, c, "job", tok, time.Minute, time.Hour)
	if err != nil || rec.Stale() || rec.LeaseLeftMs() != 60_000 {
		t.Fatalf("late renew: %+v %v", rec, err)
	}
	if _, err := Complete(ctx, c, "job", tok, nil, time.Hour, 0); err != nil {
		t.Fatalf("late complete: %v", err)
	}
}

func TestClaimCompleteKeepsFields(t *testing.T) {
	ctx, c := claimClient(t)
	p := acquireParams("job", "w1")
	p.Fingerprint = "fp-1"
	acq := mustAcquire(t, ctx, c, p, Acquired)
	before := hash(t, ctx, c, "job")
	c.Client().HSet(ctx, "job", "x-app", "kept") // a field a claim does not own
	time.Sleep(5 * time.Millisecond)

	out := "line 1\nline 2\x00binary"
	rec, err := Complete(ctx, c, "job", acq.Token, &out, 2*time.Hour, DefaultMaxResult)
	if err != nil {
		t.Fatal(err)
	}
	h := hash(t, ctx, c, "job")
	for _, f := range []string{"owner", "token", "attempts", "lease_until", "lease_ms", "created", "fingerprint"} {
		if h[f] != before[f] {
			t.Errorf("complete changed %s: %q -> %q", f, before[f], h[f])
		}
	}
	if h["status"] != "COMPLETED" || h["result"] != out || h["x-app"] != "kept" {
		t.Errorf("after complete: %q", h)
	}
	if rec.Updated <= acq.Record.Created || rec.Status != StatusCompleted || !rec.HasResult || rec.Result != out {
		t.Errorf("returned record %+v", rec)
	}
	wantTTL(t, ctx, c, "job", 2*time.Hour)

	// A redelivery replays the result; the same fingerprint (or none) is fine.
	for _, fp := range []string{"fp-1", ""} {
		p := acquireParams("job", "w2")
		p.Fingerprint = fp
		res := mustAcquire(t, ctx, c, p, Done)
		if res.Record.Result != out || !res.Record.HasResult || res.Outcome != Done || res.Acquired() || res.Token != 0 {
			t.Errorf("done: %+v", res)
		}
	}
	if !reflect.DeepEqual(h, hash(t, ctx, c, "job")) {
		t.Error("done changed the record")
	}
}

func TestClaimCompleteWithoutResult(t *testing.T) {
	ctx, c := claimClient(t)
	tok := mustAcquire(t, ctx, c, acquireParams("job", "w1"), Acquired).Token
	rec, err := Complete(ctx, c, "job", tok, nil, time.Hour, 0)
	if err != nil || rec.HasResult {
		t.Fatalf("%+v %v", rec, err)
	}
	empty := ""
	tok = mustAcquire(t, ctx, c, acquireParams("job2", "w1"), Acquired).Token
	rec, err = Complete(ctx, c, "job2", tok, &empty, time.Hour, 0)
	if err != nil || !rec.HasResult || rec.Result != "" {
		t.Fatalf("empty result: %+v %v", rec, err)
	}
	if res := mustAcquire(t, ctx, c, acquireParams("job", "w2"), Done); res.Record.HasResult {
		t.Errorf("no result was stored, got %+v", res.Record)
	}
}

func TestClaimFailThenRetry(t *testing.T) {
	ctx, c := claimClient(t)
	p := acquireParams("job", "w1")
	p.Fingerprint = "fp"
	acq := mustAcquire(t, ctx, c, p, Acquired)
	c.Client().Persist(ctx, "job")
	rec, err := Fail(ctx, c, "job", acq.Token, "exit status 3", 30*time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	h := hash(t, ctx, c, "job")
	if h["status"] != "FAILED" || h["error"] != "exit status 3" || h["fingerprint"] != "fp" ||
		h["created"] != strconv.FormatInt(acq.Record.Created, 10) || h["attempts"] != "1" || h["owner"] != "w1" || h["token"] != strconv.FormatInt(acq.Token, 10) {
		t.Errorf("after fail: %v", h)
	}
	if rec.Status != StatusFailed || rec.Error != "exit status 3" {
		t.Errorf("returned %+v", rec)
	}
	wantTTL(t, ctx, c, "job", 30*time.Minute)

	// A redelivery retries: a newer token, attempt 2, same fingerprint and
	// created; the retention the record keeps (30m: a default never
	// shortens it, and the retry gave no --ttl).
	p2 := acquireParams("job", "w2")
	p2.Fingerprint, p2.TTL = "fp", 0
	res := mustAcquire(t, ctx, c, p2, Retry)
	if res.Token <= acq.Token || res.Attempt != 2 || res.Record.Owner != "w2" || res.Record.Fingerprint != "fp" ||
		res.Record.Created != acq.Record.Created || !res.Acquired() {
		t.Errorf("retry: %+v", res)
	}
	wantTTL(t, ctx, c, "job", 30*time.Minute)
	// A failure without a reason clears the previous attempt's.
	if rec, err = Fail(ctx, c, "job", res.Token, "", time.Hour, false); err != nil || rec.Error != "" {
		t.Fatalf("fail 2: %+v %v", rec, err)
	}
	if _, ok := hash(t, ctx, c, "job")["error"]; ok {
		t.Error("an empty error kept the previous attempt's")
	}
	second := mustAcquire(t, ctx, c, p2, Retry)
	if second.Token <= res.Token || second.Attempt != 3 {
		t.Errorf("second retry: %+v", second)
	}
	if _, err := Complete(ctx, c, "job", second.Token, nil, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
}

func mustFail(t *testing.T, ctx context.Context, c *redisconn.Conn, key string, token int64) {
	t.Helper()
	if _, err := Fail(ctx, c, key, token, "boom", time.Hour, false); err != nil {
		t.Fatal(err)
	}
}

func TestClaimRetriedStepsAreIdempotent(t *testing.T) {
	ctx, c := claimClient(t)
	tok := mustAcquire(t, ctx, c, acquireParams("job", "w1"), Acquired).Token
	first, second := "first", "second"
	if _, err := Complete(ctx, c, "job", tok, &first, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	h := hash(t, ctx, c, "job")
	// The first reply was lost; the retry succeeds and changes nothing.
	rec, err := Complete(ctx, c, "job", tok, &second, time.Hour, 0)
	if err != nil || rec.Result != "first" || !reflect.DeepEqual(h, hash(t, ctx, c, "job")) {
		t.Fatalf("re-complete: %+v %v", rec, err)
	}
	_, err = Fail(ctx, c, "job", tok, "x", time.Hour, false)
	wantCode(t, err, exit.Lost, `fail "job": the key is COMPLETED`)
	_, err = Renew(ctx, c, "job", tok, time.Minute, time.Hour)
	wantCode(t, err, exit.Lost, "the key is COMPLETED")
	wantCode(t, Release(ctx, c, "job", tok), exit.Lost, "the key is COMPLETED")
	_, err = Fail(ctx, c, "job", tok, "", time.Hour, true)
	wantCode(t, err, exit.Lost, "the key is COMPLETED")
	if !reflect.DeepEqual(h, hash(t, ctx, c, "job")) {
		t.Fatal("a lost step changed the record")
	}

	tok = mustAcquire(t, ctx, c, acquireParams("job2", "w1"), Acquired).Token
	mustFail(t, ctx, c, "job2", tok)
	h = hash(t, ctx, c, "job2")
	if rec, err := Fail(ctx, c, "job2", tok, "other", time.Hour, false); err != nil || rec.Error != "boom" {
		t.Fatalf("re-fail: %+v %v", rec, err)
	}
	if !reflect.DeepEqual(h, hash(t, ctx, c, "job2")) {
		t.Fatal("re-fail changed the record")
	}
	_, err = Complete(ctx, c, "job2", tok, nil, time.Hour, 0)
	wantCode(t, err, exit.Lost, "the key is FAILED")
	_, err = Renew(ctx, c, "job2", tok, time.Minute, time.Hour)
	wantCode(t, err, exit.Lost, "the key is FAILED")
}

func TestClaimRenew(t *testing.T) {
	ctx, c := claimClient(t)
	p := acquireParams("job", "w1")
	p.Lease, p.TTL = 200*time.Millisecond, time.Hour
	acq := mustAcquire(t, ctx, c, p, Acquired)
	time.Sleep(20 * time.Millisecond)
	tok := acq.Token
	rec, err := Renew(ctx, c, "job", tok, time.Minute, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if rec.LeaseUntil != rec.Now+60_000 || rec.LeaseUntil <= acq.Record.LeaseUntil || rec.Updated != rec.Now || rec.Created != acq.Record.Created {
		t.Errorf("renewed: %+v (acquired %+v)", rec, acq.Record)
	}
	h := hash(t, ctx, c, "job")
	if h["lease_until"] != strconv.FormatInt(rec.LeaseUntil, 10) || h["token"] != strconv.FormatInt(tok, 10) ||
		h["attempts"] != "1" || h["owner"] != "w1" || h["lease_ms"] != "60000" || h["ttl_ms"] != "7200000" {
		t.Errorf("after renew: %v", h)
	}
	wantTTL(t, ctx, c, "job", 2*time.Hour)
	// Without a lease or a retention given, a renewal keeps the ones stored
	// (the given ones just above), and restores a removed expiry.
	c.Client().Persist(ctx, "job")
	if rec, err = Renew(ctx, c, "job", tok, 0, 0); err != nil || rec.LeaseUntil != rec.Now+60_000 {
		t.Fatalf("renew with no lease given: %+v %v", rec, err)
	}
	wantTTL(t, ctx, c, "job", 2*time.Hour)
	// A retention given is set, shorter too: it was asked for.
	if _, err := Renew(ctx, c, "job", tok, time.Minute, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	wantTTL(t, ctx, c, "job", 10*time.Minute)
	// A renewed claim is busy to others well past its first lease.
	time.Sleep(250 * time.Millisecond)
	mustAcquire(t, ctx, c, acquireParams("job", "w2"), Busy)

	_, err = Renew(ctx, c, "job", tok-1, time.Minute, time.Hour)
	wantCode(t, err, exit.Lost, fmt.Sprintf(`renew "job": token %d is not current: the key is now held by token %d (owner w1)`, tok-1, tok))
	_, err = Renew(ctx, c, "absent", 1, time.Minute, time.Hour)
	wantCode(t, err, exit.Lost, `renew "absent": the key does not exist`)
	var lost *LostError
	if !errors.As(err, &lost) || lost.Record.Status != "" || lost.Record.TTLms != -2 {
		t.Errorf("lost on an absent key: %+v", lost)
	}
	if n, _ := c.Client().Exists(ctx, "absent").Result(); n != 0 {
		t.Error("a lost renew created the key")
	}
}

func TestClaimRelease(t *testing.T) {
	ctx, c := claimClient(t)
	p := acquireParams("job", "w1")
	p.Fingerprint = "fp"
	t1 := mustAcquire(t, ctx, c, p, Acquired).Token
	mustFail(t, ctx, c, "job", t1)
	t2 := mustAcquire(t, ctx, c, p, Retry).Token
	wantCode(t, Release(ctx, c, "job", t1), exit.Lost, fmt.Sprintf("token %d is not current", t1))
	if err := Release(ctx, c, "job", t2); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Client().Exists(ctx, "job").Result(); n != 0 {
		t.Fatal("release kept the record")
	}
	if err := Release(ctx, c, "job", t2); err != nil {
		t.Errorf("release of an absent key: %v", err)
	}
	// A redelivery starts afresh, with any fingerprint: attempt 1, and a
	// token newer than any the deleted record had handed out.
	p.Fingerprint = "other"
	res := mustAcquire(t, ctx, c, p, Acquired)
	if res.Token <= t2 || res.Attempt != 1 {
		t.Errorf("after release: %+v, want a token above %d", res, t2)
	}

	// fail --release deletes a PROCESSING record, and a FAILED one of its token.
	rec, err := Fail(ctx, c, "job", res.Token, "gone", time.Hour, true)
	if err != nil || rec.Status != "" || rec.TTLms != -2 {
		t.Fatalf("fail --release: %+v %v", rec, err)
	}
	if n, _ := c.Client().Exists(ctx, "job").Result(); n != 0 {
		t.Fatal("fail --release kept the record")
	}
	t4 := mustAcquire(t, ctx, c, p, Acquired).Token
	mustFail(t, ctx, c, "job", t4)
	if _, err := Fail(ctx, c, "job", t4, "", 0, true); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Client().Exists(ctx, "job").Result(); n != 0 {
		t.Fatal("fail --release kept a FAILED record")
	}
	// A stale token cannot release the new holder's claim.
	t5 := mustAcquire(t, ctx, c, p, Acquired).Token
	_, err = Fail(ctx, c, "job", t4, "", 0, true)
	wantCode(t, err, exit.Lost, fmt.Sprintf("token %d is not current: the key is now held by token %d", t4, t5))
	_, err = Fail(ctx, c, "job", t4, "", time.Hour, false)
	wantCode(t, err, exit.Lost, fmt.Sprintf("token %d is not current", t4))
	if n, _ := c.Client().Exists(ctx, "job").Result(); n != 1 {
		t.Fatal("a stale token released the claim")
	}
}

func TestClaimResultCap(t *testing.T) {
	ctx, c := claimClient(t)
	tok := mustAcquire(t, ctx, c, acquireParams("job", "w"), Acquired).Token
	big := strings.Repeat("x", 1001)
	_, err := Complete(ctx, c, "job", tok, &big, time.Hour, 1000)
	wantCode(t, err, exit.Data, `complete "job": result is 1001 bytes, over --max-result 1000`)
	if h := hash(t, ctx, c, "job"); h["status"] != "PROCESSING" {
		t.Errorf("an oversized result changed the record: %v", h)
	}
	fits := big[:1000]
	if rec, err := Complete(ctx, c, "job", tok, &fits, time.Hour, 1000); err != nil || rec.Result != fits {
		t.Fatalf("a result at the cap: %v", err)
	}
}

// Every write sets the retention, even on a key someone made persistent.
func TestClaimEveryWriteSetsTTL(t *testing.T) {
	ctx, c := claimClient(t)
	p := acquireParams("job", "w")
	p.Lease, p.TTL = 100*time.Millisecond, 3*time.Hour
	tok := mustAcquire(t, ctx, c, p, Acquired).Token
	wantTTL(t, ctx, c, "job", 3*time.Hour)
	steps := []struct {
		name string
		run  func() error
		ttl  time.Duration
	}{
		{"renew", func() error { _, err := Renew(ctx, c, "job", tok, 100*time.Millisecond, 4*time.Hour); return err }, 4 * time.Hour},
		{"renew, keeping", func() error { _, err := Renew(ctx, c, "job", tok, 0, 0); return err }, 4 * time.Hour},
		{"fail", func() error { _, err := Fail(ctx, c, "job", tok, "", 5*time.Hour, false); return err }, 5 * time.Hour},
		{"retry", func() error {
			res, err := Acquire(ctx, c, p)
			tok = res.Token
			return err
		}, 3 * time.Hour},
		{"takeover", func() error {
			time.Sleep(150 * time.Millisecond)
			res, err := Acquire(ctx, c, p)
			if err == nil && res.Outcome != Takeover {
				t.Errorf("outcome %s, want takeover", res.Outcome)
			}
			tok = res.Token
			return err
		}, 3 * time.Hour},
		{"complete", func() error { _, err := Complete(ctx, c, "job", tok, nil, 6*time.Hour, 0); return err }, 6 * time.Hour},
		{"complete again, keeping", func() error { _, err := Complete(ctx, c, "job", tok, nil, 0, 0); return err }, 6 * time.Hour},
	}
	for _, s := range steps {
		c.Client().Persist(ctx, "job")
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		wantTTL(t, ctx, c, "job", s.ttl)
	}
}
