package cmd

// inspect -o prometheus: one document at the end of the run, for
// node_exporter's textfile collector.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/render"
)

// notMetrics is the usage error of -o prometheus for a command without metrics.
func notMetrics(cmdPath string) error {
	return &exit.Error{Code: exit.Usage,
		Err:  fmt.Errorf("-o prometheus is for inspect STREAM... and inspect --match PATTERN, not %s", cmdPath),
		Hint: "see 'idmpctl inspect --help'"}
}

// inspectStreamMetrics writes the metrics of the streams named. Any other
// key is refused (64) before anything prints: its series would vanish
// silently. Missing keys: the others' document, then 66 (a cron job that
// replaces its file only on success keeps the last good one).
func inspectStreamMetrics(ctx context.Context, o *InspectOptions) error {
	conn, err := o.Factory.Conn(ctx)
	if err != nil {
		return err
	}
	recs, err := keyspace.InspectKeys(ctx, conn, o.Keys, o.Decode)
	if err != nil && recs == nil {
		return err
	}
	var names, missing []string
	for _, r := range recs {
		switch {
		case r.Status == records.Absent:
			missing = append(missing, r.Key)
		case r.Format != records.FormatStream:
			return &exit.Error{Code: exit.Usage,
				Err:  fmt.Errorf("-o prometheus: %s is not a stream (format %s)", strconv.Quote(r.Key), r.Format),
				Hint: "inspect KEY... -o prometheus exports streams; export records with a scan: inspect --match PATTERN -o prometheus"}
		default:
			names = append(names, r.Key)
		}
	}
	var m render.Metrics
	if len(names) > 0 {
		streams, err := openStreams(ctx, o.Factory, o.Mode)
		if err != nil {
			return err
		}
		for _, name := range names {
			info, err := streams.Info(ctx, name)
			if err != nil {
				return exit.Wrap(err, "inspect "+strconv.Quote(name))
			}
			m.Streams = append(m.Streams, render.StreamMetrics{
				Stream: info.Stream, Mode: info.Mode, Length: info.Length,
				IDMPDuration: info.IDMPDuration, IDMPMaxSize: info.IDMPMaxSize,
				PIDsTracked: info.PIDsTracked, IIDsTracked: info.IIDsTracked,
				IIDsAdded: info.IIDsAdded, IIDsDuplicates: info.IIDsDuplicates, NotAtomic: info.NotAtomic,
			})
		}
	}
	if err := render.WriteMetrics(o.Factory.Printer.Out, m); err != nil {
		return err
	}
	if len(missing) > 0 {
		return exit.New(exit.NotFound, "inspect", "no such key: %s", quoteJoin(missing, ", "))
	}
	return nil
}

// inspectMatchMetrics scans like inspect --match, counting instead of
// printing, and writes the scan's metrics. No summary on stderr: the
// document carries it, and a cron job mails whatever reaches stderr.
func inspectMatchMetrics(ctx context.Context, o *InspectOptions) error {
	flagged := flagCounts{}
	statuses, sum, mem, err := scanMatch(ctx, o, false, func(r records.Record) error {
		switch {
		case r.IsRecord(): // a stream's no-ttl is no record's
			flagged.add(r.Flags)
		case r.HasFlag(records.FlagOrphanState):
			flagged[records.FlagOrphanState]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	m := scanMetrics(o.Match, statuses, sum, flagged)
	if mem != nil {
		m.Memory = scanMemoryMetrics(m, *mem)
	}
	return render.WriteMetrics(o.Factory.Printer.Out, render.Metrics{Scans: []render.ScanMetrics{m}})
}

// scanMemoryMetrics is inspect --memory's report as metrics: by status and
// by format, with a 0 sample wherever the scan's own breakdown has one.
func scanMemoryMetrics(m render.ScanMetrics, rep keyspace.MemoryReport) *render.ScanMemory {
	mm := &render.ScanMemory{Bytes: rep.Bytes, Sampled: rep.Sampled, Exact: !rep.Estimated,
		ByStatus: map[string]int64{}, ByFormat: map[string]int64{}}
	for st := range m.ByStatus {
		mm.ByStatus[st] = 0
	}
	for f := range m.ByFormat {
		mm.ByFormat[f] = 0
	}
	for _, g := range rep.Groups {
		if g.Status != "" { // streams and state keys have a format, no status
			mm.ByStatus[string(g.Status)] += g.Bytes
		}
		mm.ByFormat[string(g.Format)] += g.Bytes
	}
	return mm
}

// flagCounts counts the records of a scan by flag.
type flagCounts map[records.Flag]int64

func (c flagCounts) add(flags []records.Flag) {
	for _, f := range flags {
		c[f]++
	}
}

// scanMetrics is a scan's summary as metrics: every status the scan could
// report and every format gets a sample, 0 included, so that no series
// vanishes from one run to the next.
func scanMetrics(pattern string, statuses []records.Status, sum keyspace.Summary, flagged flagCounts) render.ScanMetrics {
	matched := int64(0)
	for _, n := range sum.ByStatus {
		matched += n
	}
	m := render.ScanMetrics{Pattern: pattern, Scanned: sum.Scanned, Matched: matched,
		ByStatus: map[string]int64{}, ByFormat: map[string]int64{},
		Stale: flagged[records.FlagStale], NoTTL: flagged[records.FlagNoTTL], OrphanLocks: flagged[records.FlagOrphanLock],
		OrphanState: flagged[records.FlagOrphanState], Limited: sum.Limited}
	if len(statuses) == 0 {
		for _, st := range records.Statuses() {
			if st != records.Absent {
				statuses = append(statuses, st)
			}
		}
	}
	for _, st := range statuses {
		m.ByStatus[string(st)] = 0
	}
	for _, f := range records.Formats() {
		if f != records.FormatNone {
			m.ByFormat[string(f)] = 0
		}
	}
	for st, n := range sum.ByStatus {
		m.ByStatus[string(st)] += n
	}
	for f, n := range sum.ByFormat {
		m.ByFormat[string(f)] += n
	}
	return m
}
