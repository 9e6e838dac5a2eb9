package cmd

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/records"
)

// TestPrometheusOnlyForInspect: -o prometheus is a usage error (64) that
// names inspect STREAM... and inspect --match, before any connection, for
// every command but those two.
func TestPrometheusOnlyForInspect(t *testing.T) {
	const named = "idmpctl: -o prometheus is for inspect STREAM... and inspect --match PATTERN, not "
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"xadd", "s", "--pid", "p", "--iid", "i", "f", "v"}, named + "idmpctl xadd\n"},
		{[]string{"cfgset", "s", "--maxsize", "10"}, named + "idmpctl cfgset\n"},
		{[]string{"claim", "acquire", "k"}, named + "idmpctl claim acquire\n"},
		{[]string{"purge", "--match", "idem:*", "--dry-run"}, named + "idmpctl purge\n"},
		{[]string{"calc-maxsize", "--rate", "1000/s", "--mark-delay", "80ms"}, named + "idmpctl calc-maxsize\n"},
		{[]string{"version"}, named + "idmpctl version\n"},
		{[]string{"inspect", "--server"}, named + "idmpctl inspect --server\n"},
		{[]string{"inspect", "s", "--watch", "1s"}, "idmpctl: -o prometheus: one document a run, not --watch\n"},
	} {
		args := c.args
		f := testFactory("")
		if code := run(f, append(args, "-o", "prometheus")); code != 64 {
			t.Errorf("%q: exit %d, want 64", args, code)
		}
		if stderr := f.Err.(*bytes.Buffer).String(); !strings.HasPrefix(stderr, c.want) {
			t.Errorf("%q: stderr %q, want %q first", args, stderr, c.want)
		}
		if f.conn != nil {
			t.Errorf("%q: a connection was opened", args)
		}
	}
	for _, args := range [][]string{{"inspect", "orders", "events"}, {"inspect", "--match", "idem:*"}} {
		var got *InspectOptions
		f := testFactory("")
		err := execute(t, f, NewCmdInspect(f, func(o *InspectOptions) error { got = o; return nil }), append(args, "-o", "prometheus")...)
		if err != nil || got == nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

func TestScanMetrics(t *testing.T) {
	sum := keyspace.Summary{Scanned: 10, Matched: 4,
		ByStatus: map[records.Status]int64{records.Processing: 3, records.Locked: 1},
		ByFormat: map[records.Format]int64{records.FormatIdmpctl: 3, records.FormatPowertoolsLock: 1}}
	fl := flagCounts{}
	fl.add([]records.Flag{records.FlagStale, records.FlagNoTTL})
	fl.add([]records.Flag{records.FlagStale, records.FlagOrphanLock, records.FlagExpired})
	fl.add(nil)
	m := scanMetrics("idem:*", nil, sum, fl)
	if m.Pattern != "idem:*" || m.Scanned != 10 || m.Matched != 4 || m.Stale != 2 || m.NoTTL != 1 || m.OrphanLocks != 1 || m.Limited {
		t.Errorf("%+v", m)
	}
	// Every status a scan reports and every format, zeros included.
	wantStatuses := []string{"COMPLETED", "EXPIRED", "FAILED", "LOCKED", "PROCESSING", "UNKNOWN"}
	if got := slices.Sorted(maps.Keys(m.ByStatus)); !slices.Equal(got, wantStatuses) {
		t.Errorf("statuses %q, want %q", got, wantStatuses)
	}
	if m.ByStatus["PROCESSING"] != 3 || m.ByStatus["LOCKED"] != 1 || m.ByStatus["COMPLETED"] != 0 {
		t.Errorf("by status %v", m.ByStatus)
	}
	if len(m.ByFormat) != len(records.Formats())-1 || m.ByFormat["idmpctl"] != 3 || m.ByFormat["powertools-lock"] != 1 || m.ByFormat["camel"] != 0 {
		t.Errorf("by format %v", m.ByFormat)
	}
	if _, ok := m.ByFormat["none"]; ok {
		t.Errorf("a sample for format none: %v", m.ByFormat)
	}
	// --status FAILED: that status alone.
	m = scanMetrics("idem:*", []records.Status{records.Failed}, keyspace.Summary{}, flagCounts{})
	if len(m.ByStatus) != 1 || m.ByStatus["FAILED"] != 0 {
		t.Errorf("with --status FAILED: %v", m.ByStatus)
	}
}
