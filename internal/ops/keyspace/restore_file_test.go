package keyspace

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/idmpctl/idmpctl/internal/backup"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// restoreFile restores path by its plan and returns the summary and the
// outcome of each key.
func restoreFile(t *testing.T, c *redisconn.Conn, path string, replace bool, agreed map[string]bool) (RestoreSummary, map[string]RestoreOutcome, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := backup.ReadPlan(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]RestoreOutcome{}
	sum, err := RestoreFile(context.Background(), c, RestoreFileOptions{Name: path, Plan: plan, Replace: replace, Agreed: agreed,
		Open: func() (io.ReadCloser, error) { return os.Open(path) }},
		func(it RestoreItem) { out[it.Key] = it.Outcome })
	if err == nil {
		err = RestoreStopped(path, plan)
	}
	return sum, out, err
}

// TestRestoreFile: the plan's policy over more than one batch: a record
// purge kept is skipped; one whose fate it did not learn is restored only
// where missing; --replace overwrites only the keys agreed to; a cut file
// overwrites nothing; a bad line stops the restore after the records
// before it.
func TestRestoreFile(t *testing.T) {
	t.Parallel()
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	rc := c.Client()
	var recs []backup.Record
	for i := range restoreBatch + 100 {
		key := fmt.Sprintf("bulk:%d", i)
		rc.Set(ctx, key, "saved", 0)
		d, err := rc.Dump(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, backup.Record{Key: key, Payload: []byte(d), PTTL: -1})
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "b.ndjson")
	w, err := backup.Create(path, backup.Header{Pattern: "bulk:*"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Save(recs); err != nil {
		t.Fatal(err)
	}
	if err := w.Kept([]string{"bulk:1"}, "changed"); err != nil {
		t.Fatal(err)
	}
	if err := w.Kept([]string{"bulk:2"}, backup.KeptUnknown); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	reset := func() {
		for _, r := range recs {
			rc.Del(ctx, r.Key)
		}
		for _, k := range []string{"bulk:0", "bulk:1", "bulk:2", "bulk:3"} {
			rc.Set(ctx, k, "now", 0)
		}
	}

	reset()
	opts := RestoreFileOptions{Name: path, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
	f, _ := os.Open(path)
	opts.Plan, err = backup.ReadPlan(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	targets, err := KeysToReplace(ctx, c, opts)
	if err != nil || !slices.Equal(targets, []string{"bulk:0", "bulk:3"}) {
		t.Fatalf("KeysToReplace: %q, %v; want bulk:0 and bulk:3 (bulk:1 kept, bulk:2 missing-only)", targets, err)
	}
	sum, out, err := restoreFile(t, c, path, true, map[string]bool{"bulk:0": true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]RestoreOutcome{"bulk:0": Replaced, "bulk:1": KeptByPurge, "bulk:2": Existing, "bulk:3": Existing, "bulk:599": Restored}
	for k, o := range want {
		if out[k] != o {
			t.Errorf("--replace, bulk:0 agreed: %s %s, want %s", k, out[k], o)
		}
	}
	if sum.Records != int64(len(recs)) || sum.Replaced != 1 || sum.Kept != 1 || sum.Existing != 2 || sum.Restored != int64(len(recs)-4) || !sum.Complete {
		t.Errorf("summary %+v", sum)
	}
	if v := rc.Get(ctx, "bulk:3").Val(); v != "now" {
		t.Errorf("bulk:3, not agreed to, was overwritten: %q", v)
	}

	// The same file cut (no end line): --replace overwrites nothing.
	raw, _ := os.ReadFile(path)
	cut := filepath.Join(dir, "cut.ndjson")
	if err := os.WriteFile(cut, raw[:len(raw)-len(`{"end":true,"records":600,"kept_count":2}`+"\n")], 0o600); err != nil {
		t.Fatal(err)
	}
	reset()
	sum, out, err = restoreFile(t, c, cut, true, nil)
	if err != nil || out["bulk:0"] != Existing || out["bulk:3"] != Existing || sum.Complete || sum.Replaced != 0 {
		t.Errorf("cut file: %v, %+v, bulk:0 %s", err, sum, out["bulk:0"])
	}

	// A bad line: the records before it are restored, none from it on.
	bad := filepath.Join(dir, "bad.ndjson")
	lines := slices.Collect(func(yield func([]byte) bool) {
		for len(raw) > 0 {
			i := slices.Index(raw, '\n')
			if !yield(raw[:i+1]) {
				return
			}
			raw = raw[i+1:]
		}
	})
	lines[11] = []byte("not json\n") // record bulk:10
	if err := os.WriteFile(bad, slices.Concat(lines...), 0o600); err != nil {
		t.Fatal(err)
	}
	reset()
	sum, out, err = restoreFile(t, c, bad, false, nil)
	if exit.Code(err) != exit.Data || sum.Records != 10 || out["bulk:9"] != Restored || out["bulk:10"] != "" {
		t.Errorf("bad line: %v, %+v", err, sum)
	}
}

// TestLoads holds the dry run's check of a payload to Redis's: a newer
// RDB version or a wrong CRC-64 is refused (Redis 8.6.3's DUMP of a
// string, RDB 13).
func TestLoads(t *testing.T) {
	p := []byte("\x00\tCOMPLETED\r\x006\xc4\x05\x95\xe6-\x90\xcb")
	for _, c := range []struct {
		rdb  int
		want bool
	}{{13, true}, {14, true}, {-1, true}, {12, false}, {10, false}} {
		if got := loads(p, c.rdb); got != c.want {
			t.Errorf("loads(RDB 13 payload, server %d) = %v, want %v", c.rdb, got, c.want)
		}
	}
	bad := slices.Clone(p)
	bad[2] ^= 1
	if loads(bad, 13) || loads(p[:9], -1) {
		t.Error("a damaged or short payload loads")
	}
}
