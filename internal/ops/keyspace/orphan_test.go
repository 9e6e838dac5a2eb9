package keyspace

import (
	"context"
	"slices"
	"testing"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestOrphanState: the state of deleted streams is found whole, a dry run
// deletes nothing, and a drop deletes each state unless its stream is back.
func TestOrphanState(t *testing.T) {
	t.Parallel()
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	s, err := stream.Open(context.Background(), c, stream.ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gone", "back", "live"} {
		for _, pid := range []string{"p1", "p2"} {
			if _, err := s.Add(ctx, stream.AddOptions{}, stream.AddRequest{Stream: name, PID: pid, IID: "i", Fields: []string{"f", "v"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.Client().Del(ctx, "gone", "back").Err(); err != nil {
		t.Fatal(err)
	}
	plan, err := FindOrphanState(ctx, c, OrphanOptions{Pattern: "*"})
	if err != nil {
		t.Fatal(err)
	}
	if plan.States() != 2 || plan.Summary.Matched != int64(len(plan.Keys())) || plan.Summary.Scanned != plan.Summary.Matched+plan.Summary.Kept {
		t.Fatalf("plan: %d states, summary %+v, keys %q", plan.States(), plan.Summary, plan.Keys())
	}
	for _, k := range plan.Keys() {
		if names := idmp.StateStreams(k); !slices.Contains(names, "gone") && !slices.Contains(names, "back") {
			t.Errorf("%s is not the state of a deleted stream", k)
		}
	}

	outcomes := func(dry bool) (PurgeSummary, map[PurgeOutcome]int) {
		n := map[PurgeOutcome]int{}
		sum, err := plan.Drop(ctx, c, dry, func(it PurgeItem) { n[it.Outcome]++ })
		if err != nil {
			t.Fatal(err)
		}
		return sum, n
	}
	if sum, n := outcomes(true); n[PurgeWouldDelete] != len(plan.Keys()) || sum.Deleted != 0 {
		t.Errorf("dry run: %v, %+v", n, sum)
	}
	if left := stream.LeftoverState(ctx, c, []string{"gone", "back"}); len(left) != 2 {
		t.Fatalf("a dry run dropped state: left %q", left)
	}

	// "back" is a stream again: its state is kept as changed.
	if err := c.Client().XAdd(ctx, &redis.XAddArgs{Stream: "back", Values: []string{"f", "v"}}).Err(); err != nil {
		t.Fatal(err)
	}
	sum, n := outcomes(false)
	if n[PurgeDeleted] == 0 || n[PurgeChanged] == 0 || sum.Deleted+sum.Changed != sum.Matched {
		t.Errorf("drop: %v, %+v", n, sum)
	}
	if left := stream.LeftoverState(ctx, c, []string{"gone"}); len(left) != 0 {
		t.Errorf("left over after the drop: %q", left)
	}
	if info, err := s.Info(ctx, "live"); err != nil || info.IIDsTracked != 2 {
		t.Errorf("the live stream's state: %+v, %v", info, err)
	}
}
