package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/idmpctl/idmpctl/internal/batch"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/redisconn"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/stream"
)

// batchChunk is how many adds go in one round trip (one script call when
// emulated, one pipeline when native). Memory is bounded by it.
const batchChunk = 256

// chunkFor bounds a chunk by the stream's IDMP-MAXSIZE. A retry re-sends
// the whole unconfirmed chunk, and it dedupes only if every add of it is
// still tracked: a chunk of more than MAXSIZE adds that the server ran before
// the connection failed would otherwise be written twice. A stream that does
// not exist yet gets the server defaults.
func chunkFor(ctx context.Context, streams *stream.Streams, name string) int {
	maxsize := int64(idmp.DefaultMaxSize)
	if info, err := streams.Info(ctx, name); err == nil && info.IDMPMaxSize > 0 {
		maxsize = info.IDMPMaxSize
	} else if _, n, err := streams.ServerDefaults(ctx); err == nil && n > 0 {
		maxsize = n
	}
	return int(min(batchChunk, maxsize))
}

type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil }

// batchRun streams NDJSON adds in chunks and prints each result in order.
type batchRun struct {
	o        *XAddOptions
	streams  *stream.Streams
	p        *render.Printer
	chunk    int // adds per round trip: see chunkFor
	reqs     []stream.AddRequest
	lines    []int
	written  int // lines whose result was printed
	added    int
	dups     int
	lastLine int
}

func xaddBatchRun(ctx context.Context, o *XAddOptions) error {
	in, err := openBatch(o.Factory, o.Batch)
	if err != nil {
		return err
	}
	defer in.Close()
	streams, err := openStreams(ctx, o.Factory, o.Mode)
	if err != nil {
		return err
	}
	chunk := chunkFor(ctx, streams, o.Stream)
	b := &batchRun{o: o, streams: streams, p: o.Factory.Printer, chunk: chunk,
		reqs: make([]stream.AddRequest, 0, chunk), lines: make([]int, 0, chunk)}
	r := batch.NewReader(in, o.Auto)
	r.Skip = o.Skip
	for {
		line, n, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if ferr := b.flush(ctx); ferr != nil {
				return ferr
			}
			b.summary()
			var le *batch.LineError
			if errors.As(err, &le) {
				return &exit.Error{Code: exit.Data, What: "xadd --batch " + o.Batch, Err: le,
					Hint: resumeHint(b.written, le.Line-1, chunk)}
			}
			return exit.Wrap(err, "xadd --batch: read "+o.Batch)
		}
		b.reqs = append(b.reqs, o.request(line.IID, line.Fields))
		b.lines = append(b.lines, n)
		b.lastLine = n
		if len(b.reqs) == b.chunk {
			if err := b.flush(ctx); err != nil {
				b.summary()
				return err
			}
		}
	}
	err = b.flush(ctx)
	b.summary()
	return err
}

// flush sends the pending adds, retrying what is unconfirmed after a
// network error, and prints the confirmed results in order.
func (b *batchRun) flush(ctx context.Context) error {
	retried := false
	err := redisconn.WithRetries(ctx, b.o.Factory.Global.Retries, func() error {
		res, err := b.streams.AddBatch(ctx, b.reqs)
		b.print(res, retried)
		b.reqs, b.lines = b.reqs[len(res):], b.lines[len(res):]
		var be *stream.BatchError
		if errors.As(err, &be) {
			return be.Err
		}
		return err
	}, func(attempt int, err error) {
		retried = true
		b.p.Warnf("xadd --batch: line %d: %v: retrying (%d of %d)", b.lines[0], err, attempt, b.o.Factory.Global.Retries)
	})
	if err != nil {
		line := b.lastLine
		if len(b.lines) > 0 {
			line = b.lines[0]
		}
		e := exit.Wrap(err, fmt.Sprintf("xadd --batch %s: line %d", b.o.Batch, line))
		return exit.WithHint(e, resumeHint(b.written, line-1, b.chunk))
	}
	b.reqs, b.lines = b.reqs[:0], b.lines[:0]
	return nil
}

// resumeHint says how to go on after a stop. Re-sending lines that were
// written dedupes only while their iids are still tracked (the newest
// IDMP-MAXSIZE per pid, within IDMP-DURATION), so the safe way on is --skip;
// re-sending the last few is harmless.
func resumeHint(written, before, chunk int) string {
	return fmt.Sprintf("%d lines were written before it; when it is fixed, go on with --skip %d (re-sending up to %d lines before that dedupes; a whole large file may not, as only the newest IDMP-MAXSIZE iids per pid are remembered)",
		written, before, chunk)
}

func (b *batchRun) print(res []stream.AddResult, retried bool) {
	for i, r := range res {
		line := b.lines[i]
		switch b.p.Format {
		case render.JSON:
			_ = b.p.JSON(toAddJSON(b.o, r, line, retried))
		default:
			outcome := "added"
			if r.Duplicate {
				outcome = "duplicate"
			}
			b.p.Line("%s\t%s", r.ID, outcome)
		}
		if r.Duplicate {
			b.dups++
		} else {
			b.added++
		}
		b.written++
	}
	if b.p.ErrTTY && len(res) > 0 {
		fmt.Fprintf(b.p.Err, "\r%d lines", b.written)
	}
}

func (b *batchRun) summary() {
	if b.p.ErrTTY && b.written > 0 {
		fmt.Fprint(b.p.Err, "\r")
	}
	b.p.Status("xadd --batch: %d lines: %d added, %d duplicates (%s)", b.written, b.added, b.dups, b.streams.Mode)
}
