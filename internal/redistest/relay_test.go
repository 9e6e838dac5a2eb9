package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A relay forwards, and a frozen relay answers nothing (its connections
// stay open) until it is thawed, when what waited is delivered; a client
// connected directly is not affected.
func TestRelayFreeze(t *testing.T) {
	srv := New(t)
	relay := NewRelay(t, srv)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: relay.Addr, ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatalf("through the relay: %v", err)
	}
	relay.Freeze()
	start := time.Now()
	if err := rdb.Incr(ctx, "k").Err(); err == nil {
		t.Fatal("a frozen relay answered")
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("a frozen relay failed fast (%s): want a timeout, as a partition", took)
	}
	if got, err := srv.Do("GET", "k"); err != nil || got != "1" {
		t.Errorf("directly, while frozen: %q %v", got, err)
	}
	relay.Thaw()
	// The INCR that waited is delivered once thawed.
	deadline := time.Now().Add(5 * time.Second)
	for got, _ := srv.Do("GET", "k"); got != "2" && time.Now().Before(deadline); got, _ = srv.Do("GET", "k") {
		time.Sleep(5 * time.Millisecond)
	}
	if got, _ := srv.Do("GET", "k"); got != "2" {
		t.Errorf("after the thaw the held INCR did not arrive: %q", got)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Errorf("after the thaw: %v", err)
	}
	if err := relay.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Error("a closed relay answered")
	}
}
