package cmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/idmpctl/idmpctl/internal/batch"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/stream"
)

type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil }

// openBatch opens the --batch input: a file, or stdin for "-".
func openBatch(f *Factory, name string) (io.ReadCloser, error) {
	if name == "-" {
		return nopCloser{f.In}, nil
	}
	file, err := os.Open(name)
	if err != nil {
		return nil, exit.New(exit.NotFound, "--batch", "%v", err)
	}
	return file, nil
}

// batchInput feeds stream.RunBatch from the NDJSON reader: each line's bytes,
// and the add it asks for (a line's own "pid" wins over --pid).
type batchInput struct {
	o     *XAddOptions
	r     *batch.Reader
	first *rawLine // read ahead for the default batch ID
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

func (in *batchInput) Parse(n int64, raw []byte) (*stream.AddRequest, error) {
	l, ok, err := in.r.Parse(int(n), raw)
	if err != nil || !ok {
		return nil, err
	}
	req := in.o.request(l.IID, l.Fields)
	if l.HasPID {
		req.PID = l.PID
	}
	return &req, nil
}

// defaultBatchID names a batch by its input: the first 16 hex digits of
// SHA-256 of the input's absolute path ("-" for stdin), a newline, and its
// first line. Re-running the same file resumes it; another file, or the
// same name with another first line, is another batch.
func defaultBatchID(name string, first []byte) string {
	if name != "-" {
		if abs, err := filepath.Abs(name); err == nil {
			name = abs
		}
	}
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write(first)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func xaddBatchRun(ctx context.Context, o *XAddOptions) error {
	f := o.Factory
	file, err := openBatch(f, o.Batch)
	if err != nil {
		return err
	}
	defer file.Close()
	in := &batchInput{o: o, r: batch.NewReader(file, o.Auto)}
	if st, ok := file.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
			in.file = true
		}
	}
	id := o.BatchID
	if id == "" {
		n, raw, err := in.r.Raw()
		in.first = &rawLine{n: n, raw: append([]byte(nil), raw...), err: err}
		id = defaultBatchID(o.Batch, in.first.raw)
	}
	streams, err := openStreams(ctx, f, o.Mode)
	if err != nil {
		return err
	}
	p := f.Printer
	spec := stream.BatchSpec{
		Template: o.request("", nil), ID: id, Resume: o.Resume,
		SkipSet: o.SkipSet, Skip: int64(o.Skip), TTL: o.ProgressTTL, Retries: f.Global.Retries,
		Durability: o.Durable.durability(),
		OnRetry: func(attempt int, err error) {
			p.Warnf("xadd --batch: %v: retrying (%d of %d)", err, attempt, f.Global.Retries)
		},
	}
	flush := bufferStream(p)
	sum, err := streams.RunBatch(ctx, spec, in, func(r stream.BatchResult) error {
		printBatchResult(p, o, r)
		return nil
	})
	flush()
	printBatchSummary(p, o, id, sum)
	if err == nil {
		return nil
	}
	var le *batch.LineError
	if errors.As(err, &le) {
		return &exit.Error{Code: exit.Data, What: "xadd --batch " + o.Batch, Err: le,
			Hint: fmt.Sprintf("%d lines are committed; once it is fixed, run the same command again: it resumes after line %d (or pass over the line with --skip %d)",
				sum.LastLine, sum.LastLine, le.Line)}
	}
	return err
}

func printBatchResult(p *render.Printer, o *XAddOptions, r stream.BatchResult) {
	if p.Format == render.JSON {
		j := toAddJSON(o, r.AddResult, int(r.Line), r.Retried)
		j.ReplyLost = r.ReplyLost
		_ = p.JSON(j)
		return
	}
	outcome := "added"
	if r.Duplicate {
		outcome = "duplicate"
	}
	id := r.ID
	if r.ReplyLost {
		id, outcome = "-", "committed" // its reply was lost and not kept (native)
	}
	p.Line("%s\t%s", id, outcome)
}

func printBatchSummary(p *render.Printer, o *XAddOptions, id string, s stream.BatchSummary) {
	switch {
	case s.Restarted:
		p.Status("xadd --batch: batch %s: the stream was deleted since its progress was recorded: started from line 1", id)
	case s.ResumedAt > 0 && !o.SkipSet:
		p.Status("xadd --batch: batch %s: lines 1-%d were committed by an earlier run: resumed after line %d", id, s.ResumedAt, s.ResumedAt)
	}
	p.Status("xadd --batch: %d lines: %d added, %d duplicates (%s)", s.Lines, s.Added, s.Duplicates, s.Mode)
}
