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
// on a deleted stream, a dry run leaves its emulated state and a purge
// drops it, both saying the stream does not exist.
func TestTrackedIIDs(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	s, err := NewStreams(conn, ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, a := range [][2]string{{"p1", "a"}, {"p1", "b"}, {"p2", "c"}} {
		if _, err := s.add1(ctx, AddRequest{Stream: "s", PID: a[0], IID: a[1], Fields: []string{"f", "v"}}); err != nil {
			t.Fatal(err)
		}
	}
	for pid, want := range map[string]int64{"": 3, "p1": 2, "p2": 1, "nobody": 0} {
		if n, err := s.TrackedIIDs(ctx, "s", pid, false); err != nil || n != want {
			t.Errorf("pid %q: %d, %v; want %d", pid, n, err, want)
		}
	}

	if err := conn.Client().Del(ctx, "s").Err(); err != nil {
		t.Fatal(err)
	}
	_, err = s.TrackedIIDs(ctx, "s", "", true)
	if exit.Code(err) != exit.NotFound || !strings.HasPrefix(err.Error(), `purge --stream "s": `) || hintOf(err) != "" {
		t.Errorf("dry run on a deleted stream: %v (hint %q)", err, hintOf(err))
	}
	if left := LeftoverState(ctx, conn, []string{"s"}); len(left) != 1 {
		t.Fatalf("a dry run dropped the leftover state")
	}
	_, err = s.TrackedIIDs(ctx, "s", "", false)
	if exit.Code(err) != exit.NotFound || !strings.Contains(hintOf(err), "leftover emulated IDMP state, if any, was dropped") {
		t.Errorf("purge of a deleted stream: %v (hint %q)", err, hintOf(err))
	}
	if left := LeftoverState(ctx, conn, []string{"s"}); len(left) != 0 {
		t.Errorf("the leftover state stays: %q", left)
	}
}

func hintOf(err error) string {
	var e *exit.Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return ""
}
