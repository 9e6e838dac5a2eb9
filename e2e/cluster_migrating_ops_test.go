//go:build unix

package e2e

import (
	"context"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestClusterMigratingSingleOps: with the stream's slot MIGRATING, and then
// with one of its state keys already migrated to the target, every single
// operation either runs whole or changes nothing on either node: xadd of a
// known pid and of a new one, a duplicate, cfgset, purge --stream (all and
// one pid), inspect. After SETSLOT STABLE (the key migrated back) each one
// runs (setup flushes both nodes: a key left on the target goes).
func TestClusterMigratingSingleOps(t *testing.T) {
	cl := redistest.NewCluster(t)
	s := "{mops}"
	slot, from, to := slotNodes(t, cl, s)
	c := clitest.New(t, "IDMPCTL_URL="+cl.URL)
	src, dst := nodeClient(t, from), nodeClient(t, to)
	ctx := context.Background()
	setup := func() {
		t.Helper()
		src.FlushAll(ctx)
		dst.FlushAll(ctx)
		c.Expect(0, "xadd", s, "--pid", "p", "--iid", "a", "f", "1", "--mode", "emulated")
		c.Expect(0, "xadd", s, "--pid", "q", "--iid", "a", "f", "1", "--mode", "emulated")
		c.Expect(0, "xadd", s, "--pid", "p", "--iid", "b", "f", "1", "--mode", "emulated")
	}
	ops := [][]string{
		{"xadd", s, "--pid", "p", "--iid", "new", "f", "1"},
		{"xadd", s, "--pid", "n", "--iid", "new", "f", "1"},
		{"xadd", s, "--pid", "p", "--iid", "a", "f", "1"},
		{"cfgset", s, "--maxsize", "5", "--yes"},
		{"purge", "--stream", s, "--yes"},
		{"purge", "--stream", s, "--pid", "p", "--yes"},
		{"inspect", s},
	}
	for _, moved := range []string{"", "{mops}:idmp:order:p", "{mops}:idmp:ids:q", "{mops}:idmp:pids"} {
		for _, op := range ops {
			setup()
			if err := cl.StartMigration(slot, from, to); err != nil {
				t.Fatal(err)
			}
			if moved != "" {
				host, port, _ := strings.Cut(to.Addr, ":")
				if err := src.Migrate(ctx, host, port, moved, 0, 5*time.Second).Err(); err != nil {
					t.Fatalf("MIGRATE %s: %v", moved, err)
				}
			}
			before, beforeDst := askingDump(t, src), askingDump(t, dst)
			args := append([]string{}, op...)
			if op[0] != "inspect" {
				args = append(args, "--mode", "emulated")
			}
			r := c.Run(append(args, "--timeout", "1s")...)
			after, afterDst := askingDump(t, src), askingDump(t, dst)
			changed := !maps.Equal(before, after) || !maps.Equal(beforeDst, afterDst)
			t.Logf("migrated %q: %s: exit %d, changed %v: %s", moved, strings.Join(op, " "), r.Code, changed, firstLine(r.Stderr))
			if r.Code != 0 && changed {
				t.Errorf("migrated %q: %s failed (exit %d) and changed keys:\nsource %q -> %q\ntarget %q -> %q", moved, strings.Join(op, " "),
					r.Code, keysOf(before), keysOf(after), keysOf(beforeDst), keysOf(afterDst))
			}
			if err := cl.StableSlot(slot, from, to); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// askingDump is keyDump of a node whose slot may be IMPORTING (ASKING
// before each DUMP).
func askingDump(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	cn := rdb.Conn()
	defer cn.Close()
	out := map[string]string{}
	for _, k := range keys {
		var d *redis.StringCmd
		if _, err := cn.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "ASKING")
			d = p.Dump(ctx, k)
			return nil
		}); err != nil {
			t.Fatalf("DUMP %q: %v", k, err)
		}
		out[k] = d.Val()
	}
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestClusterBatchPartlyMigrated: a batch whose stream's slot is MIGRATING
// with one key of its state, or its progress record, already on the
// target: the next chunk cannot run there (TRYAGAIN) and nothing of it is
// written; the run gives up after --timeout with 69, and once the slot has
// moved whole a rerun adds every line once.
//
// The native batch has no state keys of its own but its record and index;
// its chunk script reads the emulated state key, which is never there: a
// node with the slot MIGRATING cannot tell it from a key moved away, so
// every chunk waits out the migration (69), whatever has moved.
func TestClusterBatchPartlyMigrated(t *testing.T) {
	cl := redistest.NewCluster(t)
	eachBatchMode(t, func(t *testing.T, m batchMode) {
		testClusterBatchPartlyMigrated(t, cl, m)
	})
}

func testClusterBatchPartlyMigrated(t *testing.T, cl *redistest.Cluster, m batchMode) {
	moves := []string{"order:p", "ids:p", "pids", "batch", "batches", ""}
	if m.name == "native" {
		moves = []string{"stream", "batch", "batches", ""}
	}
	for i, moved := range moves {
		s := "{bpm-" + m.name + strconv.Itoa(i) + "}"
		slot, from, to := slotNodes(t, cl, s)
		c := clitest.New(t, "IDMPCTL_URL="+cl.URL)
		src, dst := nodeClient(t, from), nodeClient(t, to)
		ctx := context.Background()
		clusterStream(t, c, src, s, 100, m)
		file := filepath.Join(c.Dir, "b.ndjson")
		writeLines(t, file, 1000)
		batch := append([]string{"xadd", s, "--pid", "p", "--batch", file, "--timeout", "1s"}, m.flags...)
		c.Expect(0, batch...)
		writeLines(t, file, 3000)
		if err := cl.StartMigration(slot, from, to); err != nil {
			t.Fatal(err)
		}
		if moved != "" {
			key := s + ":idmp:" + moved
			if moved == "stream" {
				key = s
			}
			if moved == "batch" {
				keys := src.Keys(ctx, s+":idmp:batch:*").Val()
				key = keys[0]
			}
			host, port, _ := strings.Cut(to.Addr, ":")
			if err := src.Migrate(ctx, host, port, key, 0, 5*time.Second).Err(); err != nil {
				t.Fatalf("MIGRATE %s: %v", key, err)
			}
		}
		before := askingDump(t, src)
		r := c.Run(batch...)
		t.Logf("%q migrated: exit %d: %s", moved, r.Code, firstLine(r.Stderr))
		if (moved != "" || m.name == "native") && (r.Code != 69 || !maps.Equal(before, askingDump(t, src))) {
			t.Errorf("%q migrated: exit %d, or the source changed", moved, r.Code)
		}
		// The rest of the move, then the rerun.
		if err := cl.MoveSlot(slot, from, to, 100, 0); err != nil {
			t.Fatal(err)
		}
		wantPath(t, m, c.Expect(0, batch...).Stderr)
		faultBatchInvariant(t, dst, s, 3000)
		if missing, extra := faultScanStream(t, dst, s, 3000); missing != 0 || extra != 0 {
			t.Fatalf("%q migrated: %d missing, %d duplicated", moved, missing, extra)
		}
	}
}
