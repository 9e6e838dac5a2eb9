package cmd

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/duration"
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
			missing = append(missing, strconv.Quote(r.Key))
			continue
		}
		// Raw views follow each other as --watch's do: an empty line
		// between two keys tells where one ends.
		if shown++; shown > 1 && o.Factory.Printer.Format == render.Raw && o.Watch == "" {
			fmt.Fprintln(o.Factory.Printer.Out)
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
			return exit.Usagef("--watch is for streams; %s is a record (format %s), not a stream", render.Field(r.Key), r.Format)
		}
		if err := printRecord(o.Factory.Printer, shownRecord(r, o.ShowSecrets)); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		e := exit.New(exit.NotFound, "inspect", "no such key: %s", strings.Join(missing, ", "))
		if orphans := orphanedState(ctx, conn, recs); len(orphans) > 0 {
			e.Hint = fmt.Sprintf("emulated IDMP state of %s is left over (orphaned: the stream was deleted, and its state has no TTL); it is dropped by the next add to the same name, or now by idmpctl purge --stream NAME --yes",
				strings.Join(orphans, ", "))
		}
		return e
	}
	return nil
}

// orphanedState names the missing keys whose emulated IDMP state remains
// (a stream deleted by hand: the state has no TTL, and goes at the next
// call on the name).
func orphanedState(ctx context.Context, conn *redisconn.Conn, recs []records.Record) []string {
	var out []string
	for _, r := range recs {
		if r.Status != records.Absent {
			continue
		}
		l, err := idmp.StateKeys(r.Key, conn.Cluster())
		if err != nil {
			continue
		}
		cctx, cancel := conn.Ctx(ctx)
		n, err := conn.Client().Exists(cctx, l.Meta).Result()
		if err == nil && n == 0 {
			n, err = conn.Client().Exists(cctx, l.PIDs).Result()
		}
		cancel()
		if err == nil && n > 0 {
			out = append(out, strconv.Quote(r.Key))
		}
	}
	return out
}

// shown is the record as printed: stored secrets (Authorization headers,
// cookies, API keys, passwords, tokens) redacted unless --show-secrets.
func shownRecord(r records.Record, showSecrets bool) records.Record {
	if showSecrets {
		return r
	}
	return records.Redact(r)
}

// recordJSON is a record in -o json, with the derived times. Its fields
// hide the record's: stored JSON objects and arrays (a middleware's
// request and response) are nested as they are, not as strings of JSON.
type recordJSON struct {
	records.Record
	msNames
	Fields        map[string]json.RawMessage `json:"fields,omitempty"`
	AgeMs         *int64                     `json:"age_ms,omitempty"`
	AgeUnknown    bool                       `json:"age_unknown,omitempty"` // a record that carries no time
	LeaseLeftMs   *int64                     `json:"lease_left_ms,omitempty"`
	ResultSummary string                     `json:"result_summary,omitempty"`
}

// msNames are the millisecond timestamps of a record's JSON under names
// that say so. The names without _ms (created, updated, lease_until,
// deadline, expires, now) stay beside them as aliases for now
// (docs/output.md); omitted where they are.
type msNames struct {
	CreatedAt    int64 `json:"created_ms,omitempty"`
	UpdatedAt    int64 `json:"updated_ms,omitempty"`
	LeaseUntilAt int64 `json:"lease_until_ms,omitempty"`
	DeadlineAt   int64 `json:"deadline_ms,omitempty"`
	ExpiresAt    int64 `json:"expires_ms,omitempty"`
	NowAt        int64 `json:"now_ms,omitempty"`
}

// nestedFields is a record's fields for JSON: a value that is a JSON
// object or array is nested as JSON, any other is a string.
func nestedFields(fields map[string]string) map[string]json.RawMessage {
	if fields == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		if t := strings.TrimSpace(v); t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
			out[k] = json.RawMessage(t)
			continue
		}
		b, _ := json.Marshal(v)
		out[k] = b
	}
	return out
}

// withTimes adds the derived times, by the records package's rules: the
// age of the last activity, and the lease left until the earlier of lease
// and deadline (the instant the stale flag uses too).
func withTimes(r records.Record) recordJSON {
	j := recordJSON{Record: r, Fields: nestedFields(r.Fields), ResultSummary: r.ResultSummary(),
		msNames: msNames{CreatedAt: r.CreatedMs, UpdatedAt: r.UpdatedMs, LeaseUntilAt: r.LeaseUntilMs,
			DeadlineAt: r.DeadlineMs, ExpiresAt: r.ExpiresMs, NowAt: r.NowMs}}
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
	case j.AgeUnknown && p.Human():
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
		opt("attempts", countText(p, r.Attempts))
	}
	opt("guards", render.Field(r.Guards))
	opt("created", msTime(p, r.CreatedMs, r.NowMs))
	opt("updated", msTime(p, r.UpdatedMs, r.NowMs))
	if j.AgeUnknown {
		opt("age", "unknown (the record carries no time)")
	}
	// Raw lines name their unit, as JSON does: "ttl 86388735" reads as
	// seconds to an operator.
	ms := ""
	if !p.Human() {
		ms = "-ms"
	}
	if j.LeaseLeftMs != nil {
		opt("lease-left"+ms, msDuration(p, *j.LeaseLeftMs))
	}
	opt("expires", msTime(p, r.ExpiresMs, r.NowMs))
	opt("ttl"+ms, ttlText(p, r.TTLms))
	opt("fingerprint", render.Field(r.Fingerprint))
	switch {
	case r.HTTPStatus > 0: // a stored HTTP response: its status and size
		opt("result", r.ResultSummary())
	case r.HasResult:
		opt("result", resultText(p, r.Fields["result"], int64(r.ResultBytes)))
	}
	opt("error", render.Field(r.Error))
	if r.Members > 0 {
		opt("members", countText(p, r.Members))
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

// msTime is RFC 3339 in raw output, "3m ago" (or "in 5m") in a view.
func msTime(p *render.Printer, ms, nowMs int64) string {
	if ms <= 0 {
		return ""
	}
	t := time.UnixMilli(ms).UTC()
	if !p.Human() || nowMs <= 0 {
		return t.Format(time.RFC3339Nano)
	}
	if d := nowMs - ms; d < 0 {
		return "in " + render.Ms(-d)
	}
	return render.Ms(nowMs-ms) + " ago"
}

// msDuration is milliseconds in raw output, "4m59s" in a view.
func msDuration(p *render.Printer, ms int64) string {
	if !p.Human() {
		return strconv.FormatInt(ms, 10)
	}
	if ms < 0 {
		return p.Bad("expired " + render.Ms(-ms) + " ago")
	}
	return render.Ms(ms)
}

func ttlText(p *render.Printer, ttl int64) string {
	switch {
	case !p.Human():
		return strconv.FormatInt(ttl, 10)
	case ttl == -1:
		return p.Warn("none")
	case ttl < 0:
		return ""
	}
	return msDuration(p, ttl)
}

// countText is a count: plain in raw output, with thousands separators in
// a view.
func countText(p *render.Printer, n int64) string {
	if p.Human() {
		return render.Count(n)
	}
	return strconv.FormatInt(n, 10)
}

// resultText is a stored result: in raw output its size (the bytes are
// -o json's, or claim acquire's on stdout); in a view the result itself,
// quoted when it is not printable text, cut to the terminal by KV.
func resultText(p *render.Printer, result string, size int64) string {
	if !p.Human() || (result == "" && size > 0) {
		return render.N(size, "byte")
	}
	if result == "" {
		return p.Dim("(empty)")
	}
	return render.Field(result)
}

// inspectMatch scans keys: one line (or JSON object) per key, streamed, or
// a table of them at the end; a summary of counts by status on stderr
// (JSON: a last object of type "summary").
func inspectMatch(ctx context.Context, o *InspectOptions) error {
	p := o.Factory.Printer
	// KEY and STATUS are what an operator acts on: never cut. The others
	// are cut, then left out, the least needed first (FLAGS, which says
	// what is wrong, last).
	header := []render.Column{{Head: "KEY", Keep: true}, {Head: "FORMAT", Drop: 6}, {Head: "STATUS", Keep: true},
		{Head: "OWNER", Drop: 3}, {Head: "AGE", Drop: 5}, {Head: "LEASE LEFT", Drop: 2}, {Head: "TTL", Drop: 4}, {Head: "FLAGS", Drop: 1}}
	var rows [][]string
	shown := int64(0)
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
		shown++
		return nil
	})
	flush()
	if err != nil {
		return err
	}
	switch p.Format {
	case render.JSON:
		return p.JSON(scanSummaryJSON{Type: "summary", Summary: sum, Memory: mem})
	case render.Table:
		if err := printScanTable(p, o, header, rows, shown, sum); err != nil {
			return err
		}
		if mem != nil {
			if err := memoryTable(p, *mem); err != nil {
				return err
			}
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

// scanSummaryJSON is a scan's last -o json object: "type" is "summary",
// which no record has (a record's type is its Redis type). With --memory,
// memory is the records' bytes by format and status: estimates where not
// every record was measured (its "estimated" and each group's "exact" say).
type scanSummaryJSON struct {
	Type    string                 `json:"type"`
	Summary keyspace.Summary       `json:"summary"`
	Memory  *keyspace.MemoryReport `json:"memory,omitempty"`
}

// memoryTable draws inspect --memory's figures: one row per format and
// status, estimates marked "~" (exact where every record was measured),
// and the total.
func memoryTable(p *render.Printer, m keyspace.MemoryReport) error {
	if m.Records == 0 {
		fmt.Fprintln(p.Out, "Memory: no records matched") // no empty box
		return nil
	}
	rows := make([][]string, 0, len(m.Groups)+1)
	for _, g := range m.Groups {
		rows = append(rows, []string{string(g.Format), string(g.Status), render.Count(g.Records),
			render.Count(g.Sampled), fmt.Sprintf("%.1f", g.Mean), memoryBytes(g.Bytes, g.Exact)})
	}
	rows = append(rows, []string{"total", "", render.Count(m.Records), render.Count(m.Sampled), "", memoryBytes(m.Bytes, !m.Estimated)})
	fmt.Fprintln(p.Out, memoryHeadline(m))
	return p.Table([]string{"FORMAT", "STATUS", "RECORDS", "SAMPLED", "MEAN BYTES", "BYTES"}, rows)
}

// memoryBytes is a byte figure in human units, "~" before an estimate.
func memoryBytes(n int64, exact bool) string {
	s := render.Bytes(n)
	if !exact {
		s = "~" + s
	}
	return s
}

func memoryHeadline(m keyspace.MemoryReport) string {
	if !m.Estimated {
		return fmt.Sprintf("Memory (MEMORY USAGE of all %s, exact):", render.N(m.Records, "key"))
	}
	return fmt.Sprintf("Memory (estimated: MEMORY USAGE of %s sampled of %s; ~ marks estimates):", render.Count(m.Sampled), render.N(m.Records, "key"))
}

// memoryLines are the memory figures as lines for stderr (-o raw).
func memoryLines(m keyspace.MemoryReport) []string {
	kind := "estimate"
	if !m.Estimated {
		kind = "exact"
	}
	lines := []string{fmt.Sprintf("memory: %d bytes (%s: MEMORY USAGE of %s sampled of %s keys)", m.Bytes, kind, render.Count(m.Sampled), render.Count(m.Records))}
	for _, g := range m.Groups {
		kind := "estimate"
		if g.Exact {
			kind = "exact"
		}
		lines = append(lines, fmt.Sprintf("memory: %s %s: %d bytes (%s: %s keys, %s sampled, mean %.1f)", g.Format, cmp.Or(string(g.Status), "-"), g.Bytes, kind, render.Count(g.Records), render.Count(g.Sampled), g.Mean))
	}
	return lines
}

// printScanTable draws a scan's table, sorted by key, under a line that
// says what it shows (on a terminal). An empty scan says so in a line.
func printScanTable(p *render.Printer, o *InspectOptions, header []render.Column, rows [][]string, shown int64, sum keyspace.Summary) error {
	if len(rows) == 0 {
		fmt.Fprintf(p.Out, "No keys match %s (%s scanned)\n", render.Field(o.Match), render.N(sum.Scanned, "key"))
		return nil
	}
	// SCAN order says nothing (and differs between the nodes of a
	// cluster, scanned concurrently): a table reads best by key.
	slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	if p.TTY {
		fmt.Fprintln(p.Out, showingText(int64(len(rows)), shown, sum, o.Limit))
	}
	if err := p.Columns(header, rows); err != nil {
		return err
	}
	if more := shown - int64(len(rows)); more > 0 {
		fmt.Fprintf(p.Out, "... %s more: use -o raw or -o json for all\n", render.Count(more))
	}
	return nil
}

// showingText is the line above a scan's table: how many keys it shows of
// how many matched, and how it chose them when it does not show them all.
func showingText(rows, shown int64, sum keyspace.Summary, limit int64) string {
	scanned := render.N(sum.Scanned, "key") + " scanned"
	switch {
	case rows < shown:
		// More matched than a table holds: the rows are the first the scan
		// met (SCAN's order, which is no order), sorted by key.
		return fmt.Sprintf("Showing %s of %s matching keys (%s): a sample, the first %s the scan met, sorted by key",
			render.Count(rows), render.Count(shown), scanned, render.Count(rows))
	case sum.Limited:
		return fmt.Sprintf("Showing the first %s (%s; stopped at --limit %s: more may match)",
			render.N(rows, "matching key"), scanned, render.Count(limit))
	}
	return fmt.Sprintf("Showing %s of %s (%s)", render.Count(rows), render.N(sum.Matched, "matching key"), scanned)
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
	return bulkGCLimit(getenv, 40<<20)
}

// bulkGCLimit is bulkGC with a soft limit of its own (bytes).
func bulkGCLimit(getenv func(string) string, soft int64) (restore func()) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	pct := debug.SetGCPercent(400)
	limit := debug.SetMemoryLimit(soft)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}

// summaryText is a scan's summary line (stderr): what was scanned and
// matched, the records by status, and the keys that are no records.
func summaryText(s keyspace.Summary) string {
	var parts []string
	for _, st := range records.Statuses() {
		if n := s.ByStatus[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", st, render.Count(n)))
		}
	}
	line := fmt.Sprintf("scanned %s, matched %s", render.N(s.Scanned, "key"), render.Count(s.Matched))
	if s.Limited {
		line += " (stopped at --limit)"
	}
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, ", ")
	}
	var others []string
	if n := s.ByFormat[records.FormatStream]; n > 0 {
		others = append(others, render.N(n, "stream"))
	}
	if n := s.ByFormat[records.FormatIDMPState]; n > 0 {
		others = append(others, render.N(n, "idmp state key"))
	}
	if s.StateHidden > 0 {
		others = append(others, render.N(s.StateHidden, "idmp state key")+" hidden (--all shows them)")
	}
	if len(others) > 0 {
		line += "; " + strings.Join(others, ", ")
	}
	return line
}

// scanMatch is inspect --match's scan, each matching record to each, under
// a progress line (linesOut: each record prints a line on stdout). It
// returns the statuses asked for and the scan's summary, and with --memory
// the memory of the records reported, measured after the scan.
func scanMatch(ctx context.Context, o *InspectOptions, linesOut bool, each func(records.Record) error) ([]records.Status, keyspace.Summary, *keyspace.MemoryReport, error) {
	ctx, stop := untilInterrupted(o.Factory, ctx)
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
	ev, _ := conn.Eviction(ctx)
	sctx := health.StreamContext{DefaultDuration: d, DefaultMaxSize: m, Role: redisconn.Role(ctx, conn), Eviction: ev}
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

// streamJSON is a stream in -o json: XINFO names, mode and lints; with
// --watch, each view's time and the rates since the one before.
type streamJSON struct {
	Key  string `json:"key"`
	Type string `json:"type"`
	stream.Info
	Lints            []health.Lint `json:"lints"`
	Time             string        `json:"time,omitempty"`
	AddsPerSec       *float64      `json:"adds_per_s,omitempty"`
	DuplicatesPerSec *float64      `json:"duplicates_per_s,omitempty"`
}

func (sv *streamViewer) show(ctx context.Context, name, watch string) error {
	if watch != "" {
		return sv.watch(ctx, name, watch)
	}
	ctx, cancel := sv.f.callBound(ctx, 0)
	defer cancel()
	info, err := sv.streams.Info(ctx, name)
	if err != nil {
		return exit.Wrap(err, "inspect "+strconv.Quote(name))
	}
	return sv.print(info, nil, time.Time{})
}

type rates struct{ adds, dups float64 }

// print shows a stream; at is the time of a --watch view (zero otherwise).
func (sv *streamViewer) print(info stream.Info, r *rates, at time.Time) error {
	p := sv.f.Printer
	lints := health.Stream(info, sv.ctx)
	if lints == nil {
		lints = []health.Lint{}
	}
	if p.Format == render.JSON {
		j := streamJSON{Key: info.Stream, Type: "stream", Info: info, Lints: lints}
		if !at.IsZero() {
			j.Time = at.UTC().Format(time.RFC3339Nano)
		}
		if r != nil {
			j.AddsPerSec, j.DuplicatesPerSec = &r.adds, &r.dups
		}
		return p.JSON(j)
	}
	n := func(v int64) string { return countText(p, v) }
	duration, maxsize := strconv.FormatInt(info.IDMPDuration, 10), strconv.FormatInt(info.IDMPMaxSize, 10)
	if p.Human() {
		// The settings with their units: seconds, iids per producer.
		duration = duration + "s"
		maxsize = render.N(info.IDMPMaxSize, "iid") + " per pid"
	}
	var pairs []render.Pair
	if !at.IsZero() && !p.Human() {
		pairs = append(pairs, render.Pair{"time", at.UTC().Format(time.RFC3339Nano)})
	}
	pairs = append(pairs, []render.Pair{
		{"key", render.Field(info.Stream)}, {"type", "stream"}, {"mode", info.Mode},
		{"length", n(info.Length)}, {"first-entry-id", info.FirstID}, {"last-entry-id", info.LastID},
		{"last-generated-id", info.LastGeneratedID}, {"entries-added", n(info.EntriesAdded)},
		{"idmp-duration", duration}, {"idmp-maxsize", maxsize},
		{"pids-tracked", n(info.PIDsTracked)}, {"iids-tracked", n(info.IIDsTracked)},
		{"iids-added", n(info.IIDsAdded)}, {"iids-duplicates", n(info.IIDsDuplicates)},
	}...)
	if r != nil {
		pairs = append(pairs, render.Pair{"adds/s", fmt.Sprintf("%.1f", r.adds)}, render.Pair{"duplicates/s", fmt.Sprintf("%.1f", r.dups)})
	}
	if p.Human() {
		for _, pid := range info.PIDs {
			pairs = append(pairs, render.Pair{"  pid " + strconv.Quote(pid.PID), render.N(pid.IIDs, "iid")})
		}
	}
	pairs = append(pairs, lintPairs(p, lints)...)
	title := render.Field(info.Stream)
	if !at.IsZero() {
		title += "  " + p.Dim(at.Local().Format("15:04:05"))
	}
	p.KV(title, pairs)
	return nil
}

// lintPairs are lints as rows of a key-value view: "health" rows (warnings
// marked) for a person, "lint<TAB>code<TAB>message" otherwise.
func lintPairs(p *render.Printer, lints []health.Lint) []render.Pair {
	var pairs []render.Pair
	for _, l := range lints {
		if !p.Human() {
			pairs = append(pairs, render.Pair{"lint", l.Code + "\t" + l.Message})
			continue
		}
		v := p.Dim(l.Message)
		if l.Level == "warn" {
			v = p.Warn("! " + l.Message)
		}
		pairs = append(pairs, render.Pair{"health", v})
	}
	return pairs
}

// watch redraws the name view every interval with rates from counter
// deltas, until interrupted (or --count views have been drawn). A
// terminal's view is redrawn in place; elsewhere the views follow each
// other, each with its time (raw: a "time" line first, and an empty line
// between views; JSON: one object a view).
func (sv *streamViewer) watch(ctx context.Context, name, every string) error {
	ctx, stop := untilInterrupted(sv.f, ctx)
	defer stop()
	interval, err := parseWatch(every)
	if err != nil {
		return err
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
		ictx, cancel := sv.f.callBound(ctx, 0)
		info, err := sv.streams.Info(ictx, name)
		cancel()
		if errors.Is(err, context.Canceled) {
			return nil
		}
		if err != nil {
			return exit.Wrap(err, "inspect --watch "+strconv.Quote(name))
		}
		now := sv.f.Now()
		var r *rates
		if i > 0 {
			dt := now.Sub(prevAt).Seconds()
			r = &rates{adds: float64(info.IIDsAdded-prev.IIDsAdded) / dt, dups: float64(info.IIDsDuplicates-prev.IIDsDuplicates) / dt}
		}
		switch {
		case p.TTY && p.Human():
			p.ClearScreen()
		case i > 0 && p.Format != render.JSON:
			fmt.Fprintln(p.Out)
		}
		if err := sv.print(info, r, now); err != nil {
			return err
		}
		prev, prevAt = info, now
	}
	return nil
}

// parseWatch reads --watch's interval.
func parseWatch(every string) (time.Duration, error) {
	interval, err := duration.Parse(every)
	if err != nil || interval < 10*time.Millisecond {
		return 0, &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--watch %q: want an interval of at least 10ms with its unit", every),
			Hint: "for example --watch 1s or --watch 500ms"}
	}
	return interval, nil
}
