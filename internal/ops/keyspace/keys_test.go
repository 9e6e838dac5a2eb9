package keyspace

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

func TestInspectKeysDecodesEveryFormat(t *testing.T) {
	c, _ := redistest.Conn(t)
	fx := writeKeysFixtures(t, c.Client())
	keys := make([]string, len(fx))
	for i, f := range fx {
		keys[i] = f.key
	}
	recs, err := InspectKeys(context.Background(), c, keys, records.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(fx) {
		t.Fatalf("%d records for %d keys", len(recs), len(fx))
	}
	for i, f := range fx {
		r := recs[i]
		if r.Key != f.key || r.Format != f.format || r.Status != f.status || !reflect.DeepEqual(r.Flags, f.flags) {
			t.Errorf("%s: got %s/%s %v, want %s/%s %v", f.key, r.Format, r.Status, r.Flags, f.format, f.status, f.flags)
		}
	}
	byKey := map[string]records.Record{}
	for _, r := range recs {
		byKey[r.Key] = r
	}
	if r := byKey["idem:done"]; r.Owner != "web-1:4242" || r.Token != 2 || r.ResultBytes != 2 || r.Fields["result"] != "ok" || r.TTLms <= 0 {
		t.Errorf("idem:done = %+v", r)
	}
	if r := byKey["camel-repo"]; r.Members != 3 || r.Type != "set" {
		t.Errorf("camel-repo = %+v", r)
	}
	if r := byKey["pt:fn#abc"]; r.Fingerprint != "5eff007a" || r.DeadlineMs == 0 || r.ExpiresMs == 0 {
		t.Errorf("pt:fn#abc = %+v", r)
	}
}

func TestInspectKeysMissing(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	c.Client().Set(ctx, "here", "COMPLETED", 0)

	recs, err := InspectKeys(ctx, c, []string{"gone", "here"}, records.DecodeOptions{})
	if err != nil {
		t.Fatalf("mixed: %v", err)
	}
	if r := recs[0]; r.Status != records.Absent || r.Format != records.FormatNone || r.Type != "none" || r.TTLms != -2 {
		t.Errorf("missing key = %+v", r)
	}
	if recs[1].Status != records.Completed {
		t.Errorf("here = %+v", recs[1])
	}

	recs, err = InspectKeys(ctx, c, []string{"a", "b", "c", "d"}, records.DecodeOptions{})
	if got := exit.Code(err); got != exit.NotFound {
		t.Fatalf("all missing: code %d (%v)", got, err)
	}
	if len(recs) != 4 || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), "1 more") {
		t.Errorf("all missing: %d records, %v", len(recs), err)
	}
}

func TestInspectKeysBoundsReads(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	big := `{"status":"COMPLETED","data":"` + strings.Repeat("x", InspectMaxValue) + `"}`
	c.Client().Set(ctx, "big:json", big, 0)
	// A claim with a large result is hashtable-encoded: read whole by inspect.
	c.Client().HSet(ctx, "idem:bigresult", "status", "COMPLETED", "token", "1", "result", strings.Repeat("r", 5000))
	// A huge hash is read in part, and still decoded from its status.
	args := []any{"status", "FAILED"}
	for i := range 3000 {
		args = append(args, "f"+strconv.Itoa(i), "v")
	}
	c.Client().HSet(ctx, "huge", args...)

	recs, err := InspectKeys(ctx, c, []string{"big:json", "idem:bigresult", "huge"}, records.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := recs[0]; !r.Truncated || r.Format != records.FormatUnknown {
		t.Errorf("big:json = %s truncated=%v", r.Format, r.Truncated)
	}
	if r := recs[1]; r.Format != records.FormatIdmpctl || r.Truncated || r.ResultBytes != 5000 || len(r.Fields["result"]) != 5000 {
		t.Errorf("idem:bigresult = %s truncated=%v result=%d", r.Format, r.Truncated, r.ResultBytes)
	}
	if r := recs[2]; r.Format != records.FormatHash || r.Status != records.Failed || !r.Truncated || len(r.Fields) != 1 {
		t.Errorf("huge = %s/%s truncated=%v fields=%d", r.Format, r.Status, r.Truncated, len(r.Fields))
	}

	// A scan measures payloads instead of reading them.
	var scanned records.Record
	if _, err := ScanKeys(ctx, c, ScanOptions{Pattern: "idem:bigresult"}, func(r records.Record) error { scanned = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if scanned.ResultBytes != 5000 || scanned.Fields["result"] != "" || scanned.Status != records.Completed {
		t.Errorf("scanned idem:bigresult = %+v", scanned)
	}
}

func TestScanKeysFiltersAndCounts(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	fx := writeKeysFixtures(t, c.Client())

	var got []string
	sum, err := ScanKeys(ctx, c, ScanOptions{}, func(r records.Record) error { got = append(got, r.Key); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if sum.Scanned != int64(len(fx)) || sum.Matched != int64(len(fx)) || len(got) != len(fx) {
		t.Errorf("all: %+v, %d emitted", sum, len(got))
	}
	if sum.ByStatus[records.Completed] != 5 || sum.ByFormat[records.FormatIdmpctl] != 4 || sum.ByStatus[records.Expired] != 1 {
		t.Errorf("by status %v, by format %v", sum.ByStatus, sum.ByFormat)
	}

	got = nil
	sum, err = ScanKeys(ctx, c, ScanOptions{Pattern: "idem:*", Statuses: []records.Status{records.Completed, records.Failed}},
		func(r records.Record) error { got = append(got, r.Key); return nil })
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"idem:done", "idem:failed"}) || sum.Scanned != 4 || sum.Matched != 2 {
		t.Errorf("status filter: %v, %+v", got, sum)
	}

	var calls int
	sum, err = ScanKeys(ctx, c, ScanOptions{Limit: 3, Count: 2, Progress: func(int64) { calls++ }},
		func(records.Record) error { return nil })
	if err != nil || sum.Matched != 3 || !sum.Limited || sum.Scanned >= int64(len(fx)) {
		t.Errorf("limit: %+v %v", sum, err)
	}

	boom := errors.New("boom")
	_, err = ScanKeys(ctx, c, ScanOptions{}, func(records.Record) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("emit error: %v", err)
	}
}

func TestScanKeysLiteralPattern(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	for _, k := range []string{"a*b", "axb", `a\b`, "a[1]", "a1"} {
		c.Client().Set(ctx, k, "DONE", 0)
	}
	scan := func(pattern string, literal bool) []string {
		var got []string
		if _, err := ScanKeys(ctx, c, ScanOptions{Pattern: pattern, Literal: literal},
			func(r records.Record) error { got = append(got, r.Key); return nil }); err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		return got
	}
	if got := scan("a*b", true); !slices.Equal(got, []string{"a*b"}) {
		t.Errorf("literal a*b: %v", got)
	}
	if got := scan("a*b", false); !slices.Equal(got, []string{"a*b", `a\b`, "axb"}) {
		t.Errorf("glob a*b: %v", got)
	}
	if got := scan("a[1]", true); !slices.Equal(got, []string{"a[1]"}) {
		t.Errorf("literal a[1]: %v", got)
	}
	if got := scan(`a\b`, true); !slices.Equal(got, []string{`a\b`}) {
		t.Errorf(`literal a\b: %v`, got)
	}
	if got := GlobEscape(`*?[]\x`); got != `\*\?\[\]\\x` {
		t.Errorf("GlobEscape = %q", got)
	}
}

// SCAN repeats within the read-ahead window are dropped (a purge must not
// re-check a key against a read from before its own deletion); a repeat
// from further back is read again, as without read-ahead.
func TestScanWindowDropsRecentRepeats(t *testing.T) {
	var w scanWindow
	if got := w.filter([]string{"a", "b", "a"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("a repeat within a batch: kept %v", got)
	}
	// "b" again in each of the next scanWindowBatches-1 batches: dropped.
	for i := 1; i < scanWindowBatches; i++ {
		k := "x" + strconv.Itoa(i)
		if got := w.filter([]string{k, "b"}); !slices.Equal(got, []string{k}) {
			t.Errorf("batch %d: kept %v, want [%s]", i, got, k)
		}
	}
	// Empty results (a run of SCAN replies matching nothing new) do not
	// move the window.
	for range 2 * scanWindowBatches {
		if got := w.filter([]string{"b"}); len(got) != 0 {
			t.Fatalf("kept %v", got)
		}
	}
	// A job more, and "a" is scanWindowBatches jobs back: read again; "x1"
	// is still within the window.
	if got := w.filter([]string{"z"}); !slices.Equal(got, []string{"z"}) {
		t.Errorf("kept %v", got)
	}
	if got := w.filter([]string{"a", "x1", "y"}); !slices.Equal(got, []string{"a", "y"}) {
		t.Errorf("a repeat from beyond the window: kept %v", got)
	}
}

// A scan whose context is cancelled stops with the context's error and
// leaves no reader behind, however far the readers had run ahead.
func TestScanKeysCancelled(t *testing.T) {
	c, _ := redistest.Conn(t)
	fillClaims(t, c.Client(), "c:", 200)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	emitted := 0
	_, err := ScanKeys(ctx, c, ScanOptions{Pattern: "c:*", Count: 10}, func(records.Record) error {
		emitted++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if emitted >= 200 {
		t.Errorf("emitted %d records after the cancel", emitted)
	}
	// go-redis may close a connection in the background; our goroutines
	// are gone when ScanKeys returns.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the scan, %d before", n, before)
	}
}

// A scan cancelled (SIGINT, SIGTERM) while SCAN walks keys that match
// nothing ends with the cancellation, never as a complete scan. Before:
// the SCAN goroutine could see the cancellation first and close its queue,
// which the handler took for the end of the keyspace: inspect --match
// exited 0 with a partial summary (about 1 run in 60 at a signal).
func TestScanKeysCancelledIsNoCompleteScan(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	if _, err := srv.Do("EVAL", "for i=1,20000 do redis.call('SET','k:'..i,'x') end", "0"); err != nil {
		t.Fatal(err)
	}
	complete := 0
	for range 40 {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(3*time.Millisecond, cancel)
		sum, err := ScanKeys(ctx, conn, ScanOptions{Pattern: "nomatch:*", Count: 10}, func(records.Record) error { return nil })
		cancel()
		if err == nil && sum.Scanned < 20000 {
			complete++
		}
	}
	if complete > 0 {
		t.Fatalf("%d of 40 cancelled scans ended as complete", complete)
	}
}
