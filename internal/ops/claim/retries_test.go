package claim

import (
	"context"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// TestRetrySafety is the one place that decides which transitions
// Retries repeats after a network error: those whose repeat by the same
// token is recognised.
func TestRetrySafety(t *testing.T) {
	steps := map[string]func() (step, error){
		"acquire": func() (step, error) {
			return acquireStep(AcquireParams{Key: "k", Owner: "o", Lease: time.Minute}, Entry{})
		},
		"renew":        func() (step, error) { return renewStep("k", 1, 0, 0) },
		"complete":     func() (step, error) { return completeStep("k", 1, nil, 0, 0, Entry{}) },
		"fail":         func() (step, error) { return failStep("k", 1, "e", 0, false) },
		"fail-release": func() (step, error) { return failStep("k", 1, "", 0, true) },
		"release":      func() (step, error) { return releaseStep("k", 1) },
	}
	want := map[string]bool{"renew": true, "complete": true, "fail": true}
	for name, mk := range steps {
		st, err := mk()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.retrySafe != want[name] {
			t.Errorf("%s: retrySafe %v, want %v", name, st.retrySafe, want[name])
		}
	}
}

// TestRetriesAfterNetworkError runs the decision on a real server behind a
// relay frozen for longer than the connection's timeout: a renew with
// Retries goes again and succeeds once the relay thaws; a release is sent
// once and reports the network error, though its one send went through.
func TestRetriesAfterNetworkError(t *testing.T) {
	t.Parallel()
	srv := redistest.New(t)
	relay := redistest.NewRelay(t, srv)
	direct := redistest.Connect(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := redistest.Dial(ctx, redisconn.ConnConfig{URL: relay.URL, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res, err := Acquire(ctx, direct, AcquireParams{Key: "k", Owner: "w", Lease: time.Minute})
	if err != nil || !res.Acquired() {
		t.Fatalf("acquire: %+v, %v", res, err)
	}
	if _, err := Renew(ctx, conn, "k", res.Token, 0, 0); err != nil { // a live connection through the relay
		t.Fatal(err)
	}

	relay.Freeze()
	thawed := make(chan struct{})
	go func() { time.Sleep(time.Second); relay.Thaw(); close(thawed) }()
	if _, err := Renew(ctx, conn, "k", res.Token, 0, 0, Retries(20)); err != nil {
		t.Errorf("renew with Retries across a partition: %v", err)
	}
	<-thawed

	relay.Freeze()
	err = Release(ctx, conn, "k", res.Token, Retries(20))
	relay.Thaw()
	if exit.Code(err) != exit.Unavailable {
		t.Errorf("release with Retries across a partition: %v (exit %d), want the network error, not a repeat", err, exit.Code(err))
	}
}
