package render

// -o prometheus: the Prometheus text exposition format 0.0.4, which
// node_exporter's textfile collector reads. Written by hand (a few dozen
// lines) rather than with the Prometheus client, which would add its
// package init to every run of idmpctl; the tests parse the output with
// github.com/prometheus/common/expfmt.

import (
	"cmp"
	"io"
	"slices"
	"strconv"
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
	// NotAtomic: the state was read with plain commands (a user who may not
	// run scripts), not as one snapshot.
	NotAtomic bool
}

// ScanMetrics counts one scan of the keyspace (inspect --match Pattern).
// Matched, ByStatus and ByFormat count the records reported (after any
// --status filter); ByStatus and ByFormat get one sample per entry, so put a
// 0 entry for each status or format the scan counted if its series should
// not vanish between runs. Stale, NoTTL and OrphanLocks count the reported
// records flagged stale, no-ttl and orphan-lock. Limited says the scan
// stopped at --limit, so every count is a lower bound.
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
	// Memory, when measured (inspect --match --memory): bytes estimated
	// from a sample of MEMORY USAGE.
	Memory *ScanMemory
}

// ScanMemory is what a scan's records use, estimated from a sample: each
// format and status's records times the mean MEMORY USAGE of those sampled.
// ByStatus and ByFormat get one sample per entry (put 0 entries in for the
// series that should not vanish). Exact says every record was measured.
type ScanMemory struct {
	Bytes    int64
	ByStatus map[string]int64
	ByFormat map[string]int64
	Sampled  int64
	Exact    bool
}

// Metrics is everything one run exposes.
//
// There is no timestamp or last-success gauge: node_exporter's textfile
// collector exposes each file's age (node_textfile_mtime_seconds{file}),
// the cron job replaces the file only when idmpctl succeeded, and a series
// without labels would collide when two files (a stream job and a scan
// job) both carried it, which fails the collector's whole scrape.
type Metrics struct {
	Streams []StreamMetrics
	Scans   []ScanMetrics
}

// WriteMetrics writes m in the Prometheus text format 0.0.4 in one Write.
//
// Families come in a fixed order, each with one # HELP and # TYPE line and
// all of its samples together, sorted by stream or pattern (byte order),
// then by status or format; a family without samples is left out. A
// stream or pattern given twice is written once (the first given). No
// sample carries a timestamp (the textfile collector rejects them).
// Gauges and counters follow the Prometheus naming rules: base units
// (seconds), and _total on the counters iids-added and iids-duplicates.
// The mode is a label of idmpctl_stream_info only (value 1); join it onto
// other series with `* on(stream) group_left(mode) idmpctl_stream_info`.
//
// Label values are Field(s): a name of printable UTF-8 is its exact bytes;
// one with invalid UTF-8, a control character or a leading '"' is
// Go-quoted (strconv.Unquote restores it), and so is the empty name (`""`),
// so that every series has a non-empty label and no two names share one.
// The format's escapes (\\, \", \n) are then applied.
func WriteMetrics(w io.Writer, m Metrics) error {
	var b strings.Builder
	streams := uniqueSorted(m.Streams, func(s StreamMetrics) string { return s.Stream })
	scans := uniqueSorted(m.Scans, func(s ScanMetrics) string { return s.Pattern })

	if len(streams) > 0 {
		family(&b, "idmpctl_stream_info", "gauge", "Stream seen by idmpctl, with its IDMP mode (native, emulated or none) as a label; always 1.")
		for _, s := range streams {
			sample(&b, "idmpctl_stream_info", 1, "stream", s.Stream, "mode", s.Mode)
		}
		perStream := []struct {
			name, typ, help string
			value           func(StreamMetrics) int64
		}{
			{"idmpctl_stream_length", "gauge", "Entries in the stream (XLEN).", func(s StreamMetrics) int64 { return s.Length }},
			{"idmpctl_stream_idmp_duration_seconds", "gauge", "IDMP-DURATION: how long an iid is kept, in seconds.", func(s StreamMetrics) int64 { return s.IDMPDuration }},
			{"idmpctl_stream_idmp_maxsize", "gauge", "IDMP-MAXSIZE: most iids kept per producer.", func(s StreamMetrics) int64 { return s.IDMPMaxSize }},
			{"idmpctl_stream_pids_tracked", "gauge", "Producers with tracked iids (pids-tracked).", func(s StreamMetrics) int64 { return s.PIDsTracked }},
			{"idmpctl_stream_iids_tracked", "gauge", "Iids currently tracked (iids-tracked).", func(s StreamMetrics) int64 { return s.IIDsTracked }},
			{"idmpctl_stream_iids_added_total", "counter", "Iids added since the stream's IDMP state was created (iids-added).", func(s StreamMetrics) int64 { return s.IIDsAdded }},
			{"idmpctl_stream_iids_duplicates_total", "counter", "Adds recognised as duplicates of a tracked iid (iids-duplicates).", func(s StreamMetrics) int64 { return s.IIDsDuplicates }},
		}
		for _, f := range perStream {
			family(&b, f.name, f.typ, f.help)
			for _, s := range streams {
				sample(&b, f.name, f.value(s), "stream", s.Stream)
			}
		}
		if slices.ContainsFunc(streams, func(s StreamMetrics) bool { return s.NotAtomic }) {
			family(&b, "idmpctl_stream_read_atomic", "gauge", "1 when the stream's IDMP state was read in one atomic step, 0 when with plain commands (the user may not run scripts): its counts can then be off by the adds made meanwhile. Only in documents where some stream was read with plain commands.")
			for _, s := range streams {
				v := int64(1)
				if s.NotAtomic {
					v = 0
				}
				sample(&b, "idmpctl_stream_read_atomic", v, "stream", s.Stream)
			}
		}
	}

	if len(scans) > 0 {
		perScan := []struct {
			name, help string
			value      func(ScanMetrics) int64
		}{
			{"idmpctl_scan_keys_scanned", "Keys SCAN returned for the pattern.", func(s ScanMetrics) int64 { return s.Scanned }},
			{"idmpctl_scan_records_matched", "Idempotency records found (after any status filter).", func(s ScanMetrics) int64 { return s.Matched }},
		}
		for _, f := range perScan {
			family(&b, f.name, "gauge", f.help)
			for _, s := range scans {
				sample(&b, f.name, f.value(s), "pattern", s.Pattern)
			}
		}
		breakdown(&b, scans, "idmpctl_scan_records_by_status", "Records found, by normalised status.", "status", func(s ScanMetrics) map[string]int64 { return s.ByStatus })
		breakdown(&b, scans, "idmpctl_scan_records_by_format", "Records found, by record format.", "format", func(s ScanMetrics) map[string]int64 { return s.ByFormat })
		flags := []struct {
			name, help string
			value      func(ScanMetrics) int64
		}{
			{"idmpctl_scan_records_stale", "Records flagged stale: PROCESSING past their lease or deadline (stuck claims), or a lock without a TTL.", func(s ScanMetrics) int64 { return s.Stale }},
			{"idmpctl_scan_records_no_ttl", "Records whose key never expires.", func(s ScanMetrics) int64 { return s.NoTTL }},
			{"idmpctl_scan_orphan_locks", "Locks whose guarded record is gone (orphan-lock).", func(s ScanMetrics) int64 { return s.OrphanLocks }},
			{"idmpctl_scan_orphan_state", "Keys of emulated IDMP state whose stream is gone (orphan-state): purge --match PATTERN --orphan-state drops them.", func(s ScanMetrics) int64 { return s.OrphanState }},
			{"idmpctl_scan_limited", "1 when the scan stopped at --limit: the counts are lower bounds.", func(s ScanMetrics) int64 {
				if s.Limited {
					return 1
				}
				return 0
			}},
		}
		for _, f := range flags {
			family(&b, f.name, "gauge", f.help)
			for _, s := range scans {
				sample(&b, f.name, f.value(s), "pattern", s.Pattern)
			}
		}
		writeScanMemory(&b, scans)
	}

	_, err := io.WriteString(w, b.String())
	return err
}

// writeScanMemory writes the memory families of the scans that measured it.
// Every figure is an estimate and says so in its name (_estimate_bytes),
// except where idmpctl_scan_memory_exact is 1.
func writeScanMemory(b *strings.Builder, scans []ScanMetrics) {
	var measured []ScanMetrics
	for _, s := range scans {
		if s.Memory != nil {
			measured = append(measured, s)
		}
	}
	if len(measured) == 0 {
		return
	}
	family(b, "idmpctl_scan_memory_estimate_bytes", "gauge", "Bytes the records found use (MEMORY USAGE), estimated from a sample: each format and status's records times the mean of those sampled.")
	for _, s := range measured {
		sample(b, "idmpctl_scan_memory_estimate_bytes", s.Memory.Bytes, "pattern", s.Pattern)
	}
	mem := func(s ScanMetrics) *ScanMemory { return s.Memory }
	breakdown(b, measured, "idmpctl_scan_memory_by_status_estimate_bytes", "Bytes the records found use, by normalised status, estimated from a sample.", "status", func(s ScanMetrics) map[string]int64 { return mem(s).ByStatus })
	breakdown(b, measured, "idmpctl_scan_memory_by_format_estimate_bytes", "Bytes the records found use, by record format, estimated from a sample.", "format", func(s ScanMetrics) map[string]int64 { return mem(s).ByFormat })
	family(b, "idmpctl_scan_memory_sampled_keys", "gauge", "Records whose MEMORY USAGE was measured for the estimates.")
	for _, s := range measured {
		sample(b, "idmpctl_scan_memory_sampled_keys", s.Memory.Sampled, "pattern", s.Pattern)
	}
	family(b, "idmpctl_scan_memory_exact", "gauge", "1 when every record found was measured: the memory estimates are then exact sums of MEMORY USAGE.")
	for _, s := range measured {
		v := int64(0)
		if s.Memory.Exact {
			v = 1
		}
		sample(b, "idmpctl_scan_memory_exact", v, "pattern", s.Pattern)
	}
}

// breakdown writes one family with a sample per (pattern, key) of each
// scan's map, keys sorted.
func breakdown(b *strings.Builder, scans []ScanMetrics, name, help, label string, counts func(ScanMetrics) map[string]int64) {
	wrote := false
	for _, s := range scans {
		m := counts(s)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
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

func family(b *strings.Builder, name, typ, help string) {
	b.WriteString("# HELP ")
	b.WriteString(name)
	b.WriteByte(' ')
	b.WriteString(help) // constant texts: no backslash or newline to escape
	b.WriteString("\n# TYPE ")
	b.WriteString(name)
	b.WriteByte(' ')
	b.WriteString(typ)
	b.WriteByte('\n')
}

// sample writes `name{l1="v1",...} value`; labels are name, value pairs.
func sample(b *strings.Builder, name string, value int64, labels ...string) {
	b.WriteString(name)
	for i := 0; i+1 < len(labels); i += 2 {
		if i == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(labels[i])
		b.WriteString(`="`)
		b.WriteString(escapeLabelValue(MetricLabel(labels[i+1])))
		b.WriteByte('"')
	}
	if len(labels) > 0 {
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(value, 10))
	b.WriteByte('\n')
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

// escapeLabelValue applies the text format's escapes to a label value.
func escapeLabelValue(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return labelEscaper.Replace(s)
}
