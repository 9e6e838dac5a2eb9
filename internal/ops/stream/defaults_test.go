package stream

import (
	"context"
	"slices"
	"testing"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// The add script asks for the server-level defaults ({'D'}) before any
// write, and only when a stream's state starts: a new stream, a stream
// whose state belongs to a deleted one (R13). The steady-state add does
// not ask.
func TestAddAsksForDefaultsBeforeWriting(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	ctx := context.Background()
	dump := func() []string {
		keys, err := conn.Client().Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(keys)
		out := keys
		for _, k := range keys {
			v, _ := conn.Client().Dump(ctx, k).Result()
			out = append(out, v)
		}
		return out
	}
	ask := func(stream string) (any, error) {
		s := streamsOf(conn, ModeEmulated, nil)
		call, _, err := emulated{s}.addCall([]AddRequest{{Stream: stream, PID: "p", IID: "i", Fields: []string{"f", "v"}}}, nil, replyOutcomes)
		if err != nil {
			t.Fatal(err)
		}
		return rawRun(call.Script, ctx, conn.Client(), call.Keys, call.Args...).Result()
	}
	// A new stream: asked, nothing written.
	before := dump()
	if v, err := ask("s"); err != nil || !slices.Equal(toStrings(v), []string{"D"}) {
		t.Fatalf("new stream: %v, %v; want {'D'}", v, err)
	}
	if after := dump(); !slices.Equal(before, after) {
		t.Fatalf("the refusal wrote: %q -> %q", before, after)
	}
	// With the defaults: written, with them in its meta.
	s := streamsOf(conn, ModeEmulated, &idmp.Defaults{Duration: 600, MaxSize: 7})
	if _, err := s.add1(ctx, AddRequest{Stream: "s", PID: "p", IID: "i", Fields: []string{"f", "v"}}); err != nil {
		t.Fatal(err)
	}
	if v, _ := conn.Client().HMGet(ctx, "{s}:idmp", "duration", "maxsize").Result(); toStrings(v)[0] != "600" || toStrings(v)[1] != "7" {
		t.Fatalf("meta settings %v, want 600 7", v)
	}
	// The steady state: no question, whatever the caller knows.
	if v, err := ask("s"); err != nil || len(toStrings(v)) != 3 {
		t.Fatalf("existing state: %v, %v; want the add's reply", v, err)
	}
	// The stream deleted and made again by another client: its old state
	// would be dropped, so it asks first, and drops nothing yet.
	if _, err := srv.Do("DEL", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("XADD", "s", "*", "x", "y"); err != nil {
		t.Fatal(err)
	}
	before = dump()
	if v, err := ask("s"); err != nil || !slices.Equal(toStrings(v), []string{"D"}) {
		t.Fatalf("recreated stream: %v, %v; want {'D'}", v, err)
	}
	if after := dump(); !slices.Equal(before, after) {
		t.Fatalf("the refusal wrote: %q -> %q", before, after)
	}
	// Add reads them by itself (one round trip more, once per process).
	s = streamsOf(conn, ModeEmulated, nil)
	if _, err := conn.Client().HSet(ctx, idmp.DefaultsKey, idmp.ParamMaxSize, "9").Result(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.add1(ctx, AddRequest{Stream: "s", PID: "p", IID: "i", Fields: []string{"f", "v"}}); err != nil || r.Duplicate {
		t.Fatalf("add to the recreated stream: %+v, %v", r, err)
	}
	if s.Defaults == nil || *s.Defaults != (idmp.Defaults{Duration: 100, MaxSize: 9}) {
		t.Fatalf("defaults read: %+v", s.Defaults)
	}
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, len(l))
	for i, e := range l {
		out[i], _ = e.(string)
	}
	return out
}
