package e2e

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsStreams runs inspect STREAM... -o prometheus against a real
// server with IDMP streams written in auto mode (emulated, or native on
// Redis 8.6), and reads stdout with the Prometheus client's own text
// parser: one document with every stream, the values inspect shows.
func TestMetricsStreams(t *testing.T) {
	// The mode label: a stream never written idempotently is "none" in
	// emulated mode; natively every stream has its settings and counters.
	mode, plainMode := "emulated", "none"
	if nativeServer(t) {
		mode, plainMode = "native", "native"
	}
	srv := redistest.New(t)
	cli := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	// orders: 3 iids added by two producers, 3 duplicates.
	for _, add := range [][]string{{"p1", "a"}, {"p1", "a"}, {"p1", "b"}, {"p2", "c"}, {"p2", "c"}, {"p2", "c"}} {
		cli.Expect(0, "xadd", "orders", "--pid", add[0], "--iid", add[1], "amount", "100")
	}
	// events: its own settings, one add after them.
	cli.Expect(0, "xadd", "events", "--pid", "p", "--iid", "x", "f", "1")
	cli.Expect(0, "cfgset", "events", "--duration", "300", "--maxsize", "5", "--yes")
	cli.Expect(0, "xadd", "events", "--pid", "p", "--iid", "y", "f", "1")
	// plain: a stream never written idempotently.
	if _, err := srv.Do("XADD", "plain", "*", "f", "v"); err != nil {
		t.Fatal(err)
	}

	r := cli.Expect(0, "inspect", "orders", "events", "plain", "-o", "prometheus")
	if r.Stderr != "" {
		t.Errorf("stderr: %q", r.Stderr)
	}
	fams := parsePrometheus(t, r.Stdout)
	for _, c := range []struct {
		family, stream string
		want           float64
	}{
		{"idmpctl_stream_iids_added_total", "orders", 3},
		{"idmpctl_stream_iids_duplicates_total", "orders", 3},
		{"idmpctl_stream_pids_tracked", "orders", 2},
		{"idmpctl_stream_iids_tracked", "orders", 3},
		{"idmpctl_stream_length", "orders", 3},
		{"idmpctl_stream_idmp_duration_seconds", "orders", 100},
		{"idmpctl_stream_idmp_maxsize", "orders", 100},
		{"idmpctl_stream_idmp_duration_seconds", "events", 300},
		{"idmpctl_stream_idmp_maxsize", "events", 5},
		{"idmpctl_stream_length", "events", 2},
		{"idmpctl_stream_iids_duplicates_total", "events", 0},
		{"idmpctl_stream_length", "plain", 1},
		{"idmpctl_stream_iids_added_total", "plain", 0},
	} {
		if got := sampleValue(t, fams, c.family, map[string]string{"stream": c.stream}); got != c.want {
			t.Errorf("%s{stream=%q} = %v, want %v", c.family, c.stream, got, c.want)
		}
	}
	for stream, mode := range map[string]string{"orders": mode, "events": mode, "plain": plainMode} {
		if got := sampleValue(t, fams, "idmpctl_stream_info", map[string]string{"stream": stream, "mode": mode}); got != 1 {
			t.Errorf("idmpctl_stream_info{stream=%q,mode=%q} = %v, want 1", stream, mode, got)
		}
	}
	if got := fams["idmpctl_stream_iids_added_total"].GetType(); got != dto.MetricType_COUNTER {
		t.Errorf("iids_added_total is a %v, want a counter", got)
	}

	// A missing stream: the document of the others, then 66.
	r = cli.Expect(66, "inspect", "orders", "nope", "-o", "prometheus")
	fams = parsePrometheus(t, r.Stdout)
	if n := len(fams["idmpctl_stream_info"].GetMetric()); n != 1 {
		t.Errorf("%d streams, want orders alone:\n%s", n, r.Stdout)
	}
	if !strings.Contains(r.Stderr, `no such key: "nope"`) {
		t.Errorf("stderr: %q", r.Stderr)
	}
}

// TestMetricsScan runs inspect --match -o prometheus over a keyspace of
// records in several formats and states, and checks the counts by status
// and format and the flagged records.
func TestMetricsScan(t *testing.T) {
	srv := redistest.New(t)
	cli := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	tok := cli.Expect(0, "claim", "acquire", "idem:done").Stdout
	cli.Expect(0, "claim", "complete", "idem:done", "--token", strings.TrimSpace(tok))
	tok = cli.Expect(0, "claim", "acquire", "idem:failed").Stdout
	cli.Expect(0, "claim", "fail", "idem:failed", "--token", strings.TrimSpace(tok))
	cli.Expect(0, "claim", "acquire", "idem:running") // a live claim: no flag
	for _, c := range [][]string{
		// a claim whose lease ended long ago, without a TTL: stale, no-ttl
		{"HSET", "idem:stale", "status", "PROCESSING", "owner", "w1", "token", "3", "attempts", "3", "lease_until", "1", "created", "1", "updated", "1"},
		// a Powertools lock whose record is gone: orphan-lock, stale, no-ttl
		{"SET", "idem:gone:lock", "true"},
		{"SET", "idem:mark", "COMPLETED"},       // a marker: no-ttl
		{"SET", "idem:junk", "just some value"}, // no record: UNKNOWN, no-ttl
		{"SET", "other", "COMPLETED"},           // outside the pattern
	} {
		if _, err := srv.Do(c...); err != nil {
			t.Fatal(err)
		}
	}
	// Emulated state keys (the scan's idmp-state format), on Redis 8.6 too.
	cli.Expect(0, "xadd", "orders", "--pid", "p", "--iid", "a", "f", "1", "--mode", "emulated")

	r := cli.Expect(0, "inspect", "--match", "idem:*", "-o", "prometheus")
	if r.Stderr != "" {
		t.Errorf("stderr: %q (the document carries the summary)", r.Stderr)
	}
	fams := parsePrometheus(t, r.Stdout)
	pat := map[string]string{"pattern": "idem:*"}
	with := func(k, v string) map[string]string { return map[string]string{"pattern": "idem:*", k: v} }
	for _, c := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"idmpctl_scan_keys_scanned", pat, 7},
		{"idmpctl_scan_records_matched", pat, 7},
		{"idmpctl_scan_records_by_status", with("status", "PROCESSING"), 2},
		{"idmpctl_scan_records_by_status", with("status", "LOCKED"), 1},
		{"idmpctl_scan_records_by_status", with("status", "COMPLETED"), 2},
		{"idmpctl_scan_records_by_status", with("status", "FAILED"), 1},
		{"idmpctl_scan_records_by_status", with("status", "UNKNOWN"), 1},
		{"idmpctl_scan_records_by_status", with("status", "EXPIRED"), 0}, // present, zero
		{"idmpctl_scan_records_by_format", with("format", "idmpctl"), 4},
		{"idmpctl_scan_records_by_format", with("format", "powertools-lock"), 1},
		{"idmpctl_scan_records_by_format", with("format", "marker"), 1},
		{"idmpctl_scan_records_by_format", with("format", "unknown"), 1},
		{"idmpctl_scan_records_by_format", with("format", "powertools"), 0},
		{"idmpctl_scan_records_by_format", with("format", "stream"), 0},
		{"idmpctl_scan_records_stale", pat, 2},
		{"idmpctl_scan_records_no_ttl", pat, 4},
		{"idmpctl_scan_orphan_locks", pat, 1},
		{"idmpctl_scan_orphan_state", pat, 0},
		{"idmpctl_scan_limited", pat, 0},
	} {
		if got := sampleValue(t, fams, c.family, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
	if n := len(fams["idmpctl_scan_records_by_status"].GetMetric()); n != 6 {
		t.Errorf("%d statuses, want every one a scan reports (6)", n)
	}
	if _, ok := fams["idmpctl_stream_info"]; ok {
		t.Errorf("stream families in a scan's document")
	}

	// --status and --limit: the filtered statuses alone; limited says the
	// counts are lower bounds.
	r = cli.Expect(0, "inspect", "--match", "idem:*", "--status", "PROCESSING", "--limit", "1", "-o", "prometheus")
	fams = parsePrometheus(t, r.Stdout)
	if got := sampleValue(t, fams, "idmpctl_scan_limited", pat); got != 1 {
		t.Errorf("limited = %v, want 1", got)
	}
	if got := sampleValue(t, fams, "idmpctl_scan_records_by_status", with("status", "PROCESSING")); got != 1 {
		t.Errorf("PROCESSING = %v, want 1 (the limit)", got)
	}
	if n := len(fams["idmpctl_scan_records_by_status"].GetMetric()); n != 1 {
		t.Errorf("%d statuses, want PROCESSING alone", n)
	}

	// A scan of everything counts the stream by format; idmpctl's IDMP
	// state keys only with --all. Neither is a record: records_matched and
	// no_ttl count the 8 records alone (7 above and other).
	r = cli.Expect(0, "inspect", "--match", "*", "-o", "prometheus")
	fams = parsePrometheus(t, r.Stdout)
	all := map[string]string{"pattern": "*", "format": "stream"}
	if got := sampleValue(t, fams, "idmpctl_scan_records_by_format", all); got != 1 {
		t.Errorf("streams = %v, want 1", got)
	}
	all["format"] = "idmp-state"
	if got := sampleValue(t, fams, "idmpctl_scan_records_by_format", all); got != 0 {
		t.Errorf("idmp-state keys = %v without --all, want 0", got)
	}
	star := map[string]string{"pattern": "*"}
	if got := sampleValue(t, fams, "idmpctl_scan_records_matched", star); got != 8 {
		t.Errorf("records matched = %v, want 8 (no stream, no state key)", got)
	}
	if got := sampleValue(t, fams, "idmpctl_scan_records_no_ttl", star); got != 5 {
		t.Errorf("no_ttl = %v, want 5 records (not the stream)", got)
	}
	r = cli.Expect(0, "inspect", "--match", "*", "--all", "-o", "prometheus")
	fams = parsePrometheus(t, r.Stdout)
	if got := sampleValue(t, fams, "idmpctl_scan_records_by_format", all); got < 1 {
		t.Errorf("idmp-state keys = %v with --all, want some", got)
	}
}

// TestMetricsNotLinked: the Prometheus libraries are for the tests; the
// idmpctl binary writes the format by hand (render.WriteMetrics).
func TestMetricsNotLinked(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}", "..").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "prometheus") {
			t.Errorf("idmpctl links %s", dep)
		}
	}
}

// parsePrometheus parses text with the Prometheus client's text parser
// (as node_exporter's textfile collector does) and checks every family
// has HELP and TYPE.
func parsePrometheus(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	for name, f := range fams {
		if f.GetHelp() == "" || !strings.Contains(text, "# TYPE "+name+" ") {
			t.Errorf("family %s: no HELP or TYPE line", name)
		}
	}
	return fams
}

// sampleValue is the value of the one sample of family whose labels are
// exactly want.
func sampleValue(t *testing.T, fams map[string]*dto.MetricFamily, family string, want map[string]string) float64 {
	t.Helper()
	var found []float64
	for _, m := range fams[family].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if len(labels) != len(want) {
			continue
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if match {
			if m.Counter != nil {
				found = append(found, m.Counter.GetValue())
			} else {
				found = append(found, m.Gauge.GetValue())
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d samples, want 1", family, want, len(found))
	}
	return found[0]
}
