package keyspace

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// TestKeysAndPurgeOnCluster runs inspect, scan and purge against a real
// three-primary cluster: every primary is scanned, reads cross slots, and
// the re-check runs per key on the key's node.
func TestKeysAndPurgeOnCluster(t *testing.T) {
	c, cl := redistest.ClusterConn(t)
	ctx := context.Background()
	fx := writeKeysFixtures(t, c.Client())
	fillClaims(t, c.Client(), "bulk:", 300)
	for _, n := range cl.Nodes {
		if size, err := n.Do("DBSIZE"); err != nil || size == "0" {
			t.Fatalf("node %s holds %s keys (%v): the keys should spread", n.Addr, size, err)
		}
	}

	// Inspect reads keys of every slot in one call.
	keys := fixtureKeys(fx)
	recs, err := InspectKeys(ctx, c, keys, records.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range fx {
		if recs[i].Format != f.format || recs[i].Status != f.status {
			t.Errorf("%s: %s/%s, want %s/%s", f.key, recs[i].Format, recs[i].Status, f.format, f.status)
		}
	}
	if r := recs[slices.Index(keys, "pt:fn#gone:lock")]; !r.HasFlag(records.FlagOrphanLock) {
		t.Errorf("orphan lock across slots: %+v", r)
	}

	// A scan covers every primary.
	var seen []string
	sum, err := ScanKeys(ctx, c, ScanOptions{}, func(r records.Record) error {
		if !strings.HasPrefix(r.Key, "bulk:") {
			seen = append(seen, r.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(seen)
	slices.Sort(keys)
	if sum.Scanned != int64(len(fx)+300) || !slices.Equal(seen, keys) {
		t.Errorf("scan: %+v, saw %v", sum, seen)
	}

	// A limit holds across concurrently scanned nodes.
	psum, _ := purgeRun(t, c, PurgeOptions{Pattern: "bulk:*", Limit: 50, Count: 20})
	if psum.Deleted != 50 || !psum.Limited {
		t.Errorf("limited purge: %+v", psum)
	}

	// The re-check keeps what changed in between, on whichever node. Nodes
	// are purged concurrently: change each key just before its own chunk.
	change := map[string]func([]string){
		"idem:live": purgeHookRuns(t, c, []any{"HSET", "idem:live", "status", "COMPLETED", "updated", "1"}),
		"json:1":    purgeHookRuns(t, c, []any{"SET", "json:1", `{"status":"DONE"}`, "KEEPTTL"}),
	}
	psum, items := purgeRun(t, c, PurgeOptions{Pattern: "*", Statuses: []records.Status{records.Processing, records.Completed}, Force: true,
		BeforeDelete: func(keys []string) {
			for k, fn := range change {
				if slices.Contains(keys, k) {
					fn(keys)
				}
			}
		}})
	if want := []string{"idem:live", "json:1"}; !slices.Equal(items[PurgeChanged], want) {
		t.Errorf("changed %v, want %v (%+v)", items[PurgeChanged], want, psum)
	}
	if psum.Deleted != 250+8 { // the two locks stay: --status LOCKED was not asked
		t.Errorf("deleted %d (%v)", psum.Deleted, items[PurgeDeleted])
	}
	wantKeysExist(t, c, true, "idem:live", "json:1", "idem:failed", "camel-repo", "events", "pt:fn#old", "pt:fn#abc:lock")
	sum, err = ScanKeys(ctx, c, ScanOptions{Pattern: "bulk:*"}, func(records.Record) error { return nil })
	if err != nil || sum.Scanned != 0 {
		t.Errorf("bulk keys left: %+v %v", sum, err)
	}
}
