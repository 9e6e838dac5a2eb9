package claim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func claimClient(t *testing.T) (context.Context, *redisconn.Conn) {
	t.Helper()
	c, _ := redistest.Conn(t)
	return context.Background(), c
}

func acquireParams(key, owner string) AcquireParams {
	return AcquireParams{Key: key, Owner: owner, Lease: time.Minute, TTL: time.Hour}
}

func mustAcquire(t *testing.T, ctx context.Context, c *redisconn.Conn, p AcquireParams, want AcquireOutcome) AcquireResult {
	t.Helper()
	res, err := Acquire(ctx, c, p)
	if err != nil {
		t.Fatalf("acquire %s by %s: %v", p.Key, p.Owner, err)
	}
	if res.Outcome != want {
		t.Fatalf("acquire %s by %s: outcome %q, want %q (record %+v)", p.Key, p.Owner, res.Outcome, want, res.Record)
	}
	return res
}

func hash(t *testing.T, ctx context.Context, c *redisconn.Conn, key string) map[string]string {
	t.Helper()
	h, err := c.Client().HGetAll(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func pttl(t *testing.T, ctx context.Context, c *redisconn.Conn, key string) time.Duration {
	t.Helper()
	d, err := c.Client().PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// wantTTL checks the key's TTL was just set to about ttl.
func wantTTL(t *testing.T, ctx context.Context, c *redisconn.Conn, key string, ttl time.Duration) {
	t.Helper()
	if got := pttl(t, ctx, c, key); got > ttl || got < ttl-5*time.Second {
		t.Errorf("%s: PTTL %v, want about %v", key, got, ttl)
	}
}

func wantCode(t *testing.T, err error, code int, contains string) {
	t.Helper()
	if got := exit.Code(err); got != code {
		t.Fatalf("error %v: code %d, want %d", err, got, code)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Errorf("error %q does not say %q", err, contains)
	}
}

func TestClaimAcquireFresh(t *testing.T) {
	ctx, c := claimClient(t)
	p := acquireParams("job:1", "w1")
	p.Fingerprint = Fingerprint([]byte("payload"))
	res := mustAcquire(t, ctx, c, p, Acquired)
	// The token comes from the server's clock in microseconds (next_token).
	if res.Token < res.Record.Now*1000 || res.Token > (res.Record.Now+1)*1000 || res.Attempt != 1 || !res.Acquired() {
		t.Errorf("token %d attempt %d acquired %v, want the server's clock in µs (%d ms), 1, true", res.Token, res.Attempt, res.Acquired(), res.Record.Now)
	}
	h := hash(t, ctx, c, "job:1")
	now := res.Record.Now
	want := map[string]string{
		"status": "PROCESSING", "owner": "w1", "token": strconv.FormatInt(res.Token, 10), "attempts": "1",
		"lease_until": strconv.FormatInt(now+60_000, 10), "lease_ms": "60000", "ttl_ms": "3600000",
		"created": strconv.FormatInt(now, 10), "updated": strconv.FormatInt(now, 10),
		"fingerprint": p.Fingerprint,
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("record\n got %v\nwant %v", h, want)
	}
	if d := time.Since(time.UnixMilli(now)); d < -time.Minute || d > time.Minute {
		t.Errorf("created %d is not the server's clock in ms", now)
	}
	wantTTL(t, ctx, c, "job:1", time.Hour)
	r := res.Record
	if r.Status != StatusProcessing || r.Owner != "w1" || r.Token != res.Token || r.LeaseUntil != now+60_000 ||
		r.LeaseMs != 60_000 || r.RetentionMs != 3_600_000 ||
		r.Fingerprint != p.Fingerprint || r.HasResult || r.TTLms <= 0 || r.LeaseLeftMs() != 60_000 {
		t.Errorf("returned record %+v", r)
	}
}

func TestClaimAcquireBusy(t *testing.T) {
	ctx, c := claimClient(t)
	mustAcquire(t, ctx, c, acquireParams("job", "w1"), Acquired)
	before := hash(t, ctx, c, "job")
	c.Client().PExpire(ctx, "job", 10*time.Hour) // busy must not touch the TTL either
	res := mustAcquire(t, ctx, c, acquireParams("job", "w2"), Busy)
	if res.Record.Owner != "w1" || res.LeaseLeftMs <= 0 || res.LeaseLeftMs > 60_000 {
		t.Errorf("busy: owner %q, %dms left", res.Record.Owner, res.LeaseLeftMs)
	}
	if res.Token != 0 || res.Attempt != 0 || res.Outcome != Busy || res.Acquired() {
		t.Errorf("busy result %+v", res)
	}
	// The same owner asking again is busy too: acquire is not reentrant.
	mustAcquire(t, ctx, c, acquireParams("job", "w1"), Busy)
	if after := hash(t, ctx, c, "job"); !reflect.DeepEqual(before, after) {
		t.Errorf("busy changed the record:\n%v\n%v", before, after)
	}
	if d := pttl(t, ctx, c, "job"); d < 9*time.Hour {
		t.Errorf("busy changed the TTL to %v", d)
	}
}

func TestClaimStaleTakeover(t *testing.T) {
	ctx, c := claimClient(t)
	p := acquireParams("job", "w1")
	p.Lease, p.Fingerprint = 150*time.Millisecond, "fp"
	t1 := mustAcquire(t, ctx, c, p, Acquired).Token
	time.Sleep(200 * time.Millisecond)

	p2 := acquireParams("job", "w2")
	p2.Fingerprint = "fp"
	res := mustAcquire(t, ctx, c, p2, Takeover)
	t2 := res.Token
	if t2 <= t1 || res.Attempt != 2 || res.PreviousOwner != "w1" || res.Record.Owner != "w2" || !res.Acquired() {
		t.Errorf("takeover: %+v", res)
	}
	h := hash(t, ctx, c, "job")
	if h["token"] != strconv.FormatInt(t2, 10) || h["attempts"] != "2" || h["owner"] != "w2" || h["fingerprint"] != "fp" || h["created"] != strconv.FormatInt(res.Record.Created, 10) {
		t.Errorf("after takeover: %v", h)
	}
	if res.Record.Created >= res.Record.Updated {
		t.Errorf("takeover rewrote created: %+v", res.Record)
	}

	// The stale worker wakes up: every step it takes is lost, nothing changes.
	res1 := "stale result"
	_, err := Complete(ctx, c, "job", t1, &res1, time.Hour, 0)
	notCurrent := fmt.Sprintf("token %d is not current", t1)
	wantCode(t, err, exit.Lost, fmt.Sprintf("%s: the key is now held by token %d (owner w2)", notCurrent, t2))
	var lost *LostError
	if !errors.As(err, &lost) || lost.Record.Token != t2 || lost.Record.Owner != "w2" {
		t.Errorf("lost error carries %+v", lost)
	}
	_, err = Renew(ctx, c, "job", t1, time.Minute, time.Hour)
	wantCode(t, err, exit.Lost, notCurrent)
	_, err = Fail(ctx, c, "job", t1, "boom", time.Hour, false)
	wantCode(t, err, exit.Lost, notCurrent)
	wantCode(t, Release(ctx, c, "job", t1), exit.Lost, notCurrent)
	if after := hash(t, ctx, c, "job"); !reflect.DeepEqual(h, after) {
		t.Errorf("a stale token changed the record:\n%v\n%v", h, after)
	}

	// The new holder completes; the old token still cannot.
	if _, err := Complete(ctx, c, "job", t2, nil, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	_, err = Complete(ctx, c, "job", t1, &res1, time.Hour, 0)
	wantCode(t, err, exit.Lost, fmt.Sprintf("%s: the key is COMPLETED, by token %d (owner w2)", notCurrent, t2))
}

func TestClaimMaxAttempts(t *testing.T) {
	ctx, c := claimClient(t)
	p := acquireParams("job", "w")
	p.MaxAttempts = 2
	mustFail(t, ctx, c, "job", mustAcquire(t, ctx, c, p, Acquired).Token)
	mustFail(t, ctx, c, "job", mustAcquire(t, ctx, c, p, Retry).Token)
	before := hash(t, ctx, c, "job")
	res := mustAcquire(t, ctx, c, p, Exhausted)
	if res.Outcome != Exhausted || res.Acquired() || res.Record.Attempts != 2 || res.Token != 0 {
		t.Errorf("exhausted: %+v", res)
	}
	if !reflect.DeepEqual(before, hash(t, ctx, c, "job")) {
		t.Error("exhausted changed the record")
	}
	// A higher limit, or none, lets it go on.
	p.MaxAttempts = 3
	last := mustAcquire(t, ctx, c, p, Retry).Token
	mustFail(t, ctx, c, "job", last)
	p.MaxAttempts = 0
	for attempt := int64(4); attempt <= 6; attempt++ {
		res := mustAcquire(t, ctx, c, p, Retry)
		if res.Token <= last || res.Attempt != attempt {
			t.Fatalf("unlimited retry: token %d after %d, attempt %d, want a greater token and attempt %d", res.Token, last, res.Attempt, attempt)
		}
		last = res.Token
		mustFail(t, ctx, c, "job", last)
	}
}

func TestClaimFingerprintMismatch(t *testing.T) {
	ctx, c := claimClient(t)
	with := func(owner, fp string) AcquireParams {
		p := acquireParams("job", owner)
		p.Fingerprint = fp
		return p
	}
	first := mustAcquire(t, ctx, c, with("w1", Fingerprint([]byte("a"))), Acquired).Token
	check := func(status string) {
		t.Helper()
		before := hash(t, ctx, c, "job")
		res := mustAcquire(t, ctx, c, with("w2", Fingerprint([]byte("b"))), Mismatch)
		if res.Outcome != Mismatch || res.Acquired() || res.Record.Fingerprint != Fingerprint([]byte("a")) || res.Record.Status != status {
			t.Errorf("%s mismatch: %+v", status, res)
		}
		if !reflect.DeepEqual(before, hash(t, ctx, c, "job")) {
			t.Errorf("%s: mismatch changed the record", status)
		}
	}
	check(StatusProcessing)
	mustAcquire(t, ctx, c, with("w2", ""), Busy) // no fingerprint given: no check
	mustFail(t, ctx, c, "job", first)
	check(StatusFailed)
	retry := mustAcquire(t, ctx, c, with("w2", Fingerprint([]byte("a"))), Retry).Token
	if _, err := Complete(ctx, c, "job", retry, nil, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	check(StatusCompleted)

	// A record claimed without a fingerprint adopts the first one given.
	p := acquireParams("bare", "w1")
	mustFail(t, ctx, c, "bare", mustAcquire(t, ctx, c, p, Acquired).Token)
	p.Fingerprint = "late"
	mustAcquire(t, ctx, c, p, Retry)
	if fp := hash(t, ctx, c, "bare")["fingerprint"]; fp != "late" {
		t.Errorf("fingerprint %q, want late", fp)
	}
}

func TestClaimFingerprint(t *testing.T) {
	if got := Fingerprint([]byte("abc")); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("Fingerprint(abc) = %s", got)
	}
}

func TestClaimNotARecordIsNeverWritten(t *testing.T) {
	ctx, c := claimClient(t)
	setups := map[string]func(key string){
		"string":         func(k string) { c.Client().Set(ctx, k, "PROCESSING", time.Hour) },
		"json string":    func(k string) { c.Client().Set(ctx, k, `{"status":"PROCESSING","owner":"c-1"}`, 0) },
		"list":           func(k string) { c.Client().RPush(ctx, k, "a") },
		"set":            func(k string) { c.Client().SAdd(ctx, k, "a") },
		"zset":           func(k string) { c.Client().ZAdd(ctx, k, redis.Z{Score: 1, Member: "a"}) },
		"stream":         func(k string) { c.Client().XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"f", "v"}}) },
		"hash no status": func(k string) { c.Client().HSet(ctx, k, "owner", "x", "token", "1") },
		"hash state":     func(k string) { c.Client().HSet(ctx, k, "state", "STARTED") },
		"hash status":    func(k string) { c.Client().HSet(ctx, k, "status", "DONE", "token", "1") },
		"hash no token":  func(k string) { c.Client().HSet(ctx, k, "status", "FAILED") },
		"hash token 0":   func(k string) { c.Client().HSet(ctx, k, "status", "FAILED", "token", "0") },
		"hash bad token": func(k string) { c.Client().HSet(ctx, k, "status", "COMPLETED", "token", "1.5") },
		"no lease_until": func(k string) { c.Client().HSet(ctx, k, "status", "PROCESSING", "token", "1", "owner", "x") },
	}
	verbs := map[string]func(key string) error{
		"acquire": func(k string) error {
			p := acquireParams(k, "w")
			p.Fingerprint = "fp"
			_, err := Acquire(ctx, c, p)
			return err
		},
		"renew":    func(k string) error { _, err := Renew(ctx, c, k, 1, time.Minute, time.Hour); return err },
		"complete": func(k string) error { s := "r"; _, err := Complete(ctx, c, k, 1, &s, time.Hour, 0); return err },
		"fail":     func(k string) error { _, err := Fail(ctx, c, k, 1, "e", time.Hour, false); return err },
		"fail --release": func(k string) error {
			_, err := Fail(ctx, c, k, 1, "", time.Hour, true)
			return err
		},
		"release": func(k string) error { return Release(ctx, c, k, 1) },
	}
	for name, setup := range setups {
		key := "foreign:" + name
		setup(key)
		dump, err := c.Client().Dump(ctx, key).Result()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ttl := pttl(t, ctx, c, key)
		for verb, run := range verbs {
			err := run(key)
			if exit.Code(err) != exit.Data || !errors.Is(err, ErrNotRecord) {
				t.Errorf("%s on %s: %v (code %d), want not a claim record (65)", verb, name, err, exit.Code(err))
			}
		}
		after, _ := c.Client().Dump(ctx, key).Result()
		if after != dump || pttl(t, ctx, c, key) > ttl {
			t.Errorf("%s: the key was modified", name)
		}
	}
	_, err := Renew(ctx, c, "foreign:list", 1, time.Minute, time.Hour)
	wantCode(t, err, exit.Data, `renew "foreign:list": not a claim record: the key holds a list`)
	_, err = Renew(ctx, c, "foreign:hash status", 1, time.Minute, time.Hour)
	wantCode(t, err, exit.Data, `status "DONE" is not PROCESSING, COMPLETED or FAILED`)
	_, err = Renew(ctx, c, "foreign:no lease_until", 1, time.Minute, time.Hour)
	wantCode(t, err, exit.Data, "a PROCESSING hash without a valid lease_until")
}

func TestClaimConcurrentAcquire(t *testing.T) {
	ctx, c := claimClient(t)
	const workers = 16
	results := make([]AcquireResult, workers)
	errs := make([]error, workers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = Acquire(ctx, c, acquireParams("hot", "w"+strconv.Itoa(i)))
		}()
	}
	close(start)
	wg.Wait()
	winner, token, busy := "", int64(0), 0
	for i, res := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		switch res.Outcome {
		case Acquired:
			if winner != "" {
				t.Fatalf("two acquired: %s and w%d", winner, i)
			}
			winner, token = res.Record.Owner, res.Token
		case Busy:
			busy++
		default:
			t.Errorf("w%d: %s", i, res.Outcome)
		}
	}
	if winner == "" || busy != workers-1 {
		t.Fatalf("winner %q, %d busy", winner, busy)
	}
	for _, res := range results {
		if res.Record.Owner != winner || res.Record.Token != token {
			t.Errorf("%s saw owner %s token %d, want %s %d", res.Outcome, res.Record.Owner, res.Record.Token, winner, token)
		}
	}
}

func TestClaimValidationNeedsNoServer(t *testing.T) {
	ctx, c := claimClient(t)
	p := acquireParams("job", "w")
	cases := map[string]struct {
		mutate func(*AcquireParams)
		says   string
	}{
		"lease > ttl":  {func(p *AcquireParams) { p.Lease, p.TTL = 5*time.Minute, time.Minute }, "--lease (5m) is longer than --ttl (1m): "},
		"no lease":     {func(p *AcquireParams) { p.Lease = 0 }, "--lease (0s) must be at least 1ms"},
		"sub-ms lease": {func(p *AcquireParams) { p.Lease = time.Microsecond }, "--lease (1µs) must be at least 1ms"},
		"no ttl":       {func(p *AcquireParams) { p.TTL = -time.Second }, "--ttl (-1s) must be at least 1ms"},
		"empty key":    {func(p *AcquireParams) { p.Key = "" }, "the key is empty"},
		"empty owner":  {func(p *AcquireParams) { p.Owner = "" }, "--owner is empty"},
		"max attempts": {func(p *AcquireParams) { p.MaxAttempts = -1 }, "--max-attempts is -1"},
	}
	for name, tc := range cases {
		q := p
		tc.mutate(&q)
		_, err := Acquire(ctx, c, q)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		wantCode(t, err, exit.Usage, tc.says)
		if q.Validate() == nil {
			t.Errorf("%s: Validate accepted", name)
		}
	}
	if err := p.Validate(); err != nil {
		t.Errorf("valid params: %v", err)
	}
	_, err := Renew(ctx, c, "job", 0, time.Minute, time.Hour)
	wantCode(t, err, exit.Usage, "--token is 0")
	_, err = Renew(ctx, c, "job", 1, 2*time.Hour, time.Hour)
	wantCode(t, err, exit.Usage, "--lease (2h) is longer than --ttl (1h)")
	_, err = Complete(ctx, c, "job", 1, nil, -time.Second, 0)
	wantCode(t, err, exit.Usage, "--ttl (-1s)")
	_, err = Renew(ctx, c, "job", 1, -time.Second, 0)
	wantCode(t, err, exit.Usage, "--lease (-1s)")
	_, err = Fail(ctx, c, "", 1, "", time.Hour, false)
	wantCode(t, err, exit.Usage, "the key is empty")
	wantCode(t, Release(ctx, c, "job", -3), exit.Usage, "--token is -3")
	if n, _ := c.Client().DBSize(ctx).Result(); n != 0 {
		t.Errorf("validation failures wrote %d keys", n)
	}
}

func TestClaimScriptsSurviveScriptFlush(t *testing.T) {
	ctx, c := claimClient(t)
	mustAcquire(t, ctx, c, acquireParams("a", "w"), Acquired)
	c.Client().ScriptFlush(ctx)
	mustAcquire(t, ctx, c, acquireParams("b", "w"), Acquired) // EVALSHA falls back to EVAL
}
