package stream

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// runNativeBatch is RunBatch on the native path whatever the server: the
// MULTI/EXEC of each chunk, without resolve's refusal of native mode on a
// server that has no IDMP (there every XADD IDMP fails at EXEC, which is
// what these tests need).
func runNativeBatch(t *testing.T, s *Streams, spec BatchSpec, in BatchInput) (BatchSummary, error) {
	t.Helper()
	ctx := context.Background()
	spec.TTL, spec.Chunk, spec.Window = DefaultProgressTTL, max(spec.Chunk, 1), max(spec.Window, 1)
	layout, err := idmp.StateKeys(spec.Template.Stream, false)
	if err != nil {
		t.Fatal(err)
	}
	r := &batchRun{s: s, spec: spec, in: in, emit: func(BatchResult) error { return nil }, layout: layout,
		key: layout.Batch(spec.Template.PID, spec.ID), digest: sha256.New(), run: newRunID(),
		results: make(chan []BatchResult, 1000)}
	if err := r.start(ctx); err != nil {
		return r.sum, err
	}
	var queue []*chunk
	for from := r.sum.LastLine; ; {
		q, err := r.fill(nil, from)
		if err != nil {
			return r.sum, err
		}
		if len(q) == 0 {
			break
		}
		queue, from = append(queue, q...), q[len(q)-1].to
	}
	windows := make(chan []*chunk)
	close(windows)
	nc := &nativeBatchConn{r: r}
	defer nc.close()
	err = r.runNative(ctx, nc, queue, windows)
	return r.sum, err
}

// The native MULTI/EXEC moves the progress record only with adds that
// were written: an add that fails at EXEC (a key of another type, a
// stream gone under NOMKSTREAM, an XADD the server refuses) leaves the
// record where it stood. Before, the record's HSET ran in the same EXEC
// whatever the adds did: the lines were counted committed, and a rerun
// skipped them.
func TestNativeBatchNeverCountsAFailedAdd(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	ctx := context.Background()
	rdb := conn.Client()
	s := &Streams{Conn: conn, Mode: ModeNative}
	native := redistest.Caps(t, conn).NativeIDMP
	for _, c := range []struct {
		name    string
		setup   func(stream string)
		nomk    bool
		code    int
		skip    bool
		wantLen int64 // XLEN after (-1: no stream)
	}{
		{"a key of another type", func(k string) { rdb.Set(ctx, k, "x", 0) }, false, exit.Data, false, -1},
		{"NOMKSTREAM and no stream", func(string) {}, true, exit.NotFound, false, -1},
		// Without native IDMP, XADD ... IDMP is an invalid ID at EXEC.
		{"an XADD refused at EXEC", func(k string) { rdb.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"init", "1"}}) }, false, exit.Internal, native, 1},
	} {
		if c.skip {
			t.Logf("%s: not run (the server has native IDMP)", c.name)
			continue
		}
		stream := "s-" + strings.ReplaceAll(c.name, " ", "-")
		c.setup(stream)
		tmpl := AddRequest{Stream: stream, PID: "p", NoMkStream: c.nomk}
		_, err := runNativeBatch(t, s, BatchSpec{Template: tmpl, ID: "b", Chunk: 2}, &iidLines{lines: iids("i", 3), tmpl: tmpl})
		if exit.Code(err) != c.code {
			t.Errorf("%s: %v (exit %d), want exit %d", c.name, err, exit.Code(err), c.code)
		}
		l, _ := idmp.StateKeys(stream, false)
		if rec := rdb.HGetAll(ctx, l.Batch("p", "b")).Val(); len(rec) != 0 {
			t.Errorf("%s: the progress record counts lines that were not written: %v", c.name, rec)
		}
		if c.wantLen >= 0 {
			if n := rdb.XLen(ctx, stream).Val(); n != c.wantLen {
				t.Errorf("%s: XLEN %d, want %d", c.name, n, c.wantLen)
			}
		}
	}
}
