package stream

import (
	"context"
	"strconv"
	"testing"

	"github.com/idmpctl/idmpctl/internal/redistest"
)

// flushAt is an input that empties the server's script cache when the batch
// reads line at: the sends on the wire after it meet NOSCRIPT.
type flushAt struct {
	iidLines
	at  int64
	srv *redistest.Server
	t   *testing.T
}

func (in *flushAt) Next() (int64, []byte, error) {
	n, raw, err := in.iidLines.Next()
	if n == in.at {
		if _, ferr := in.srv.Do("SCRIPT", "FLUSH"); ferr != nil {
			in.t.Error(ferr)
		}
	}
	return n, raw, err
}

// A batch whose script the server forgets mid-run (SCRIPT FLUSH, as after a
// restart) retries on a new pipe, which loads it again: every line once, in
// order.
func TestBatchScriptFlushed(t *testing.T) {
	for _, mode := range []Mode{ModeEmulated, ModeNative} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			opts := redistest.Options{}
			if mode == ModeNative {
				opts.Binary = redistest.RequireNative(t)
			}
			testBatchScriptFlushed(t, redistest.NewWith(t, opts), mode)
		})
	}
}

func testBatchScriptFlushed(t *testing.T, srv *redistest.Server, mode Mode) {
	c := redistest.Connect(t, srv.URL)
	s, err := NewStreams(c, mode)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	retries := 0
	spec := BatchSpec{Template: AddRequest{Stream: "s", PID: "p"}, ID: "b", Chunk: 50, Window: 2, Retries: 3,
		OnRetry: func(int, error) { retries++ }}
	in := &flushAt{iidLines: iidLines{lines: iids("i", n), tmpl: spec.Template}, at: n / 2, srv: srv, t: t}
	var lines []int64
	sum, err := s.RunBatch(context.Background(), spec, in, func(r BatchResult) error {
		lines = append(lines, r.Line)
		return nil
	})
	if err != nil || sum.Lines != n || sum.Added != n || len(lines) != n {
		t.Fatalf("batch: %+v, %d results, %v", sum, len(lines), err)
	}
	for i, l := range lines {
		if l != int64(i+1) {
			t.Fatalf("result %d is line %d", i, l)
		}
	}
	if xlen, _ := srv.Do("XLEN", "s"); xlen != strconv.Itoa(n) {
		t.Errorf("XLEN %s, want %d", xlen, n)
	}
	// The chunk holding line at is sent after the flush: it met NOSCRIPT.
	if retries == 0 {
		t.Error("no retry: the flush was not met")
	}
}
