package stream

import (
	"context"
	"slices"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"

	"github.com/idmpctl/idmpctl/internal/redistest"
)

// TestLeftoverState: a stream deleted by hand leaves its emulated state,
// which inspect names in its "no such key" hint; a name never written
// idempotently, and one whose state went with it, have none.
func TestLeftoverState(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	s, err := NewStreams(conn, ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"deleted", "{tagged}x"} {
		if _, err := s.add1(ctx, AddRequest{Stream: name, PID: "p", IID: "i", Fields: []string{"f", "v"}}); err != nil {
			t.Fatal(err)
		}
		if err := conn.Client().Del(ctx, name).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := LeftoverState(ctx, conn, []string{"deleted", "never", "{tagged}x"}); !slices.Equal(got, []string{"deleted", "{tagged}x"}) {
		t.Errorf("LeftoverState = %q, want the two deleted streams", got)
	}
	// purge --stream on the missing stream drops its state, and says the
	// stream does not exist.
	if _, err := s.ClearTracking(ctx, "deleted", ""); exit.Code(err) != exit.NotFound {
		t.Fatalf("ClearTracking of a deleted stream: %v, want not found", err)
	}
	if got := LeftoverState(ctx, conn, []string{"deleted"}); len(got) != 0 {
		t.Errorf("after its state was dropped: %q", got)
	}
}
