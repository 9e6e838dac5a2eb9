package stream

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// Native-only behaviour beyond the shared rules. They run on a Redis 8.6
// server of their own (redistest.NewNative): the server under test when it
// has IDMP, the cached 8.6.3 build beside it otherwise (make test fails
// rather than skips without one).

func nativeHarness(t *testing.T) *streamHarness {
	t.Helper()
	srv := redistest.NewNative(t)
	conn := redistest.Connect(t, srv.URL)
	if !redistest.Caps(t, conn).NativeIDMP {
		t.Fatalf("%s %s from %s has no native IDMP", redistest.Caps(t, conn).Product, redistest.Caps(t, conn).Version, redistest.NativeBinary())
	}
	s, err := NewStreams(conn, ModeAuto)
	if err != nil || s.Mode() != ModeNative {
		t.Fatalf("auto on a native server: %v, %v", s, err)
	}
	return newHarness(t, s, srv.URL)
}

// xcfgsetCalls reads how many XCFGSET the server has run.
func xcfgsetCalls(t *testing.T, h *streamHarness) int64 {
	t.Helper()
	stats := redisconn.ParseInfo(h.rdb.Info(h.ctx, "commandstats").Val())["cmdstat_xcfgset"]
	for _, kv := range strings.Split(stats, ",") {
		if v, ok := strings.CutPrefix(kv, "calls="); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func TestNativeCfgSetSameValuesSendsNothing(t *testing.T) {
	t.Parallel()
	h := nativeHarness(t)
	s := h.key("s")
	h.mustNew(t, s, "p1", "a")
	before := xcfgsetCalls(t, h)
	if r := h.cfgset(t, s, 100, 100); r.Changed {
		t.Fatalf("same values: %+v", r)
	}
	if after := xcfgsetCalls(t, h); after != before {
		t.Fatalf("XCFGSET calls %d -> %d for an unchanged setting", before, after)
	}
	if r := h.cfgset(t, s, 60, 0); !r.Changed || r.ClearedIIDs != 1 || xcfgsetCalls(t, h) != before+1 {
		t.Fatalf("a change: %+v", r)
	}
}

// TestNativeAndEmulatedStateAreNamed: inspect never mixes modes silently.
func TestNativeAndEmulatedStateAreNamed(t *testing.T) {
	t.Parallel()
	h := nativeHarness(t)
	emu, err := NewStreams(h.s.Conn, ModeEmulated)
	if err != nil {
		t.Fatal(err)
	}
	s := h.key("s")
	if _, err := emu.add1(h.ctx, AddRequest{Stream: s, PID: "p", IID: "e", Fields: []string{"f", "v"}}); err != nil {
		t.Fatal(err)
	}
	if i := h.info(t, s); i.Mode != "native" || i.OtherMode != "emulated" {
		t.Fatalf("native view of emulated state: %+v", i)
	}
	h.mustNew(t, s, "p", "n")
	if i, err := emu.Info(h.ctx, s); err != nil || i.Mode != "emulated" || i.OtherMode != "native" {
		t.Fatalf("emulated view of native state: %+v, %v", i, err)
	}
}

// TestNativeBatchCountsOnlyWrittenAdds: on a server with IDMP, a batch
// whose stream is a key of another type, or missing under NOMKSTREAM:
// nothing is written, and the progress record counts nothing (the stream
// and the record are WATCHed and checked before each chunk's MULTI).
// Before, the record's HSET ran in the same EXEC as the failed adds.
func TestNativeBatchCountsOnlyWrittenAdds(t *testing.T) {
	t.Parallel()
	h := nativeHarness(t)
	ctx := context.Background()
	for _, nomk := range []bool{false, true} {
		stream := h.key("s" + strconv.FormatBool(nomk))
		if !nomk {
			h.rdb.Set(ctx, stream, "x", 0)
		}
		tmpl := AddRequest{Stream: stream, PID: "p", NoMkStream: nomk}
		_, err := h.s.RunBatch(ctx, BatchSpec{Template: tmpl, ID: "b", Chunk: 10, Window: 1},
			&iidLines{lines: iids("i", 50), tmpl: tmpl}, func(BatchResult) error { return nil })
		want := exit.Data
		if nomk {
			want = exit.NotFound
		}
		if exit.Code(err) != want {
			t.Errorf("NOMKSTREAM %v: %v, want exit %d", nomk, err, want)
		}
		l, _ := idmp.StateKeys(stream, false)
		if rec := h.rdb.HGetAll(ctx, l.Batch("p", "b")).Val(); len(rec) != 0 {
			t.Errorf("NOMKSTREAM %v: the progress record counts lines that were not written: %v", nomk, rec)
		}
	}
}
