package stream

import (
	"context"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// TestAddRetrying: an add sent across a partition longer than the
// connection's timeout goes again and lands once: the first send, delivered
// when the relay thaws, and its repeat are one entry (the repeat is its
// duplicate, or the first).
func TestAddRetrying(t *testing.T) {
	t.Parallel()
	srv := redistest.New(t)
	relay := redistest.NewRelay(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := redistest.Dial(ctx, redisconn.ConnConfig{URL: relay.URL, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s, err := NewStreams(conn, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	req := AddRequest{Stream: "s", PID: "p", IID: "i1", Fields: []string{"f", "v"}}
	if _, err := s.add1(ctx, AddRequest{Stream: "s", PID: "p", IID: "i0", Fields: []string{"f", "v"}}); err != nil {
		t.Fatal(err)
	}
	relay.Freeze()
	thawed := make(chan struct{})
	go func() { time.Sleep(time.Second); relay.Thaw(); close(thawed) }()
	retries := 0
	res, err := s.addRetrying(ctx, req, redisconn.Durability{}, 20, func(int, error) { retries++ })
	<-thawed
	if err != nil || retries == 0 {
		t.Fatalf("AddRetrying across a partition: %+v, %v (%d retries)", res, err, retries)
	}
	direct := redistest.Connect(t, srv.URL)
	if n, err := direct.Client().XLen(ctx, "s").Result(); err != nil || n != 2 {
		t.Errorf("XLEN %d, %v: want the two adds, each once", n, err)
	}
	again, err := s.add1(ctx, req)
	if err != nil || !again.Duplicate || again.ID != res.ID {
		t.Errorf("the add again: %+v, %v; want a duplicate of %s", again, err, res.ID)
	}
}
