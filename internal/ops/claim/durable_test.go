package claim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// replicated starts a primary with one replica, and a connection to the primary.
func replicated(t *testing.T) (*redistest.Server, *redistest.Server, *redisconn.Conn) {
	t.Helper()
	primary := redistest.NewWith(t, redistest.Options{})
	replica := redistest.NewReplica(t, primary)
	return primary, replica, redistest.Connect(t, primary.URL)
}

// stopReplica kills the replica and waits until the primary has dropped it.
func stopReplica(t *testing.T, primary, replica *redistest.Server) {
	t.Helper()
	replica.Kill()
	if err := primary.WaitReplicas(0, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

var (
	oneReplica = redisconn.Durability{Replicas: 1, Timeout: 5 * time.Second}
	shortWait  = redisconn.Durability{Replicas: 1, Timeout: 150 * time.Millisecond}
)

// wantUnacked checks err is the unavailable error of a write that was not
// acknowledged, holding each of texts.
func wantUnacked(t *testing.T, err error, texts ...string) {
	t.Helper()
	var na *redisconn.NotAckedError
	if exit.Code(err) != exit.Unavailable || !errors.As(err, &na) || redisconn.Retryable(err) {
		t.Fatalf("err = %v (exit %d), want an unacknowledged write (69, not retryable)", err, exit.Code(err))
	}
	for _, s := range texts {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("err = %q, want it to say %q", err, s)
		}
	}
}

func TestDurableTransitions(t *testing.T) {
	primary, replica, c := replicated(t)
	ctx := context.Background()
	var ack redisconn.Ack
	res, err := Acquire(ctx, c, acquireParams("job:1", "w1"), Durably(oneReplica, &ack))
	if err != nil || res.Outcome != Acquired || ack.Replicas != 1 {
		t.Fatalf("acquire: %+v, ack %+v, %v", res, ack, err)
	}
	if got, _ := replica.Do("HGET", "job:1", "status"); got != StatusProcessing {
		t.Fatalf("acknowledged, but the replica's status is %q", got)
	}
	if _, err := Renew(ctx, c, "job:1", res.Token, time.Minute, time.Hour, Durably(oneReplica, &ack)); err != nil || ack.Replicas != 1 {
		t.Fatalf("renew: ack %+v, %v", ack, err)
	}
	result := "done"
	if _, err := Complete(ctx, c, "job:1", res.Token, &result, time.Hour, 0, Durably(oneReplica, &ack)); err != nil || ack.Replicas != 1 {
		t.Fatalf("complete: ack %+v, %v", ack, err)
	}
	if got, _ := replica.Do("HGET", "job:1", "result"); got != "done" {
		t.Fatalf("the replica's result is %q", got)
	}

	stopReplica(t, primary, replica)

	// An acquire of a free key that is not acknowledged is released: the
	// key is absent again, and the error says so.
	start := time.Now()
	res, err = Acquire(ctx, c, acquireParams("job:2", "w1"), Durably(shortWait, &ack))
	wantUnacked(t, err, "0 of 1 replicas acknowledged the write within 150ms", fmt.Sprintf("the claim (token %d) was made on the primary", res.Token), "released")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the unacknowledged acquire took %s", took)
	}
	if res.Outcome != Acquired || res.Token < 1 || ack.Replicas != 0 {
		t.Errorf("result %+v, ack %+v", res, ack)
	}
	if n, _ := c.Client().Exists(ctx, "job:2").Result(); n != 0 {
		t.Error("the unacknowledged claim was not released")
	}

	// A retry of a FAILED record that is not acknowledged is recorded
	// FAILED again: attempts and token carry on.
	mustFail(t, ctx, c, "job:3", mustAcquire(t, ctx, c, acquireParams("job:3", "w1"), Acquired).Token)
	res, err = Acquire(ctx, c, acquireParams("job:3", "w2"), Durably(shortWait, nil))
	wantUnacked(t, err, fmt.Sprintf("token %d", res.Token), "recorded FAILED")
	if h := hash(t, ctx, c, "job:3"); h["status"] != StatusFailed || h["token"] != strconv.FormatInt(res.Token, 10) || h["attempts"] != "2" {
		t.Errorf("job:3 after an unacknowledged retry: %v", h)
	}

	// Outcomes that write nothing are not judged: busy stays busy.
	t4 := mustAcquire(t, ctx, c, acquireParams("job:4", "w1"), Acquired).Token
	res, err = Acquire(ctx, c, acquireParams("job:4", "w2"), Durably(shortWait, nil))
	if err != nil || res.Outcome != Busy {
		t.Errorf("busy: %+v, %v", res, err)
	}

	// Renew, complete, fail and release stand on the primary and say so.
	_, err = Renew(ctx, c, "job:4", t4, time.Minute, time.Hour, Durably(shortWait, nil))
	wantUnacked(t, err, "the renewal stands on the primary")
	_, err = Complete(ctx, c, "job:4", t4, nil, time.Hour, 0, Durably(shortWait, nil))
	wantUnacked(t, err, "COMPLETED stands on the primary")
	if h := hash(t, ctx, c, "job:4"); h["status"] != StatusCompleted {
		t.Errorf("job:4: %v", h)
	}
	t5 := mustAcquire(t, ctx, c, acquireParams("job:5", "w1"), Acquired).Token
	_, err = Fail(ctx, c, "job:5", t5, "x", time.Hour, false, Durably(shortWait, nil))
	wantUnacked(t, err, "FAILED stands on the primary")
	err = Release(ctx, c, "job:5", t5, Durably(shortWait, nil))
	wantUnacked(t, err, "the record was deleted on the primary")
	// A release of an absent key wrote nothing: nothing to wait for.
	if err := Release(ctx, c, "job:5", t5, Durably(shortWait, nil)); err != nil {
		t.Errorf("release of an absent key: %v", err)
	}
}

// A repeated complete (whose first reply was lost with its connection)
// is acknowledged only once the first complete is: WAIT counts the writes
// of the connection that sends it, so the repeat writes (the retention, set
// again) for its WAIT to cover the first. (Redis 7.0 counts every write
// made before the WAIT, whoever made it; the documented contract is the
// client's own writes.)
func TestDurableRepeatCoversTheFirstWrite(t *testing.T) {
	primary, replica, c := replicated(t)
	ctx := context.Background()
	tok := mustAcquire(t, ctx, c, acquireParams("job:1", "w1"), Acquired).Token
	t.Cleanup(func() { _ = replica.Thaw() })
	if err := replica.Freeze(); err != nil {
		t.Fatal(err)
	}
	if _, err := Complete(ctx, c, "job:1", tok, nil, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	other := redistest.Connect(t, primary.URL)
	rec, err := Complete(ctx, other, "job:1", tok, nil, time.Hour, 0, Durably(shortWait, nil))
	wantUnacked(t, err, "COMPLETED stands on the primary")
	if rec.Status != StatusCompleted {
		t.Errorf("record %+v", rec)
	}
	if err := replica.Thaw(); err != nil {
		t.Fatal(err)
	}
	if _, err := Complete(ctx, other, "job:1", tok, nil, time.Hour, 0, Durably(oneReplica, nil)); err != nil {
		t.Fatalf("after the thaw: %v", err)
	}
}
