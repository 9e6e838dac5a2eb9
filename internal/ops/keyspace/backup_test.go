package keyspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/backup"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// snapshot is every key matching pattern: DUMP payload (the value, exactly)
// and its expiry to the millisecond (PEXPIRETIME; before Redis 7.0, whether
// it has a TTL).
func snapshot(t *testing.T, c redis.UniversalClient, pattern string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	one := func(ctx context.Context, node redis.UniversalClient) error {
		iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			d, err := c.Dump(ctx, k).Result()
			if err != nil {
				return err
			}
			ttl, err := c.PTTL(ctx, k).Result()
			if err != nil {
				return err
			}
			exp := "|ttl:" + strconv.FormatBool(ttl > 0)
			if at, err := c.PExpireTime(ctx, k).Result(); err == nil {
				exp += "|at:" + strconv.FormatInt(int64(at/time.Millisecond), 10)
			}
			out[k] = d + exp
		}
		return iter.Err()
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		var nodes []*redis.Client
		var mu sync.Mutex
		_ = cc.ForEachMaster(ctx, func(_ context.Context, n *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			nodes = append(nodes, n)
			return nil
		})
		for _, n := range nodes {
			if err := one(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
	} else if err := one(ctx, c); err != nil {
		t.Fatal(err)
	}
	return out
}

// readBackup reads a backup file: its records and the keys marked kept.
func readBackup(t *testing.T, path string) ([]backup.Record, map[string]string, bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []backup.Record
	kept := map[string]string{}
	end := false
	if err := backup.Read(f, func(e backup.Entry) error {
		switch {
		case e.Record != nil:
			recs = append(recs, *e.Record)
		case e.Kept != "":
			kept[e.KeptOf] = e.Kept
		case e.End:
			end = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs, kept, end
}

// backupRoundTrip purges pattern with a backup, changing changeKey between
// the choice and the delete, then restores the file and checks that every
// deleted record is back exactly (value, TTL) and the changed one untouched.
func backupRoundTrip(t *testing.T, c *redisconn.Conn, pattern, changeKey string) {
	t.Helper()
	ctx := context.Background()
	rc := c.Client()
	before := snapshot(t, rc, pattern)
	path := filepath.Join(t.TempDir(), "purge.ndjson")
	w, err := backup.Create(path, backup.Header{Source: c.Display, Pattern: pattern})
	if err != nil {
		t.Fatal(err)
	}
	var changed atomic.Bool // the nodes of a cluster are purged concurrently
	sum, items := purgeRun(t, c, PurgeOptions{Pattern: pattern, Statuses: []records.Status{records.Completed, records.Failed}, Backup: w,
		BeforeDelete: func(keys []string) {
			if slices.Contains(keys, changeKey) && changed.CompareAndSwap(false, true) {
				rc.HSet(ctx, changeKey, "status", "FAILED", "error", "changed in between")
			}
		}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !changed.Load() || !slices.Equal(items[PurgeChanged], []string{changeKey}) || sum.Deleted == 0 {
		t.Fatalf("changed %v, outcomes %v, summary %+v", changed.Load(), items, sum)
	}
	recs, kept, end := readBackup(t, path)
	if !end || len(recs) != int(sum.Deleted+sum.Changed) || kept[changeKey] != "changed" || len(kept) != 1 {
		t.Fatalf("backup: %d records (deleted %d, changed %d), kept %v, end %v", len(recs), sum.Deleted, sum.Changed, kept, end)
	}
	for _, r := range recs {
		hadTTL := strings.Contains(before[r.Key], "|ttl:true")
		if r.Key != changeKey && (r.PTTL >= 0) != hadTTL {
			t.Errorf("%s: saved pttl %d, had a TTL: %v", r.Key, r.PTTL, hadTTL)
		}
	}
	changedNow := snapshot(t, rc, changeKey)[changeKey]

	// Restore: every record but the kept one. Nothing exists, nothing expired.
	res, err := NewRestorer(ctx, c, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var toRestore []backup.Record
	for _, r := range recs {
		if _, ok := kept[r.Key]; !ok {
			toRestore = append(toRestore, r)
		}
	}
	outs, err := res.Restore(ctx, toRestore)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outs {
		if o != Restored {
			t.Errorf("%s: %s", toRestore[i].Key, o)
		}
	}
	after := snapshot(t, rc, pattern)
	before[changeKey] = changedNow // changed by the test, kept by the purge, not restored over
	if len(after) != len(before) {
		t.Errorf("%d keys after the round trip, %d before", len(after), len(before))
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s differs after the round trip", k)
		}
	}
	// The TTL is the one it had (ABSTTL), not a fresh one.
	for _, r := range toRestore {
		if r.ExpiresAt == 0 {
			continue
		}
		at, err := rc.PExpireTime(ctx, r.Key).Result()
		if err == nil && at.Milliseconds() != r.ExpiresAt {
			t.Errorf("%s expires at %d, saved %d", r.Key, at.Milliseconds(), r.ExpiresAt)
		}
	}

	// Again: everything exists now, and is skipped (or replaced with --replace).
	outs, err = res.Restore(ctx, toRestore)
	if err != nil || slices.ContainsFunc(outs, func(o RestoreOutcome) bool { return o != Existing }) {
		t.Errorf("second restore: %v %v", outs, err)
	}
	rep, err := NewRestorer(ctx, c, RestoreOptions{Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	rc.HSet(ctx, toRestore[0].Key, "status", "FAILED")
	rc.Del(ctx, toRestore[1].Key)
	outs, err = rep.Restore(ctx, toRestore[:2])
	if err != nil || outs[0] != Replaced || outs[1] != Restored || snapshot(t, rc, toRestore[0].Key)[toRestore[0].Key] != before[toRestore[0].Key] {
		t.Errorf("--replace: %v %v, want replaced (it existed), restored (it was missing)", outs, err)
	}
}

func TestPurgeBackupRestoreRoundTrip(t *testing.T) {
	c, _ := redistest.Conn(t)
	writeKeysFixtures(t, c.Client())
	fillClaims(t, c.Client(), "bulk:", 1200) // several chunks of the re-check
	c.Client().Persist(context.Background(), "bulk:7")
	backupRoundTrip(t, c, "*", "bulk:600")
}

func TestPurgeBackupRestoreCluster(t *testing.T) {
	c, cl := redistest.ClusterConn(t)
	fillClaims(t, c.Client(), "bulk:", 600)
	for _, n := range cl.Nodes {
		if size, err := n.Do("DBSIZE"); err != nil || size == "0" {
			t.Fatalf("node %s holds %s keys (%v)", n.Addr, size, err)
		}
	}
	backupRoundTrip(t, c, "bulk:*", "bulk:42")
}

// A record whose TTL ran out since the backup is not restored; dry runs
// write nothing; a payload the server cannot load is a data error (65).
func TestRestoreExpiredDryRunAndBadPayload(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	rc := c.Client()
	rc.Set(ctx, "a", "1", 0)
	rc.Set(ctx, "b", "2", time.Hour)
	da, _ := rc.Dump(ctx, "a").Result()
	db, _ := rc.Dump(ctx, "b").Result()
	rc.Del(ctx, "a", "b")
	now, _ := rc.Time(ctx).Result()
	recs := []backup.Record{
		{Key: "a", Payload: []byte(da), PTTL: -1},
		{Key: "b", Payload: []byte(db), PTTL: 10, ExpiresAt: now.UnixMilli() - 5},
		{Key: "c", Payload: []byte(db), PTTL: 3_600_000, ExpiresAt: now.UnixMilli() + 3_600_000},
	}
	dry, _ := NewRestorer(ctx, c, RestoreOptions{DryRun: true})
	outs, err := dry.Restore(ctx, recs)
	if err != nil || !slices.Equal(outs, []RestoreOutcome{WouldRestore, Expired, WouldRestore}) {
		t.Errorf("dry run: %v %v", outs, err)
	}
	if n, _ := rc.Exists(ctx, "a", "b", "c").Result(); n != 0 {
		t.Errorf("a dry run wrote %d keys", n)
	}
	r, _ := NewRestorer(ctx, c, RestoreOptions{})
	outs, err = r.Restore(ctx, recs)
	if err != nil || !slices.Equal(outs, []RestoreOutcome{Restored, Expired, Restored}) {
		t.Errorf("restore: %v %v", outs, err)
	}
	if ttl, _ := rc.PTTL(ctx, "c").Result(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("c ttl %v", ttl)
	}
	if ttl, _ := rc.PTTL(ctx, "a").Result(); ttl != -1 {
		t.Errorf("a ttl %v, want none", ttl)
	}
	bad := []backup.Record{{Key: "d", Payload: []byte("\x00garbage"), PTTL: -1}, {Key: "e", Payload: []byte(da), PTTL: -1}}
	outs, err = r.Restore(ctx, bad)
	if code := exit.Code(err); code != exit.Data || !slices.Equal(outs, []RestoreOutcome{Failed, Restored}) {
		t.Errorf("bad payload: %v, exit %d (%v)", outs, code, err)
	}
}

// A record the re-check keeps as live (its lease runs on the server's
// clock, whatever the client decided) is saved, then marked kept as live;
// a changed one as changed.
func TestPurgeBackupMarksKept(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	rc := c.Client()
	now, err := rc.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	ms := now.UnixMilli()
	rc.HSet(ctx, "live", "status", "PROCESSING", "owner", "w", "token", "5", "attempts", "1",
		"lease_until", ms+600_000, "created", ms, "updated", ms)
	rc.HSet(ctx, "done", "status", "COMPLETED", "owner", "w", "token", "1", "attempts", "1", "lease_until", 1, "created", 1, "updated", 1)
	rc.HSet(ctx, "moved", "status", "FAILED", "owner", "w", "token", "1", "attempts", "1", "lease_until", 1, "created", 1, "updated", 1)
	reads, err := readKeys(ctx, c, []string{"live", "done", "moved"}, readOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc.HSet(ctx, "moved", "status", "COMPLETED") // changed since it was read
	path := filepath.Join(t.TempDir(), "b.ndjson")
	w, err := backup.Create(path, backup.Header{})
	if err != nil {
		t.Fatal(err)
	}
	p := &purger{c: c, opts: PurgeOptions{Backup: w}}
	if err := p.deleteChunk(ctx, reads); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, kept, end := readBackup(t, path)
	if len(recs) != 3 || !end || kept["live"] != "live" || kept["moved"] != "changed" || len(kept) != 2 {
		t.Errorf("records %d, kept %v, end %v", len(recs), kept, end)
	}
	wantKeysExist(t, c, true, "live", "moved")
	wantKeysExist(t, c, false, "done")
}
