package render

import (
	"bytes"
	"errors"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func sampleMetrics() Metrics {
	return Metrics{
		Streams: []StreamMetrics{
			{Stream: "orders", Mode: "native", Length: 1200, IDMPDuration: 100, IDMPMaxSize: 100, PIDsTracked: 3, IIDsTracked: 250, IIDsAdded: 9000, IIDsDuplicates: 17},
			{Stream: "events", Mode: "emulated", Length: 5, IDMPDuration: 300, IDMPMaxSize: 1000, PIDsTracked: 1, IIDsTracked: 5, IIDsAdded: 5, IIDsDuplicates: 0},
			{Stream: "orders", Mode: "native", Length: 1}, // a repeat: dropped
		},
		Scans: []ScanMetrics{{
			Pattern: "idem:*", Scanned: 5000, Matched: 40,
			ByStatus: map[string]int64{"PROCESSING": 4, "COMPLETED": 30, "FAILED": 6, "EXPIRED": 0},
			ByFormat: map[string]int64{"idmpctl": 38, "powertools-lock": 2},
			Stale:    2, NoTTL: 1, OrphanLocks: 2, OrphanState: 3,
		}},
	}
}

const wantMetrics = `# HELP idmpctl_stream_info Stream seen by idmpctl, with its IDMP mode (native, emulated or none) as a label; always 1.
# TYPE idmpctl_stream_info gauge
idmpctl_stream_info{stream="events",mode="emulated"} 1
idmpctl_stream_info{stream="orders",mode="native"} 1
# HELP idmpctl_stream_length Entries in the stream (XLEN).
# TYPE idmpctl_stream_length gauge
idmpctl_stream_length{stream="events"} 5
idmpctl_stream_length{stream="orders"} 1200
# HELP idmpctl_stream_idmp_duration_seconds IDMP-DURATION: how long an iid is kept, in seconds.
# TYPE idmpctl_stream_idmp_duration_seconds gauge
idmpctl_stream_idmp_duration_seconds{stream="events"} 300
idmpctl_stream_idmp_duration_seconds{stream="orders"} 100
# HELP idmpctl_stream_idmp_maxsize IDMP-MAXSIZE: most iids kept per producer.
# TYPE idmpctl_stream_idmp_maxsize gauge
idmpctl_stream_idmp_maxsize{stream="events"} 1000
idmpctl_stream_idmp_maxsize{stream="orders"} 100
# HELP idmpctl_stream_pids_tracked Producers with tracked iids (pids-tracked).
# TYPE idmpctl_stream_pids_tracked gauge
idmpctl_stream_pids_tracked{stream="events"} 1
idmpctl_stream_pids_tracked{stream="orders"} 3
# HELP idmpctl_stream_iids_tracked Iids currently tracked (iids-tracked).
# TYPE idmpctl_stream_iids_tracked gauge
idmpctl_stream_iids_tracked{stream="events"} 5
idmpctl_stream_iids_tracked{stream="orders"} 250
# HELP idmpctl_stream_iids_added_total Iids added since the stream's IDMP state was created (iids-added).
# TYPE idmpctl_stream_iids_added_total counter
idmpctl_stream_iids_added_total{stream="events"} 5
idmpctl_stream_iids_added_total{stream="orders"} 9000
# HELP idmpctl_stream_iids_duplicates_total Adds recognised as duplicates of a tracked iid (iids-duplicates).
# TYPE idmpctl_stream_iids_duplicates_total counter
idmpctl_stream_iids_duplicates_total{stream="events"} 0
idmpctl_stream_iids_duplicates_total{stream="orders"} 17
# HELP idmpctl_scan_keys_scanned Keys SCAN returned for the pattern.
# TYPE idmpctl_scan_keys_scanned gauge
idmpctl_scan_keys_scanned{pattern="idem:*"} 5000
# HELP idmpctl_scan_records_matched Idempotency records found (after any status filter).
# TYPE idmpctl_scan_records_matched gauge
idmpctl_scan_records_matched{pattern="idem:*"} 40
# HELP idmpctl_scan_records_by_status Records found, by normalised status.
# TYPE idmpctl_scan_records_by_status gauge
idmpctl_scan_records_by_status{pattern="idem:*",status="COMPLETED"} 30
idmpctl_scan_records_by_status{pattern="idem:*",status="EXPIRED"} 0
idmpctl_scan_records_by_status{pattern="idem:*",status="FAILED"} 6
idmpctl_scan_records_by_status{pattern="idem:*",status="PROCESSING"} 4
# HELP idmpctl_scan_records_by_format Records found, by record format.
# TYPE idmpctl_scan_records_by_format gauge
idmpctl_scan_records_by_format{pattern="idem:*",format="idmpctl"} 38
idmpctl_scan_records_by_format{pattern="idem:*",format="powertools-lock"} 2
# HELP idmpctl_scan_records_stale Records flagged stale: PROCESSING past their lease or deadline (stuck claims), or a lock without a TTL.
# TYPE idmpctl_scan_records_stale gauge
idmpctl_scan_records_stale{pattern="idem:*"} 2
# HELP idmpctl_scan_records_no_ttl Records whose key never expires.
# TYPE idmpctl_scan_records_no_ttl gauge
idmpctl_scan_records_no_ttl{pattern="idem:*"} 1
# HELP idmpctl_scan_orphan_locks Locks whose guarded record is gone (orphan-lock).
# TYPE idmpctl_scan_orphan_locks gauge
idmpctl_scan_orphan_locks{pattern="idem:*"} 2
# HELP idmpctl_scan_orphan_state Keys of emulated IDMP state whose stream is gone (orphan-state): purge --match PATTERN --orphan-state drops them.
# TYPE idmpctl_scan_orphan_state gauge
idmpctl_scan_orphan_state{pattern="idem:*"} 3
# HELP idmpctl_scan_limited 1 when the scan stopped at --limit: the counts are lower bounds.
# TYPE idmpctl_scan_limited gauge
idmpctl_scan_limited{pattern="idem:*"} 0
`

func TestWriteMetricsGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMetrics(&b, sampleMetrics()); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != wantMetrics {
		t.Errorf("WriteMetrics:\n%s\nwant:\n%s", got, wantMetrics)
	}
}

// parseMetrics parses text as node_exporter's textfile collector does, and
// checks what the parser lets through but a scrape would not: a family
// split in two, a repeated series, a sample timestamp, a series without
// labels (two files would both have it).
func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	var order []string
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		if len(order) == 0 || order[len(order)-1] != name {
			if slices.Contains(order, name) {
				t.Errorf("family %s is not grouped", name)
			}
			order = append(order, name)
		}
	}
	for name, f := range fams {
		if !strings.HasPrefix(name, "idmpctl_") {
			t.Errorf("family %s: want the idmpctl_ prefix", name)
		}
		if strings.HasSuffix(name, "_total") != (f.GetType() == dto.MetricType_COUNTER) {
			t.Errorf("family %s is a %v: counters, and only they, end in _total", name, f.GetType())
		}
		if f.GetHelp() == "" {
			t.Errorf("family %s has no HELP", name)
		}
		seen := map[string]bool{}
		for _, m := range f.GetMetric() {
			if m.TimestampMs != nil {
				t.Errorf("%s: a sample timestamp (the textfile collector rejects them)", name)
			}
			if len(m.GetLabel()) == 0 {
				t.Errorf("%s: a series without labels would collide across two .prom files", name)
			}
			sig := model.LabelsToSignature(labelMap(m))
			if seen[strconv.FormatUint(sig, 10)] {
				t.Errorf("%s: series %v repeated", name, labelMap(m))
			}
			seen[strconv.FormatUint(sig, 10)] = true
		}
	}
	return fams
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func value(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// find returns the value of the one sample of family name whose labels
// include want.
func find(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	var found []float64
	for _, m := range fams[name].GetMetric() {
		lm := labelMap(m)
		ok := true
		for k, v := range want {
			ok = ok && lm[k] == v
		}
		if ok {
			found = append(found, value(m))
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d samples, want 1", name, want, len(found))
	}
	return found[0]
}

func TestWriteMetricsParses(t *testing.T) {
	m := sampleMetrics()
	var b bytes.Buffer
	if err := WriteMetrics(&b, m); err != nil {
		t.Fatal(err)
	}
	fams := parseMetrics(t, b.String())
	counters := []string{"idmpctl_stream_iids_added_total", "idmpctl_stream_iids_duplicates_total"}
	for _, name := range counters {
		if fams[name].GetType() != dto.MetricType_COUNTER {
			t.Errorf("%s: %v, want counter", name, fams[name].GetType())
		}
	}
	for _, s := range m.Streams[:2] {
		l := map[string]string{"stream": s.Stream}
		for name, want := range map[string]int64{
			"idmpctl_stream_length":                s.Length,
			"idmpctl_stream_idmp_duration_seconds": s.IDMPDuration,
			"idmpctl_stream_idmp_maxsize":          s.IDMPMaxSize,
			"idmpctl_stream_pids_tracked":          s.PIDsTracked,
			"idmpctl_stream_iids_tracked":          s.IIDsTracked,
			"idmpctl_stream_iids_added_total":      s.IIDsAdded,
			"idmpctl_stream_iids_duplicates_total": s.IIDsDuplicates,
		} {
			if got := find(t, fams, name, l); got != float64(want) {
				t.Errorf("%s{stream=%q} = %v, want %d", name, s.Stream, got, want)
			}
		}
		if got := find(t, fams, "idmpctl_stream_info", map[string]string{"stream": s.Stream, "mode": s.Mode}); got != 1 {
			t.Errorf("idmpctl_stream_info{stream=%q} = %v", s.Stream, got)
		}
	}
	sc := m.Scans[0]
	p := map[string]string{"pattern": sc.Pattern}
	for name, want := range map[string]int64{
		"idmpctl_scan_keys_scanned":    sc.Scanned,
		"idmpctl_scan_records_matched": sc.Matched,
		"idmpctl_scan_records_stale":   sc.Stale,
		"idmpctl_scan_records_no_ttl":  sc.NoTTL,
		"idmpctl_scan_orphan_locks":    sc.OrphanLocks,
		"idmpctl_scan_orphan_state":    sc.OrphanState,
		"idmpctl_scan_limited":         0,
	} {
		if got := find(t, fams, name, p); got != float64(want) {
			t.Errorf("%s = %v, want %d", name, got, want)
		}
	}
	for st, n := range sc.ByStatus {
		if got := find(t, fams, "idmpctl_scan_records_by_status", map[string]string{"pattern": sc.Pattern, "status": st}); got != float64(n) {
			t.Errorf("by_status %s = %v, want %d", st, got, n)
		}
	}
	for f, n := range sc.ByFormat {
		if got := find(t, fams, "idmpctl_scan_records_by_format", map[string]string{"pattern": sc.Pattern, "format": f}); got != float64(n) {
			t.Errorf("by_format %s = %v, want %d", f, got, n)
		}
	}
}

// hostileNames are stream names and patterns a keyspace may hold.
var hostileNames = []string{
	"", `""`, `"`, `"\xff"`, `a"b`, `a\b`, `a\\"b\`, "a\nb", `a\nb`, "a\rb", "a\tb",
	"\x1b[31mred", "nul\x00byte", "\xff\xfe", "a\xffb", "\xc3", "ünï €", "日本語", "😀 emoji",
	"nb\u00a0sp", "{orders}:s", "a}b", "a,b=c", "# HELP", "x 1\nidmpctl_fake 2", "idem:*[?]",
}

func TestWriteMetricsHostileNames(t *testing.T) {
	var m Metrics
	for i, s := range hostileNames {
		m.Streams = append(m.Streams, StreamMetrics{Stream: s, Mode: "native", Length: int64(i)})
		m.Scans = append(m.Scans, ScanMetrics{Pattern: s, Scanned: int64(i), ByStatus: map[string]int64{"COMPLETED": int64(i)}})
	}
	var b bytes.Buffer
	if err := WriteMetrics(&b, m); err != nil {
		t.Fatal(err)
	}
	fams := parseMetrics(t, b.String())
	if n := len(fams["idmpctl_stream_length"].GetMetric()); n != len(hostileNames) {
		t.Fatalf("%d stream_length series for %d names", n, len(hostileNames))
	}
	for i, s := range hostileNames {
		label := MetricLabel(s)
		if got := find(t, fams, "idmpctl_stream_length", map[string]string{"stream": label}); got != float64(i) {
			t.Errorf("stream %q (label %s): length %v, want %d", s, label, got, i)
		}
		if got := find(t, fams, "idmpctl_scan_keys_scanned", map[string]string{"pattern": label}); got != float64(i) {
			t.Errorf("pattern %q (label %s): scanned %v, want %d", s, label, got, i)
		}
		if back := unlabel(t, label); back != s {
			t.Errorf("label %s reads back as %q, want %q", label, back, s)
		}
	}
}

// unlabel is what a reader of the metrics does to get a name back from its
// label: Go-unquote a label that starts with a double quote.
func unlabel(t *testing.T, label string) string {
	if !strings.HasPrefix(label, `"`) {
		return label
	}
	s, err := strconv.Unquote(label)
	if err != nil {
		t.Fatalf("label %s: %v", label, err)
	}
	return s
}

func TestWriteMetricsEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMetrics(&b, Metrics{}); err != nil || b.Len() != 0 {
		t.Errorf("empty metrics: %q, %v", b.String(), err)
	}
	// A scan that found nothing still says so.
	b.Reset()
	if err := WriteMetrics(&b, Metrics{Scans: []ScanMetrics{{Pattern: "none:*", Limited: true}}}); err != nil {
		t.Fatal(err)
	}
	fams := parseMetrics(t, b.String())
	if _, ok := fams["idmpctl_scan_records_by_status"]; ok {
		t.Error("a family without samples was written")
	}
	if got := find(t, fams, "idmpctl_scan_limited", map[string]string{"pattern": "none:*"}); got != 1 {
		t.Errorf("limited = %v", got)
	}
}

type failingWriter struct{ writes int }

func (f *failingWriter) Write(p []byte) (int, error) {
	f.writes++
	return 0, errors.New("disk full")
}

func TestWriteMetricsOneWrite(t *testing.T) {
	// One Write, so an error leaves nothing half-written behind it, and the
	// error comes back.
	f := &failingWriter{}
	if err := WriteMetrics(f, sampleMetrics()); err == nil || f.writes != 1 {
		t.Errorf("err %v after %d writes, want an error after 1", err, f.writes)
	}
}

func FuzzWriteMetrics(f *testing.F) {
	for _, s := range hostileNames {
		f.Add(s, s+"x", s)
	}
	f.Fuzz(func(t *testing.T, stream, other, pattern string) {
		m := Metrics{
			Streams: []StreamMetrics{{Stream: stream, Mode: "emulated", Length: 1}, {Stream: other, Mode: "native", Length: 2}},
			Scans:   []ScanMetrics{{Pattern: pattern, ByStatus: map[string]int64{stream: 3}, ByFormat: map[string]int64{other: 4}}},
		}
		var b bytes.Buffer
		if err := WriteMetrics(&b, m); err != nil {
			t.Fatal(err)
		}
		fams := parseMetrics(t, b.String())
		want := 2
		if stream == other {
			want = 1
		}
		if n := len(fams["idmpctl_stream_length"].GetMetric()); n != want {
			t.Fatalf("%d series for streams %q, %q", n, stream, other)
		}
		for _, m := range fams["idmpctl_stream_length"].GetMetric() {
			name := unlabel(t, labelMap(m)["stream"])
			if name != stream && name != other {
				t.Errorf("label %q reads back as %q", labelMap(m)["stream"], name)
			}
		}
	})
}

// TestProductCodeImports keeps the Prometheus libraries in the tests: the
// binary's start time matters, and their package init is not free.
func TestProductCodeImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); strings.Contains(path, "prometheus") {
				t.Errorf("%s imports %s: keep it in _test.go files", name, path)
			}
		}
	}
}
