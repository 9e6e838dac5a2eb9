package render

// -o prometheus: the text format 0.0.4 that node_exporter's textfile
// collector reads, by hand: the Prometheus client's init would slow every
// run. The tests parse it with prometheus/common/expfmt.

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// StreamMetrics is one stream's IDMP state, as inspect STREAM reads it
// (the XINFO-equivalent view). Mode is "native", "emulated" or "none".
type StreamMetrics struct {
	Stream         string
	Mode           string
	Length         int64 // entries (XLEN)
	IDMPDuration   int64 // seconds
	IDMPMaxSize    int64 // iids kept per producer
	PIDsTracked    int64
	IIDsTracked    int64
	IIDsAdded      int64 // lifetime counter
	IIDsDuplicates int64 // lifetime counter
	NotAtomic      bool  // read with plain commands (no scripts), not one snapshot
}

// ScanMetrics counts one scan (inspect --match Pattern), records after any
// --status filter. ByStatus and ByFormat get one sample per entry: put in 0
// entries for series that should not vanish between runs. Limited: stopped
// at --limit, every count a lower bound.
type ScanMetrics struct {
	Pattern     string
	Scanned     int64
	Matched     int64
	ByStatus    map[string]int64
	ByFormat    map[string]int64
	Stale       int64
	NoTTL       int64
	OrphanLocks int64
	OrphanState int64 // emulated IDMP state keys whose stream is gone (orphan-state)
	Limited     bool
	Memory      *ScanMemory // with --memory
}

// ScanMemory is what a scan's records use: each format and status's records
// times the mean MEMORY USAGE of those sampled (maps as in ScanMetrics).
// Exact says every record was measured.
type ScanMemory struct {
	Bytes    int64
	ByStatus map[string]int64
	ByFormat map[string]int64
	Sampled  int64
	Exact    bool
}

// Metrics is everything one run exposes. No timestamp or last-success
// gauge: the collector exposes each file's age, and an unlabelled series in
// two files (a stream job, a scan job) would fail its whole scrape.
type Metrics struct {
	Streams []StreamMetrics
	Scans   []ScanMetrics
}

// WriteMetrics writes m in one Write: families in a fixed order, samples
// sorted by stream or pattern (byte order; a repeat is dropped), then
// status or format; a family without samples is left out; no timestamps
// (the collector rejects them). The mode is a label of idmpctl_stream_info
// alone: join it with `* on(stream) group_left(mode) idmpctl_stream_info`.
func WriteMetrics(w io.Writer, m Metrics) error {
	var b strings.Builder
	streams := uniqueSorted(m.Streams, func(s StreamMetrics) string { return s.Stream })
	scans := uniqueSorted(m.Scans, func(s ScanMetrics) string { return s.Pattern })

	if len(streams) > 0 {
		family(&b, "idmpctl_stream_info", "gauge", "Stream seen by idmpctl, with its IDMP mode (native, emulated or none) as a label; always 1.")
		for _, s := range streams {
			sample(&b, "idmpctl_stream_info", 1, "stream", s.Stream, "mode", s.Mode)
		}
		ms := []streamMetric{
			{"idmpctl_stream_length", "gauge", "Entries in the stream (XLEN).", func(s StreamMetrics) int64 { return s.Length }},
			{"idmpctl_stream_idmp_duration_seconds", "gauge", "IDMP-DURATION: how long an iid is kept, in seconds.", func(s StreamMetrics) int64 { return s.IDMPDuration }},
			{"idmpctl_stream_idmp_maxsize", "gauge", "IDMP-MAXSIZE: most iids kept per producer.", func(s StreamMetrics) int64 { return s.IDMPMaxSize }},
			{"idmpctl_stream_pids_tracked", "gauge", "Producers with tracked iids (pids-tracked).", func(s StreamMetrics) int64 { return s.PIDsTracked }},
			{"idmpctl_stream_iids_tracked", "gauge", "Iids currently tracked (iids-tracked).", func(s StreamMetrics) int64 { return s.IIDsTracked }},
			{"idmpctl_stream_iids_added_total", "counter", "Iids added since the stream's IDMP state was created (iids-added).", func(s StreamMetrics) int64 { return s.IIDsAdded }},
			{"idmpctl_stream_iids_duplicates_total", "counter", "Adds recognised as duplicates of a tracked iid (iids-duplicates).", func(s StreamMetrics) int64 { return s.IIDsDuplicates }},
		}
		if slices.ContainsFunc(streams, func(s StreamMetrics) bool { return s.NotAtomic }) {
			ms = append(ms, streamMetric{"idmpctl_stream_read_atomic", "gauge", "1 when the stream's IDMP state was read in one atomic step, 0 when with plain commands (the user may not run scripts): its counts can then be off by the adds made meanwhile. Only in documents where some stream was read with plain commands.", func(s StreamMetrics) int64 { return one(!s.NotAtomic) }})
		}
		families(&b, streams, "stream", func(s StreamMetrics) string { return s.Stream }, ms...)
	}

	if len(scans) > 0 {
		byPattern(&b, scans,
			scanMetric{"idmpctl_scan_keys_scanned", "gauge", "Keys SCAN returned for the pattern.", func(s ScanMetrics) int64 { return s.Scanned }},
			scanMetric{"idmpctl_scan_records_matched", "gauge", "Idempotency records found (after any status filter).", func(s ScanMetrics) int64 { return s.Matched }},
		)
		breakdown(&b, scans, "idmpctl_scan_records_by_status", "Records found, by normalised status.", "status", func(s ScanMetrics) map[string]int64 { return s.ByStatus })
		breakdown(&b, scans, "idmpctl_scan_records_by_format", "Records found, by record format.", "format", func(s ScanMetrics) map[string]int64 { return s.ByFormat })
		byPattern(&b, scans,
			scanMetric{"idmpctl_scan_records_stale", "gauge", "Records flagged stale: PROCESSING past their lease or deadline (stuck claims), or a lock without a TTL.", func(s ScanMetrics) int64 { return s.Stale }},
			scanMetric{"idmpctl_scan_records_no_ttl", "gauge", "Records whose key never expires.", func(s ScanMetrics) int64 { return s.NoTTL }},
			scanMetric{"idmpctl_scan_orphan_locks", "gauge", "Locks whose guarded record is gone (orphan-lock).", func(s ScanMetrics) int64 { return s.OrphanLocks }},
			scanMetric{"idmpctl_scan_orphan_state", "gauge", "Keys of emulated IDMP state whose stream is gone (orphan-state): purge --match PATTERN --orphan-state drops them.", func(s ScanMetrics) int64 { return s.OrphanState }},
			scanMetric{"idmpctl_scan_limited", "gauge", "1 when the scan stopped at --limit: the counts are lower bounds.", func(s ScanMetrics) int64 { return one(s.Limited) }},
		)
		// The memory families of the scans that measured it. Every figure
		// is an estimate and says so in its name (_estimate_bytes), except
		// where idmpctl_scan_memory_exact is 1.
		measured := slices.DeleteFunc(slices.Clone(scans), func(s ScanMetrics) bool { return s.Memory == nil })
		if len(measured) > 0 {
			byPattern(&b, measured, scanMetric{"idmpctl_scan_memory_estimate_bytes", "gauge", "Bytes the records found use (MEMORY USAGE), estimated from a sample: each format and status's records times the mean of those sampled.", func(s ScanMetrics) int64 { return s.Memory.Bytes }})
			breakdown(&b, measured, "idmpctl_scan_memory_by_status_estimate_bytes", "Bytes the records found use, by normalised status, estimated from a sample.", "status", func(s ScanMetrics) map[string]int64 { return s.Memory.ByStatus })
			breakdown(&b, measured, "idmpctl_scan_memory_by_format_estimate_bytes", "Bytes the records found use, by record format, estimated from a sample.", "format", func(s ScanMetrics) map[string]int64 { return s.Memory.ByFormat })
			byPattern(&b, measured,
				scanMetric{"idmpctl_scan_memory_sampled_keys", "gauge", "Records whose MEMORY USAGE was measured for the estimates.", func(s ScanMetrics) int64 { return s.Memory.Sampled }},
				scanMetric{"idmpctl_scan_memory_exact", "gauge", "1 when every record found was measured: the memory estimates are then exact sums of MEMORY USAGE.", func(s ScanMetrics) int64 { return one(s.Memory.Exact) }},
			)
		}
	}

	_, err := io.WriteString(w, b.String())
	return err
}

// metric is a family with one sample per item (a stream, a scan).
type metric[T any] struct {
	name, typ, help string
	value           func(T) int64
}

type (
	streamMetric = metric[StreamMetrics]
	scanMetric   = metric[ScanMetrics]
)

// families writes each of ms, one sample per item labelled label=key(item).
func families[T any](b *strings.Builder, items []T, label string, key func(T) string, ms ...metric[T]) {
	for _, m := range ms {
		family(b, m.name, m.typ, m.help)
		for _, it := range items {
			sample(b, m.name, m.value(it), label, key(it))
		}
	}
}

func byPattern(b *strings.Builder, scans []ScanMetrics, ms ...scanMetric) {
	families(b, scans, "pattern", func(s ScanMetrics) string { return s.Pattern }, ms...)
}

func one(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

// breakdown writes one family with a sample per (pattern, key) of each
// scan's map, keys sorted.
func breakdown(b *strings.Builder, scans []ScanMetrics, name, help, label string, counts func(ScanMetrics) map[string]int64) {
	wrote := false
	for _, s := range scans {
		m := counts(s)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !wrote {
				family(b, name, "gauge", help)
				wrote = true
			}
			sample(b, name, m[k], "pattern", s.Pattern, label, k)
		}
	}
}

// uniqueSorted sorts by key (stable, byte order) and drops later repeats
// of a key: two samples with the same labels would make the file invalid.
func uniqueSorted[T any](in []T, key func(T) string) []T {
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return slices.CompactFunc(out, func(a, b T) bool { return key(a) == key(b) })
}

// family writes the HELP and TYPE lines (constant texts: nothing to escape).
func family(b *strings.Builder, name, typ, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// sample writes `name{l1="v1",...} value`; labels are name, value pairs.
func sample(b *strings.Builder, name string, value int64, labels ...string) {
	b.WriteString(name)
	sep := "{"
	for i := 0; i+1 < len(labels); i += 2 {
		fmt.Fprintf(b, `%s%s="%s"`, sep, labels[i], labelEscaper.Replace(MetricLabel(labels[i+1])))
		sep = ","
	}
	if sep == "," {
		b.WriteByte('}')
	}
	fmt.Fprintf(b, " %d\n", value)
}

// MetricLabel is the label value -o prometheus gives a name (a stream, a
// pattern): Field(s), with the empty name written as `""`. The result is
// valid UTF-8, and distinct names get distinct labels.
func MetricLabel(s string) string {
	if s == "" {
		return `""`
	}
	return Field(s)
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
