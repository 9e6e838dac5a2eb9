package stream

import (
	"context"
	"crypto/sha256"
	"fmt"
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

func TestNextStreamID(t *testing.T) {
	for _, c := range []struct {
		id   string
		now  int64
		want string
	}{
		{"0-0", 1000, "1000-0"},
		{"999-7", 1000, "1000-0"},
		{"1000-7", 1000, "1000-8"},
		{"5000-7", 1000, "5000-8"},
		{"1000-18446744073709551615", 1000, "1001-0"},
		{"99999999999999999-3", 1000, "99999999999999999-4"},
		{"18446744073709551615-18446744073709551614", 1000, "18446744073709551615-18446744073709551615"},
		{"x", 1000, ""},
	} {
		if got := nextStreamID(c.id, c.now); got != c.want {
			t.Errorf("nextStreamID(%q, %d) = %q, want %q", c.id, c.now, got, c.want)
		}
	}
}

func TestTellNative(t *testing.T) {
	for _, c := range []struct {
		name        string
		last        string
		ids         []string
		added, dups int64
		want        []bool
		wantSure    bool
	}{
		{"all new, by the counters", "0-0", []string{"9-0", "9-1"}, 2, 0, []bool{false, false}, true},
		{"a duplicate of an earlier line", "5-3", []string{"9-0", "9-0", "9-1"}, 2, 1, []bool{false, true, false}, true},
		{"a duplicate of an older entry", "9-4", []string{"2-0", "9-5"}, 1, 1, []bool{true, false}, true},
		{"the clock behind the last ID", "20-4", []string{"20-5", "20-5", "20-6"}, 2, 1, []bool{false, true, false}, true},
		{"a duplicate looking new: not sure", "0-1", []string{"9-0"}, 0, 1, []bool{false}, false},
	} {
		got, sure := tellNative(c.last, 9, c.ids, c.added, c.dups)
		if sure != c.wantSure || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v (sure %v), want %v (sure %v)", c.name, got, sure, c.want, c.wantSure)
		}
	}
}
