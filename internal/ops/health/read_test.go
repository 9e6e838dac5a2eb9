package health

import (
	"context"
	"testing"

	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// TestReadStreamContext: the facts a stream's lints take, read from the
// server under test: its defaults, role and eviction policy, and its IDMP
// bug settings exactly when it has native IDMP.
func TestReadStreamContext(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t, "maxmemory-policy allkeys-lru", "maxmemory 100mb")
	ctx := context.Background()
	s, err := stream.Open(context.Background(), conn, stream.ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	sctx, err := ReadStreamContext(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	native := redistest.Caps(t, conn).NativeIDMP
	if sctx.DefaultDuration <= 0 || sctx.DefaultMaxSize <= 0 || sctx.Role != "master" || !sctx.Eviction.Risky() || (sctx.Server != nil) != native {
		t.Errorf("context %+v (native IDMP %v)", sctx, native)
	}
	lints, err := ReadServerLints(ctx, conn, native)
	if err != nil || lints == nil {
		t.Errorf("server lints: %v, %v", lints, err)
	}
	if lints, err := ReadServerLints(ctx, conn, false); err != nil || lints == nil || len(lints) != 0 {
		t.Errorf("without native IDMP: %v, %v; want none, not nil", lints, err)
	}
}
