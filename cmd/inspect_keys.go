package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/health"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/progress"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/render"
)

// tableRowCap bounds the rows a terminal table holds in memory; past it,
// the table says how many more there are (use -o raw or json for all).
const tableRowCap = 1000

// inspectKeys shows each key: streams with the stream view, records
// normalised whatever their format. Missing keys: 66 after the others.
func inspectKeys(ctx context.Context, o *InspectOptions) error {
	conn, err := o.Factory.Conn(ctx)
	if err != nil {
		return err
	}
	recs, err := keyspace.InspectKeys(ctx, conn, o.Keys, o.Decode)
	if err != nil && recs == nil {
		return err
	}
	var sv *streamViewer
	var missing []string
	for _, r := range recs {
		if r.Status == records.Absent {
			missing = append(missing, strconv.Quote(r.Key))
			continue
		}
		if r.Format == records.FormatStream {
			if sv == nil {
				if sv, err = newStreamViewer(ctx, o.Factory, conn); err != nil {
					return err
				}
				sv.count = o.Count
			}
			if err := sv.show(ctx, r.Key, o.Watch); err != nil {
				return err
			}
			continue
		}
		if o.Watch != "" {
			return exit.Usagef("--watch is for streams; %q is a %s record", r.Key, r.Format)
		}
		if err := printRecord(o.Factory.Printer, shownRecord(r, o.ShowSecrets)); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		return exit.New(exit.NotFound, "inspect", "no such key: %s", strings.Join(missing, ", "))
	}
	return nil
}

// shown is the record as printed: stored secrets (Authorization headers,
// cookies, API keys, passwords, tokens) redacted unless --show-secrets.
func shownRecord(r records.Record, showSecrets bool) records.Record {
	if showSecrets {
		return r
	}
	return records.Redact(r)
}

// recordJSON is a record in -o json, with the derived times.
type recordJSON struct {
	records.Record
	AgeMs         *int64 `json:"age_ms,omitempty"`
	AgeUnknown    bool   `json:"age_unknown,omitempty"` // a record that carries no time
	LeaseLeftMs   *int64 `json:"lease_left_ms,omitempty"`
	ResultSummary string `json:"result_summary,omitempty"`
}

// withTimes adds the derived times, by the records package's rules: the
// age of the last activity, and the lease left until the earlier of lease
// and deadline (the instant the stale flag uses too).
func withTimes(r records.Record) recordJSON {
	j := recordJSON{Record: r, ResultSummary: r.ResultSummary()}
	if age, ok := r.AgeMs(); ok {
		j.AgeMs = &age
	} else {
		j.AgeUnknown = r.Recognised()
	}
	if left, ok := r.LeaseLeftMs(); ok && r.Status == records.Processing {
		j.LeaseLeftMs = &left
	}
	return j
}

// ageText is the AGE column: a duration, "unknown" for a record that
// carries no time, empty for keys that are no record.
func ageText(p *render.Printer, j recordJSON) string {
	switch {
	case j.AgeMs != nil:
		return msDuration(p, *j.AgeMs)
	case j.AgeUnknown && p.TTY:
		return p.Dim("unknown")
	}
	return ""
}

func printRecord(p *render.Printer, r records.Record) error {
	j := withTimes(r)
	if p.Format == render.JSON {
		return p.JSON(j)
	}
	pairs := []render.Pair{{"key", render.Field(r.Key)}, {"format", string(r.Format)}, {"type", r.Type}, {"status", statusText(p, r)}}
	opt := func(label, v string) {
		if v != "" {
			pairs = append(pairs, render.Pair{label, v})
		}
	}
	if r.RawStatus != "" && r.RawStatus != string(r.Status) {
		opt("raw-status", render.Field(r.RawStatus))
	}
	opt("owner", render.Field(r.Owner))
	if r.Token > 0 {
		opt("token", strconv.FormatInt(r.Token, 10))
	}
	if r.Attempts > 0 {
		opt("attempts", strconv.FormatInt(r.Attempts, 10))
	}
	opt("guards", render.Field(r.Guards))
	opt("created", msTime(p, r.CreatedMs, r.NowMs))
	opt("updated", msTime(p, r.UpdatedMs, r.NowMs))
	if j.AgeUnknown {
		opt("age", "unknown (the record carries no time)")
	}
	if j.LeaseLeftMs != nil {
		opt("lease-left", msDuration(p, *j.LeaseLeftMs))
	}
	opt("expires", msTime(p, r.ExpiresMs, r.NowMs))
	opt("ttl", ttlText(p, r.TTLms))
	opt("fingerprint", render.Field(r.Fingerprint))
	if sum := r.ResultSummary(); sum != "" {
		opt("result", sum)
	} else if r.HasResult {
		opt("result", fmt.Sprintf("%d bytes", r.ResultBytes))
	}
	opt("error", render.Field(r.Error))
	if r.Members > 0 {
		opt("members", strconv.FormatInt(r.Members, 10))
	}
	if len(r.Flags) > 0 {
		opt("flags", p.Warn(flagsText(r.Flags)))
	}
	p.KV(render.Field(r.Key), pairs)
	return nil
}

func statusText(p *render.Printer, r records.Record) string {
	s := string(r.Status)
	switch r.Status {
	case records.Completed:
		return p.Good(s)
	case records.Failed, records.Expired:
		return p.Bad(s)
	case records.Processing, records.Locked:
		return p.Warn(s)
	}
	return s
}

func flagsText(fl []records.Flag) string {
	s := make([]string, len(fl))
	for i, f := range fl {
		s[i] = string(f)
	}
	return strings.Join(s, ",")
}

// msTime is RFC 3339 when piped, "3m ago" on a terminal.
func msTime(p *render.Printer, ms, nowMs int64) string {
	if ms <= 0 {
		return ""
	}
	t := time.UnixMilli(ms).UTC()
	if !p.TTY || nowMs <= 0 {
		return t.Format(time.RFC3339Nano)
	}
	d := time.Duration(nowMs-ms) * time.Millisecond
	if d < 0 {
		return "in " + roundDur(-d).String()
	}
	return roundDur(d).String() + " ago"
}

// msDuration is milliseconds when piped, a Go duration on a terminal.
func msDuration(p *render.Printer, ms int64) string {
	if !p.TTY {
		return strconv.FormatInt(ms, 10)
	}
	if ms < 0 {
		return p.Bad("expired " + roundDur(time.Duration(-ms)*time.Millisecond).String() + " ago")
	}
	return roundDur(time.Duration(ms) * time.Millisecond).String()
}

func ttlText(p *render.Printer, ttl int64) string {
	switch {
	case !p.TTY:
		return strconv.FormatInt(ttl, 10)
	case ttl == -1:
		return p.Warn("none")
	case ttl < 0:
		return ""
	}
	return msDuration(p, ttl)
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// inspectMatch scans keys: one line (or JSON object) per record, streamed,
// and a summary of counts by status on stderr.
func inspectMatch(ctx context.Context, o *InspectOptions) error {
	p := o.Factory.Printer
	header := []string{"KEY", "FORMAT", "STATUS", "OWNER", "AGE", "LEASE LEFT", "TTL", "FLAGS"}
	var rows [][]string
	var streams []string
	shown := 0
	row := func(r records.Record) []string {
		j := withTimes(r)
		lease := ""
		if j.LeaseLeftMs != nil {
			lease = msDuration(p, *j.LeaseLeftMs)
		}
		return []string{render.Field(r.Key), string(r.Format), statusText(p, r), render.Field(r.Owner), ageText(p, j), lease, ttlText(p, r.TTLms), flagsText(r.Flags)}
	}
	flush := bufferStream(p)
	_, sum, mem, err := scanMatch(ctx, o, p.Format == render.Raw, func(r records.Record) error {
		switch {
		case p.Format == render.JSON:
			return p.JSON(withTimes(shownRecord(r, o.ShowSecrets)))
		case p.Format == render.Raw:
			p.Line("%s", strings.Join(row(r), "\t"))
		case len(rows) < tableRowCap:
			rows = append(rows, row(r))
		}
		if r.Format == records.FormatStream && len(streams) < tableRowCap {
			streams = append(streams, r.Key)
		}
		shown++
		return nil
	})
	flush()
	if err != nil {
		return err
	}
	if p.Format == render.Table {
		// SCAN order says nothing (and differs between the nodes of a
		// cluster, scanned concurrently): a table reads best by key.
		slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
		slices.Sort(streams)
		if p.TTY {
			fmt.Fprintf(p.Out, "Showing %d of %d matching keys (%d scanned)\n", len(rows), sum.Matched, sum.Scanned)
		}
		if err := p.Table(header, rows); err != nil {
			return err
		}
		if shown > len(rows) {
			fmt.Fprintf(p.Out, "... %d more: use -o raw or -o json for all\n", shown-len(rows))
		}
		if len(streams) > 0 {
			conn, err := o.Factory.Conn(ctx) // the scan's
			if err != nil {
				return err
			}
			sv, err := newStreamViewer(ctx, o.Factory, conn)
			if err != nil {
				return err
			}
			for _, s := range streams {
				if err := sv.show(ctx, s, ""); err != nil {
					return err
				}
			}
		}
	}
	if p.Format == render.JSON {
		out := map[string]any{"summary": sum}
		if mem != nil {
			out["memory"] = mem
		}
		return p.JSON(out)
	}
	if mem != nil && p.Format == render.Table {
		if err := memoryTable(p, *mem); err != nil {
			return err
		}
	}
	p.Status("%s", summaryText(sum))
	if mem != nil && p.Format == render.Raw {
		for _, line := range memoryLines(*mem) {
			p.Status("%s", line)
		}
	}
	return nil
}

// memoryTable draws inspect --memory's figures: one row per format and
// status, estimates marked "~" (exact where every record was measured),
// and the total.
func memoryTable(p *render.Printer, m keyspace.MemoryReport) error {
	rows := make([][]string, 0, len(m.Groups)+1)
	for _, g := range m.Groups {
		rows = append(rows, []string{string(g.Format), string(g.Status), strconv.FormatInt(g.Records, 10),
			strconv.FormatInt(g.Sampled, 10), fmt.Sprintf("%.1f", g.Mean), memoryBytes(p, g.Bytes, g.Exact)})
	}
	rows = append(rows, []string{"total", "", strconv.FormatInt(m.Records, 10), strconv.FormatInt(m.Sampled, 10), "", memoryBytes(p, m.Bytes, !m.Estimated)})
	if p.TTY {
		fmt.Fprintln(p.Out, memoryHeadline(m))
	}
	return p.Table([]string{"FORMAT", "STATUS", "RECORDS", "SAMPLED", "MEAN BYTES", "BYTES"}, rows)
}

// memoryBytes is a byte figure, "~" before an estimate; human units on a
// terminal.
func memoryBytes(p *render.Printer, n int64, exact bool) string {
	s := strconv.FormatInt(n, 10)
	if p.TTY {
		s = bytesHuman(n)
	}
	if !exact {
		s = "~" + s
	}
	return s
}

func memoryHeadline(m keyspace.MemoryReport) string {
	if !m.Estimated {
		return fmt.Sprintf("Memory (MEMORY USAGE of all %d records, exact):", m.Records)
	}
	return fmt.Sprintf("Memory (estimated: MEMORY USAGE of %d sampled of %d records; ~ marks estimates):", m.Sampled, m.Records)
}

// memoryLines are the memory figures as lines for stderr (-o raw).
func memoryLines(m keyspace.MemoryReport) []string {
	kind := "estimate"
	if !m.Estimated {
		kind = "exact"
	}
	lines := []string{fmt.Sprintf("memory: %d bytes (%s: MEMORY USAGE of %d sampled of %d records)", m.Bytes, kind, m.Sampled, m.Records)}
	for _, g := range m.Groups {
		kind := "estimate"
		if g.Exact {
			kind = "exact"
		}
		lines = append(lines, fmt.Sprintf("memory: %s %s: %d bytes (%s: %d records, %d sampled, mean %.1f)", g.Format, g.Status, g.Bytes, kind, g.Records, g.Sampled, g.Mean))
	}
	return lines
}

// bufferStream buffers the printer's output for a stream of records (-o raw
// or json, not on a terminal): one write per 64 KiB rather than one per
// record, which is most of the cost of printing a million. The returned
// func flushes and restores the output; call it before the summary, so that
// records come before it when both streams go to one place.
func bufferStream(p *render.Printer) (flush func()) {
	if p.TTY || p.Format == render.Table {
		return func() {}
	}
	out := p.Out
	bw := bufio.NewWriterSize(out, 64<<10)
	p.Out = bw
	return func() {
		_ = bw.Flush()
		p.Out = out
	}
}

// bulkGC tunes the collector for bulk work: a keyspace scan (inspect
// --match, purge --match) or a batch (xadd --batch). Each allocates fast
// (every key's replies and record, every line's fields and arguments) and
// holds little (a few batches or windows), so collecting at 4x the live heap instead
// of 2x saves much of the collector's work; a soft limit of 40 MiB keeps the
// heap inside purge's budget (peak RSS under 64 MB) should the values be
// large. GOGC or GOMEMLIMIT in the environment win. The returned func
// restores the settings.
func bulkGC(getenv func(string) string) (restore func()) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	pct := debug.SetGCPercent(400)
	limit := debug.SetMemoryLimit(40 << 20)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}

func summaryText(s keyspace.Summary) string {
	parts := []string{}
	for _, st := range records.Statuses() {
		if n := s.ByStatus[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", st, n))
		}
	}
	more := ""
	if s.Limited {
		more = " (stopped at --limit)"
	}
	return fmt.Sprintf("scanned %d keys, matched %d%s: %s", s.Scanned, s.Matched, more, strings.Join(parts, ", "))
}

// scanMatch is inspect --match's scan, each matching record to each, under
// a progress line (linesOut: each record prints a line on stdout). It
// returns the statuses asked for and the scan's summary, and with --memory
// the memory of the records reported, measured after the scan.
func scanMatch(ctx context.Context, o *InspectOptions, linesOut bool, each func(records.Record) error) ([]records.Status, keyspace.Summary, *keyspace.MemoryReport, error) {
	ctx, stop := untilInterrupted(ctx)
	defer stop()
	statuses, err := parseStatuses(o.Status)
	if err != nil {
		return nil, keyspace.Summary{}, nil, err
	}
	conn, err := o.Factory.Conn(ctx)
	if err != nil {
		return nil, keyspace.Summary{}, nil, err
	}
	opts := keyspace.ScanOptions{Pattern: o.Match, Literal: o.Literal, Statuses: statuses, Limit: o.Limit, Decode: o.Decode}
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
	defer bulkGC(o.Factory.Getenv)()
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

// parseStatuses reads --status A,B.
func parseStatuses(s string) ([]records.Status, error) {
	if s == "" {
		return nil, nil
	}
	var out []records.Status
	for _, part := range strings.Split(s, ",") {
		st, ok := records.ParseStatus(strings.TrimSpace(part))
		if !ok {
			return nil, exit.Usagef("--status %q: want PROCESSING, LOCKED, COMPLETED, FAILED, EXPIRED or UNKNOWN", part)
		}
		out = append(out, st)
	}
	return out, nil
}

// streamViewer shows streams with their IDMP state and health.
type streamViewer struct {
	f       *Factory
	streams *stream.Streams
	ctx     health.StreamContext
	count   int // --watch: views to draw (0: until interrupted)
}

func newStreamViewer(ctx context.Context, f *Factory, conn *redisconn.Conn) (*streamViewer, error) {
	streams, err := stream.NewStreams(conn, stream.ModeAuto)
	if err != nil {
		return nil, err
	}
	d, m, err := streams.ServerDefaults(ctx)
	if err != nil {
		d, m = idmp.DefaultDuration, idmp.DefaultMaxSize
	}
	sctx := health.StreamContext{DefaultDuration: d, DefaultMaxSize: m, Role: redisconn.Role(ctx, conn)}
	// The lints for known IDMP bugs need the server's facts: native only.
	if caps, err := conn.Capabilities(ctx); err == nil && caps.NativeIDMP {
		facts, err := redisconn.ReadServerFacts(ctx, conn)
		if err != nil {
			return nil, err
		}
		sctx.Server = &facts
	}
	return &streamViewer{f: f, streams: streams, ctx: sctx}, nil
}

// streamJSON is a stream in -o json: XINFO names, mode and lints.
type streamJSON struct {
	Key  string `json:"key"`
	Type string `json:"type"`
	stream.Info
	Lints []health.Lint `json:"lints"`
}

func (sv *streamViewer) show(ctx context.Context, name, watch string) error {
	if watch != "" {
		return sv.watch(ctx, name, watch)
	}
	info, err := sv.streams.Info(ctx, name)
	if err != nil {
		return err
	}
	return sv.print(info, nil)
}

type rates struct{ adds, dups float64 }

func (sv *streamViewer) print(info stream.Info, r *rates) error {
	p := sv.f.Printer
	lints := health.Stream(info, sv.ctx)
	if lints == nil {
		lints = []health.Lint{}
	}
	if p.Format == render.JSON {
		return p.JSON(streamJSON{Key: info.Stream, Type: "stream", Info: info, Lints: lints})
	}
	n := strconv.FormatInt
	pairs := []render.Pair{
		{"key", render.Field(info.Stream)}, {"type", "stream"}, {"mode", info.Mode},
		{"length", n(info.Length, 10)}, {"first-entry-id", info.FirstID}, {"last-entry-id", info.LastID},
		{"last-generated-id", info.LastGeneratedID}, {"entries-added", n(info.EntriesAdded, 10)},
		{"idmp-duration", n(info.IDMPDuration, 10)}, {"idmp-maxsize", n(info.IDMPMaxSize, 10)},
		{"pids-tracked", n(info.PIDsTracked, 10)}, {"iids-tracked", n(info.IIDsTracked, 10)},
		{"iids-added", n(info.IIDsAdded, 10)}, {"iids-duplicates", n(info.IIDsDuplicates, 10)},
	}
	if r != nil {
		pairs = append(pairs, render.Pair{"adds/s", fmt.Sprintf("%.1f", r.adds)}, render.Pair{"duplicates/s", fmt.Sprintf("%.1f", r.dups)})
	}
	if p.TTY {
		for _, pid := range info.PIDs {
			pairs = append(pairs, render.Pair{"  pid " + strconv.Quote(pid.PID), n(pid.IIDs, 10) + " iids"})
		}
	}
	pairs = append(pairs, lintPairs(p, lints)...)
	p.KV(render.Field(info.Stream), pairs)
	return nil
}

// watch redraws the name view every interval with rates from counter
// deltas, until interrupted (or --count views have been drawn).
func (sv *streamViewer) watch(ctx context.Context, name, every string) error {
	ctx, stop := untilInterrupted(ctx)
	defer stop()
	interval, err := time.ParseDuration(every)
	if err != nil || interval < 10*time.Millisecond {
		return exit.Usagef("--watch %q: want an interval of at least 10ms, e.g. 1s", every)
	}
	p := sv.f.Printer
	var prev stream.Info
	var prevAt time.Time
	for i := 0; sv.count == 0 || i < sv.count; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(interval):
			}
		}
		info, err := sv.streams.Info(ctx, name)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		if err != nil {
			return err
		}
		now := time.Now()
		var r *rates
		if i > 0 {
			dt := now.Sub(prevAt).Seconds()
			r = &rates{adds: float64(info.IIDsAdded-prev.IIDsAdded) / dt, dups: float64(info.IIDsDuplicates-prev.IIDsDuplicates) / dt}
		}
		if p.TTY {
			fmt.Fprint(p.Out, "\033[H\033[2J")
		}
		if err := sv.print(info, r); err != nil {
			return err
		}
		prev, prevAt = info, now
	}
	return nil
}
