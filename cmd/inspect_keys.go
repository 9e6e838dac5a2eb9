package cmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/consume"
	"github.com/idmpctl/idmpctl/internal/ops/health"
	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/progress"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
)

// inspectKeys shows each key; missing keys are 66 after the others.
func inspectKeys(ctx context.Context, o *InspectOptions) error {
	rctx, cancel := o.Factory.callBound(ctx, 0)
	defer cancel()
	conn, err := o.Factory.Conn(rctx)
	if err != nil {
		return err
	}
	recs, err := keyspace.InspectKeys(rctx, conn, o.Keys, o.Decode)
	if err != nil && recs == nil {
		return err
	}
	var sv *streamViewer
	var missing []string
	shown := 0
	for _, r := range recs {
		if r.Status == records.Absent {
			missing = append(missing, r.Key)
			continue
		}
		// Raw views follow each other as --watch's do: an empty line
		// between two keys tells where one ends.
		if shown++; shown > 1 && o.Factory.Printer.Format == render.Raw && o.Watch == "" {
			fmt.Fprintln(o.Factory.Printer.Out)
		}
		if r.Format == records.FormatStream {
			if sv == nil {
				if sv, err = newStreamViewer(ctx, o); err != nil {
					return err
				}
			}
			if err := sv.show(ctx, r.Key); err != nil {
				return err
			}
			continue
		}
		if o.Watch != "" {
			return exit.Usagef("--watch is for streams; %s is a record (format %s), not a stream", render.Field(r.Key), r.Format)
		}
		if err := o.Factory.Printer.Show(view.Record{Record: view.Shown(r, o.ShowSecrets)}); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		e := exit.New(exit.NotFound, "inspect", "no such key: %s", quoteJoin(missing, ", "))
		if orphans := stream.LeftoverState(ctx, conn, missing); len(orphans) > 0 {
			e.Hint = fmt.Sprintf("emulated IDMP state of %s is left over (orphaned: the stream was deleted, and its state has no TTL); it is dropped by the next add to the same name, or now by idmpctl purge --stream NAME --yes",
				quoteJoin(orphans, ", "))
		}
		return e
	}
	return nil
}

// inspectMatch scans keys: records streamed or in a table, then a summary.
func inspectMatch(ctx context.Context, o *InspectOptions) error {
	p := o.Factory.Printer
	rows := &view.ScanRows{}
	rec := &view.ScanRecord{ShowSecrets: o.ShowSecrets, Rows: rows} // one, shown again for each record
	flush := p.BufferStream()
	_, sum, mem, err := scanMatch(ctx, o, p.Format == render.Raw, func(r records.Record) error {
		rec.Record = r
		return p.Show(rec)
	})
	flush()
	if err != nil {
		return err
	}
	return p.Show(view.Scan{Match: o.Match, Limit: o.Limit, Summary: sum, Memory: mem, Rows: rows})
}

// scanMatch is inspect --match's scan, each matching record to each, under
// a progress line; with --memory, the records' memory is measured after.
func scanMatch(ctx context.Context, o *InspectOptions, linesOut bool, each func(records.Record) error) ([]records.Status, keyspace.Summary, *keyspace.MemoryReport, error) {
	ctx, stop := untilInterrupted(o.Factory, ctx, nil)
	defer stop()
	statuses, err := parseStatuses(o.Status)
	if err != nil {
		return nil, keyspace.Summary{}, nil, err
	}
	conn, err := o.Factory.Conn(ctx)
	if err != nil {
		return nil, keyspace.Summary{}, nil, err
	}
	opts := keyspace.ScanOptions{Pattern: o.Match, Literal: o.Literal, Statuses: statuses, All: o.All, Limit: o.Limit, Decode: o.Decode}
	bar, stopProgress := startProgress(o.Factory.Printer, linesOut, progress.Options{Label: "inspect --match", Unit: "keys"})
	defer stopProgress()
	if bar != nil {
		opts.Progress = func(n int64) { bar.Set(n, 0) }
	}
	var sampler *keyspace.MemorySampler
	if o.Memory {
		sampler = keyspace.NewMemorySampler(o.Samples)
		inner := each
		each = func(r records.Record) error {
			sampler.Add(r)
			return inner(r)
		}
	}
	defer bulkGC(o.Factory.Getenv, 40<<20)()
	sum, err := keyspace.ScanKeys(ctx, conn, opts, each)
	if err != nil || sampler == nil {
		return statuses, sum, nil, err
	}
	stopProgress()
	rep, err := sampler.Measure(ctx, conn)
	if err != nil {
		return statuses, sum, nil, exit.Wrap(err, "inspect --memory")
	}
	return statuses, sum, &rep, nil
}

// streamViewer shows streams with their IDMP state and health.
type streamViewer struct {
	*InspectOptions
	streams *stream.Streams
	ctx     health.StreamContext
}

func newStreamViewer(ctx context.Context, o *InspectOptions) (*streamViewer, error) {
	streams, err := openStreams(ctx, o.Factory, o.Mode)
	if err != nil {
		return nil, err
	}
	sctx, err := health.ReadStreamContext(ctx, streams)
	if err != nil {
		return nil, err
	}
	return &streamViewer{InspectOptions: o, streams: streams, ctx: sctx}, nil
}

func (sv *streamViewer) show(ctx context.Context, name string) error {
	if sv.interval > 0 {
		return sv.watch(ctx, name)
	}
	ctx, cancel := sv.Factory.callBound(ctx, 0)
	defer cancel()
	info, err := sv.streams.Info(ctx, name)
	if err != nil {
		return exit.Wrap(err, "inspect "+strconv.Quote(name))
	}
	// The groups where they can be read (a user without XINFO: none).
	groups, _ := consume.Groups(ctx, sv.streams.Conn, name)
	return sv.Factory.Printer.Show(view.Stream{Info: info, Lints: health.Stream(info, sv.ctx), Groups: groups})
}

// watch redraws the name view every interval with rates from counter
// deltas, until interrupted or --count: in place on a terminal, elsewhere
// one view after another, each with its time.
func (sv *streamViewer) watch(ctx context.Context, name string) error {
	ctx, stop := untilInterrupted(sv.Factory, ctx, nil)
	defer stop()
	p := sv.Factory.Printer
	var prev stream.Info
	var prevAt time.Time
	for i := 0; sv.Count == 0 || i < sv.Count; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(sv.interval):
			}
		}
		ictx, cancel := sv.Factory.callBound(ctx, 0)
		info, err := sv.streams.Info(ictx, name)
		cancel()
		if errors.Is(err, context.Canceled) {
			return nil
		}
		if err != nil {
			return exit.Wrap(err, "inspect --watch "+strconv.Quote(name))
		}
		now := sv.Factory.Now()
		var r *view.Rates
		if i > 0 {
			dt := now.Sub(prevAt).Seconds()
			r = &view.Rates{Adds: float64(info.IIDsAdded-prev.IIDsAdded) / dt, Duplicates: float64(info.IIDsDuplicates-prev.IIDsDuplicates) / dt}
		}
		switch {
		case p.TTY && p.Human():
			p.ClearScreen()
		case i > 0 && p.Format != render.JSON:
			fmt.Fprintln(p.Out)
		}
		if err := p.Show(view.Stream{Info: info, Lints: health.Stream(info, sv.ctx), Rates: r, At: now}); err != nil {
			return err
		}
		prev, prevAt = info, now
	}
	return nil
}
