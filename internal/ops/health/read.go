package health

import (
	"context"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
)

// ReadStreamContext gathers what the stream lints need besides the stream:
// the server's IDMP defaults (idmp's when they cannot be read), its
// eviction policy and role, and on a server with native IDMP its facts
// (the settings of known IDMP bugs), whose read failing is the error.
func ReadStreamContext(ctx context.Context, s *stream.Streams) (StreamContext, error) {
	conn := s.Conn
	d, m, err := s.ServerDefaults(ctx)
	if err != nil {
		d, m = idmp.DefaultDuration, idmp.DefaultMaxSize
	}
	ev, _ := conn.Eviction(ctx)
	sctx := StreamContext{DefaultDuration: d, DefaultMaxSize: m, Role: redisconn.Role(ctx, conn), Eviction: ev}
	// The lints for known IDMP bugs need the server's facts: native views
	// only (ServerDefaults settled the mode; inspect --mode emulated on
	// Redis 8.6 shows emulated state, which they are not about).
	if caps, err := conn.Capabilities(ctx); err == nil && caps.NativeIDMP && s.Mode() != stream.ModeEmulated {
		facts, err := redisconn.ReadServerFacts(ctx, conn)
		if err != nil {
			return StreamContext{}, err
		}
		sctx.Server = &facts
	}
	return sctx, nil
}

// ReadServerLints lints the server for known IDMP bugs: on a server with
// native IDMP (nativeIDMP, as redisconn.InspectServer found it) from its
// facts, read now; none elsewhere. Never nil.
func ReadServerLints(ctx context.Context, conn *redisconn.Conn, nativeIDMP bool) ([]Lint, error) {
	if !nativeIDMP {
		return []Lint{}, nil
	}
	facts, err := redisconn.ReadServerFacts(ctx, conn)
	if err != nil {
		return nil, err
	}
	return append([]Lint{}, Server(facts)...), nil
}
