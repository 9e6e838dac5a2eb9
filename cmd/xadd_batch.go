package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/idmpctl/idmpctl/internal/batch"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/progress"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
)

// openBatch opens the --batch input: a file and what Stat says of it, or
// stdin for "-" (nil: nothing is known of it).
func openBatch(f *Factory, name string) (io.ReadCloser, os.FileInfo, error) {
	if name == "-" {
		return io.NopCloser(f.In), nil, nil
	}
	file, err := os.Open(name)
	if err != nil {
		return nil, nil, inputError("--batch", err)
	}
	st, err := file.Stat()
	if err == nil && st.IsDir() {
		file.Close()
		return nil, nil, exit.New(exit.NotFound, "--batch", "%s is a directory, not a file of NDJSON lines", name)
	}
	return file, st, nil
}

// countingReader counts the bytes read (another goroutine reads the count)
// for the progress against a file's size, ahead of the committed lines by
// a chunk window and a buffer at most.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// haltReader's Read ends once halt is closed, even one waiting for a
// stalled producer (left to the process's exit): a signal ends the run
// before its first chunk as after it.
type haltReader struct {
	r    io.Reader
	halt <-chan struct{}
}

func (h haltReader) Read(b []byte) (int, error) {
	type read struct {
		n   int
		err error
	}
	done := make(chan read, 1)
	select {
	case <-h.halt:
		return 0, errHalted
	default:
	}
	go func() {
		n, err := h.r.Read(b)
		done <- read{n, err}
	}()
	select {
	case r := <-done:
		return r.n, r.err
	case <-h.halt:
		return 0, errHalted
	}
}

var errHalted = errors.New("stopped by a signal")

// batchInput feeds stream.RunBatch from the NDJSON reader.
type batchInput struct {
	o     *XAddOptions
	r     *batch.Reader
	first *rawLine // read ahead for the default batch ID (stream.DefaultBatchID)
	file  bool     // a regular file: reading never waits for a writer
}

type rawLine struct {
	n   int
	raw []byte
	err error
}

func (in *batchInput) Next() (int64, []byte, error) {
	if l := in.first; l != nil {
		in.first = nil
		return int64(l.n), l.raw, l.err
	}
	n, raw, err := in.r.Raw()
	return int64(n), raw, err
}

func (in *batchInput) Ready() bool { return in.file || in.first != nil || in.r.Buffered() }

func (in *batchInput) Parse(n int64, raw []byte, req *stream.AddRequest) (bool, error) {
	l, ok, err := in.r.Parse(int(n), raw)
	if err != nil || !ok {
		return false, err
	}
	*req = in.o.request(l.IID, l.Fields)
	if l.HasPID {
		req.PID = l.PID
	}
	return true, nil
}

func xaddBatchRun(ctx context.Context, o *XAddOptions) error {
	f := o.Factory
	// A first signal sends no more chunks, and the run prints the results
	// of those sent before it exits; a second stops it at once.
	halt := make(chan struct{})
	ctx, stop := untilInterrupted(f, ctx, func(s os.Signal) {
		within := "--timeout " + f.Global.Timeout.String()
		if d := o.Durable.durability(); d.On() {
			within += " plus the replicas' wait, " + d.Timeout.String()
		}
		f.Printer.Warnf("xadd --batch: %s: sending no more lines; waiting for the results of those sent (within %s; a second signal stops at once)", sigName(s), within)
		close(halt)
	})
	defer stop()
	file, fi, err := openBatch(f, o.Batch)
	if err != nil {
		return err
	}
	defer file.Close()
	read := &countingReader{r: haltReader{file, halt}}
	in := &batchInput{o: o, r: batch.NewReader(read, o.Auto)}
	var size int64 // a regular file's bytes: the progress line's 100%
	if fi != nil && fi.Mode().IsRegular() {
		in.file, size = true, fi.Size()
	}
	id := o.BatchID
	if id == "" {
		n, raw, err := in.r.Raw()
		in.first = &rawLine{n: n, raw: append([]byte(nil), raw...), err: err}
		id = stream.DefaultBatchID(o.Batch, in.first.raw)
	}
	streams, err := openStreams(ctx, f, o.Mode)
	if err != nil {
		return err
	}
	p := f.Printer
	warnEviction(ctx, p, streams.Conn, true)
	spec := stream.BatchSpec{
		Template: o.request("", nil), ID: id, Resume: o.Resume,
		SkipSet: o.SkipSet, Skip: int64(o.Skip), TTL: o.ProgressTTL, Retries: f.Global.Retries,
		Durability: o.Durable.durability(), Stop: halt,
		OnRetry: func(attempt int, err error) {
			if attempt == 0 {
				p.Warnf("xadd --batch: the stream's cluster slot is moving (%v): waiting for the migration (at most --timeout %s), then going on after the last committed line", err, f.Global.Timeout)
				return
			}
			p.Warnf("xadd --batch: %s: retrying (%d of %d)", netWords(err, f.Global.Timeout), attempt, f.Global.Retries)
		},
	}
	// The chunks in flight (16 on the wire, 12 read ahead: some 10 MB of
	// short lines) are the live heap: under bulkGC's 40 MiB the collector
	// ran about twice as often, a fifth of the client's CPU, which on a
	// shared machine is the server's idle time (measured on 1,000,000
	// lines: 0.67 s of CPU, 0.55 s at 64 MiB; peak RSS 47 and 70 MB).
	defer bulkGC(f.Getenv, 64<<20)()
	// linesOut: every line prints a result on stdout.
	bar, stopProgress := startProgress(p, true, progress.Options{Label: "xadd --batch", Unit: "lines", Total: size})
	defer stopProgress()
	// Results are buffered (a write per line would cost more than the add)
	// and written out once each chunk is committed: a consumer reading a
	// pipe sees every line as soon as it is in the stream, not at EOF.
	flush := p.BufferStream()
	spec.Delivered = func() error {
		if bw, ok := p.Out.(*bufio.Writer); ok {
			_ = bw.Flush() // a reader gone is the next write's business
		}
		return nil
	}
	var committed int64
	line := &view.BatchLine{Add: view.Add{Stream: o.Stream, PID: o.PID, Auto: o.Auto, Durability: o.Durable.durability()}}
	sum, err := streams.RunBatch(ctx, spec, in, func(r stream.BatchResult) error {
		line.Set(r)
		_ = p.Show(line) // a reader gone is the run's business (the output's first write error)
		committed++
		bar.Set(committed, read.n.Load())
		return nil
	})
	flush()
	stopProgress()
	if exit.Code(err) != exit.Usage {
		// A usage error (--skip past the end of the input) comes before
		// any line is read for adding: no summary of a batch that never ran.
		printBatchSummary(p, o, id, sum)
	}
	var le *batch.LineError
	if errors.As(err, &le) {
		committed := render.N(sum.LastLine, "line") + " are"
		if sum.LastLine == 1 {
			committed = "1 line is"
		}
		hint := fmt.Sprintf("%s committed; once it is fixed, run the same command again: it resumes after line %d (or pass over the line with --skip %d)",
			committed, sum.LastLine, le.Line)
		if sum.LastLine == 0 {
			hint = fmt.Sprintf("no line is committed; once it is fixed, run the same command again (or pass over the line with --skip %d)", le.Line)
		}
		if own := (*exit.Error)(nil); errors.As(le.Err, &own) && own.Hint != "" {
			hint = own.Hint + "; " + hint
		}
		return &exit.Error{Code: exit.Data, What: "xadd --batch " + o.Batch, Err: &batch.LineError{Line: le.Line, Err: jsonWords(le.Err)}, Hint: hint}
	}
	if e := (*exit.Error)(nil); !errors.As(err, &e) {
		err = exit.Wrap(err, "xadd --batch") // a server's reply: what failed, and its hint
	}
	return err
}

// jsonWords is a line's (or --json's) JSON syntax error in our words, not
// Go's ("invalid character 'o' in literal null (expecting 'u')", whose
// offset a json.Decoder's tokens do not keep exact).
func jsonWords(err error) error {
	if syn := (*json.SyntaxError)(nil); errors.As(err, &syn) {
		return errors.New("not a JSON object")
	}
	return err
}

// linesUpTo is "line 1 was" or "lines 1-N were".
func linesUpTo(n int64) string {
	if n == 1 {
		return "line 1 was"
	}
	return fmt.Sprintf("lines 1-%d were", n)
}

func printBatchSummary(p *render.Printer, o *XAddOptions, id string, s stream.BatchSummary) {
	switch {
	case s.Restarted:
		p.Status("xadd --batch: batch %s: the stream was deleted since its progress was recorded: started from line 1", id)
	case s.ResumedAt > 0 && !o.SkipSet:
		// Line numbers are positions, not counts: no separators.
		p.Status("xadd --batch: batch %s: %s committed by an earlier run: resumed after line %d", id, linesUpTo(s.ResumedAt), s.ResumedAt)
	}
	p.Status("xadd --batch: %s: %s added, %s (%s)", render.N(s.Lines, "line"), render.Count(s.Added), render.N(s.Duplicates, "duplicate"), s.Mode)
	if back := s.SkippedBack; back > 0 {
		from := int64(o.Skip) + 1
		what := fmt.Sprintf("lines %d-%d were sent again (they add again once IDMP-MAXSIZE or IDMP-DURATION no longer tracks them)", from, back)
		if back == from {
			what = fmt.Sprintf("line %d was sent again (it adds again once IDMP-MAXSIZE or IDMP-DURATION no longer tracks it)", back)
		}
		p.Warnf("--skip %d: the progress record said %s committed: %s", o.Skip, linesUpTo(back), what)
	}
}
