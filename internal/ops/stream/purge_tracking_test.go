package stream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// TestTrackedIIDs: what purge --stream would forget, per producer or all;
// on a deleted stream it is 66 and its emulated state stays (purge asks
// first): DropLeftover drops it, only while the stream is still gone.
func TestTrackedIIDs(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	s, err := NewStreams(conn, ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	add := func(stream string) {
		t.Helper()
		for _, a := range [][2]string{{"p1", "a"}, {"p1", "b"}, {"p2", "c"}} {
			if _, err := s.add1(ctx, AddRequest{Stream: stream, PID: a[0], IID: a[1], Fields: []string{"f", "v"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	add("s")
	for pid, want := range map[string]int64{"": 3, "p1": 2, "p2": 1, "nobody": 0} {
		if n, err := s.TrackedIIDs(ctx, "s", pid); err != nil || n != want {
			t.Errorf("pid %q: %d, %v; want %d", pid, n, err, want)
		}
	}

	if err := conn.Client().Del(ctx, "s").Err(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []string{"", "p1"} {
		_, err = s.TrackedIIDs(ctx, "s", pid)
		if exit.Code(err) != exit.NotFound || err.Error() != `purge --stream "s": ERR no such key` {
			t.Errorf("pid %q on a deleted stream: %v", pid, err)
		}
	}
	if left := LeftoverState(ctx, conn, []string{"s"}); len(left) != 1 {
		t.Fatalf("counting dropped the leftover state")
	}
	err = s.DropLeftover(ctx, "s")
	if exit.Code(err) != exit.NotFound || !strings.Contains(hintOf(err), "leftover emulated IDMP state was dropped") {
		t.Errorf("drop of a deleted stream's state: %v (hint %q)", err, hintOf(err))
	}
	if left := LeftoverState(ctx, conn, []string{"s"}); len(left) != 0 {
		t.Errorf("the leftover state stays: %q", left)
	}

	// Created again between the question and the drop: nothing goes.
	add("s")
	if err := s.DropLeftover(ctx, "s"); exit.Code(err) != exit.Busy {
		t.Errorf("drop with the stream back: %v", err)
	}
	if n, err := s.TrackedIIDs(ctx, "s", ""); err != nil || n != 3 {
		t.Errorf("after a refused drop: %d, %v; want 3", n, err)
	}
}

func hintOf(err error) string {
	var e *exit.Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return ""
}
