//go:build unix

package e2e

// A live reshard of a real 3-primary Redis Cluster while idmpctl adds to a
// stream whose slot moves (issue 15, item 7). Before: the emulated script
// emptied {S}:idmp:order:<pid> (IDMP-MAXSIZE below a chunk's adds), Redis
// deleted it, and the script wrote it again, which the source node refuses
// mid-script while the slot is MIGRATING: exit 70 with a chunk's adds in
// the stream and not tracked, and 1,000 duplicates at the rerun.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// nodeClient is a plain client of one node, for counting what it holds.
func nodeClient(t *testing.T, s *redistest.Server) *redis.Client {
	t.Helper()
	return faultRedis(t, s)
}

// slotNodes is the primary that holds key's slot, and another one.
func slotNodes(t *testing.T, cl *redistest.Cluster, key string) (slot int, from, to *redistest.Server) {
	t.Helper()
	slot, err := cl.Slot(key)
	if err != nil {
		t.Fatal(err)
	}
	from, err = cl.Owner(slot)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range cl.Nodes {
		if n == from {
			to = cl.Nodes[(i+1)%len(cl.Nodes)]
		}
	}
	return slot, from, to
}

// clusterStream creates stream s (empty) on its node and sets its
// IDMP-MAXSIZE in mode m.
func clusterStream(t *testing.T, c *clitest.CLI, node *redis.Client, s string, maxsize int, m batchMode) {
	t.Helper()
	if err := node.Do(context.Background(), "XADD", s, "MAXLEN", "0", "*", "init", "1").Err(); err != nil {
		t.Fatal(err)
	}
	c.Expect(0, append([]string{"cfgset", s, "--maxsize", strconv.Itoa(maxsize), "--yes"}, m.flags...)...)
}

// TestClusterMigratingBetweenChunks: one chunk committed, the slot set
// MIGRATING to another primary (no key moved), the next chunk sent: it is
// written on the source with its state, and after SETSLOT STABLE a rerun
// adds nothing. At IDMP-MAXSIZE 1, 100 and 10000.
//
// The native batch's chunk script must see the stream's emulated state
// key (KEYS[4]), which a node cannot tell from a key moved away while the
// slot is MIGRATING: it is refused (TRYAGAIN) with nothing written, and
// waits out the migration (here it outlasts --timeout: 69); after STABLE
// the rerun adds the rest.
func TestClusterMigratingBetweenChunks(t *testing.T) {
	cl := redistest.NewCluster(t)
	eachBatchMode(t, func(t *testing.T, m batchMode) {
		testClusterMigratingBetweenChunks(t, cl, m)
	})
}

func testClusterMigratingBetweenChunks(t *testing.T, cl *redistest.Cluster, m batchMode) {
	for _, maxsize := range []int{1, 100, 10000} {
		t.Run(fmt.Sprintf("maxsize=%d", maxsize), func(t *testing.T) {
			t.Parallel()
			c := clitest.New(t, "IDMPCTL_URL="+cl.URL)
			s := fmt.Sprintf("{mig-%s-%d}", m.name, maxsize)
			slot, from, to := slotNodes(t, cl, s)
			node := nodeClient(t, from)
			clusterStream(t, c, node, s, maxsize, m)
			file := filepath.Join(c.Dir, fmt.Sprintf("mig-%d.ndjson", maxsize))
			writeLines(t, file, 1000)
			batch := append([]string{"xadd", s, "--pid", "p", "--batch", file}, m.flags...)
			want := 0
			if m.name == "native" {
				batch, want = append(batch, "--timeout", "1s"), 69
			}
			c.Expect(0, batch...)
			writeLines(t, file, 2000) // the same batch (same first line), 1,000 more lines
			if err := cl.StartMigration(slot, from, to); err != nil {
				t.Fatal(err)
			}
			migrating := c.Run(batch...)
			faultBatchInvariant(t, node, s, 2000)
			if err := cl.StableSlot(slot, from, to); err != nil {
				t.Fatal(err)
			}
			rerun := c.Run(batch...)
			missing, extra := faultScanStream(t, node, s, 2000)
			t.Logf("maxsize %d: with the slot MIGRATING: exit %d; after STABLE: exit %d; XLEN %d, %d missing, %d duplicated",
				maxsize, migrating.Code, rerun.Code, node.XLen(context.Background(), s).Val(), missing, extra)
			if migrating.Code != want || rerun.Code != 0 {
				t.Fatalf("want exit %d with the slot MIGRATING, then 0:\n%s\n%s", want, migrating, rerun)
			}
			wantPath(t, m, rerun.Stderr)
			if missing != 0 || extra != 0 {
				t.Fatalf("%d missing, %d duplicated", missing, extra)
			}
		})
	}
}

// pipedBatch starts xadd --batch - on stream s (in mode m, batch ID id),
// reading a pipe: feed(from, to) writes lines m-from..m-to to it, and
// closing pw ends the input.
func pipedBatch(t *testing.T, c *clitest.CLI, s, id string, m batchMode) (*clitest.Proc, func(from, to int), *os.File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pw.Close() })
	p := c.WithStdin(pr).Start(append([]string{"xadd", s, "--pid", "p", "--batch", "-", "--batch-id", id, "--timeout", "15s"}, m.flags...)...)
	_ = pr.Close()
	feed := func(from, to int) {
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "{\"iid\":\"m-%d\",\"fields\":{\"n\":\"%d\"}}\n", i, i)
		}
		if _, err := pw.WriteString(b.String()); err != nil {
			t.Error(err)
		}
	}
	return p, feed, pw
}

// TestClusterSlotMoveDuringBatch: the stream's slot moves to another
// primary by hand (IMPORTING/MIGRATING, MIGRATE of one key at a time with
// pauses, SETSLOT NODE) while a batch runs: half its lines are committed,
// then the rest arrive on its stdin while the slot moves. The batch waits
// out the migration (TRYAGAIN, ASK, MOVED) through its progress record and
// completes: every line once. 20,000 lines (200,000 with IDMPCTL_SOAK=1,
// which make test-soak sets), at IDMP-MAXSIZE 1, 100 and 10000.
func TestClusterSlotMoveDuringBatch(t *testing.T) {
	lines := 20_000
	if os.Getenv("IDMPCTL_SOAK") == "1" {
		lines = 200_000
	}
	cl := redistest.NewCluster(t)
	eachBatchMode(t, func(t *testing.T, m batchMode) {
		testClusterSlotMoveDuringBatch(t, cl, m, lines)
	})
}

func testClusterSlotMoveDuringBatch(t *testing.T, cl *redistest.Cluster, m batchMode, lines int) {
	for _, maxsize := range []int{1, 100, 10000} {
		t.Run(fmt.Sprintf("maxsize=%d", maxsize), func(t *testing.T) {
			t.Parallel()
			c := clitest.New(t, "IDMPCTL_URL="+cl.URL)
			s := fmt.Sprintf("{move-%s-%d}", m.name, maxsize)
			slot, from, to := slotNodes(t, cl, s)
			src, dst := nodeClient(t, from), nodeClient(t, to)
			clusterStream(t, c, src, s, maxsize, m)
			p, feed, pw := pipedBatch(t, c, s, "move", m)
			ctx := context.Background()
			half := lines / 2
			feed(1, half)
			faultPollFast(time.Minute, func() bool { return src.XLen(ctx, s).Val() >= int64(half) || p.Exited() })
			moved := make(chan error, 1)
			go func() { moved <- cl.MoveSlot(slot, from, to, 1, 40*time.Millisecond) }()
			// The rest arrives while the slot moves: a burst every 10 ms.
			step := max(lines/200, 100)
			for i := half + 1; i <= lines; i += step {
				feed(i, min(i+step-1, lines))
				time.Sleep(10 * time.Millisecond)
			}
			_ = pw.Close()
			moveErr := moveResult(moved)
			r := p.Wait(3 * time.Minute)
			if moveErr != nil {
				t.Fatalf("moving slot %d: %v; the batch: %s\n%s", slot, moveErr, r, cl.SlotReport(slot))
			}
			faultBatchInvariant(t, dst, s, lines)
			missing, extra := faultScanStream(t, dst, s, lines)
			t.Logf("maxsize %d: slot %d moved %s -> %s after line %d; batch: exit %d after %s; stderr: %s; XLEN %d, %d missing, %d duplicated",
				maxsize, slot, from.Addr, to.Addr, half, r.Code, r.Elapsed.Round(time.Millisecond),
				strings.ReplaceAll(strings.TrimSpace(r.Stderr), "\n", " | "), dst.XLen(ctx, s).Val(), missing, extra)
			if r.Code != 0 {
				t.Fatalf("the batch did not ride out the migration: %s\n%s", r, cl.SlotReport(slot))
			}
			wantPath(t, m, r.Stderr)
			if missing != 0 || extra != 0 {
				t.Fatalf("%d missing, %d duplicated", missing, extra)
			}
		})
	}
}

// moveResult is MoveSlot's result from moved, waited for a minute at most.
func moveResult(moved <-chan error) error {
	select {
	case err := <-moved:
		return err
	case <-time.After(time.Minute):
		return errors.New("the slot's move still runs after a minute")
	}
}

// TestClusterSlotMoveDuringSingleAdds: single adds, each run again by the
// caller until it succeeds (as a producer retries), while the stream's slot
// moves: every message once. In each mode (native on Redis 8.6: before,
// xadd --mode native on a cluster failed every first add with CROSSSLOT).
func TestClusterSlotMoveDuringSingleAdds(t *testing.T) {
	cl := redistest.NewCluster(t)
	eachBatchMode(t, func(t *testing.T, m batchMode) { clusterSlotMoveDuringSingleAdds(t, cl, m) })
}

func clusterSlotMoveDuringSingleAdds(t *testing.T, cl *redistest.Cluster, m batchMode) {
	const adds = 60
	for _, maxsize := range []int{1, 100, 10000} {
		t.Run(fmt.Sprintf("maxsize=%d", maxsize), func(t *testing.T) {
			t.Parallel()
			c := clitest.New(t, "IDMPCTL_URL="+cl.URL)
			s := fmt.Sprintf("{single-%s-%d}", m.name, maxsize)
			slot, from, to := slotNodes(t, cl, s)
			src, dst := nodeClient(t, from), nodeClient(t, to)
			clusterStream(t, c, src, s, maxsize, m)
			moved := make(chan error, 1)
			failed := 0
			for k := 1; k <= adds; k++ {
				if k == adds/4 {
					go func() { moved <- cl.MoveSlot(slot, from, to, 1, 50*time.Millisecond) }()
				}
				// With maxsize 1 only the latest add dedupes: the same add
				// is repeated at once, as a producer's retry is.
				args := append([]string{"xadd", s, "--pid", "p", "--iid", "m-" + strconv.Itoa(k), "n", strconv.Itoa(k)}, m.flags...)
				for try := 0; ; try++ {
					r := c.Run(args...)
					if r.Code == 0 {
						break
					}
					failed++
					if try == 20 {
						t.Fatalf("add %d failed 20 times: %s\nthe slot's move: %v\n%s", k, r, moveResult(moved), cl.SlotReport(slot))
					}
				}
			}
			if err := moveResult(moved); err != nil {
				t.Fatalf("%v\n%s", err, cl.SlotReport(slot))
			}
			missing, extra := faultScanStream(t, dst, s, adds)
			t.Logf("maxsize %d: %d adds during the move of slot %d, %d runs failed and were repeated; %d missing, %d duplicated",
				maxsize, adds, slot, failed, missing, extra)
			if missing != 0 || extra != 0 {
				t.Fatalf("%d missing, %d duplicated", missing, extra)
			}
		})
	}
}

// crc16 is Redis Cluster's key hash (CRC16-CCITT, XMODEM).
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// streamInSlot is a hash-tagged stream name whose slot is slot.
func streamInSlot(prefix string, slot int) string {
	for i := 0; ; i++ {
		tag := prefix + strconv.Itoa(i)
		if int(crc16(tag))%16384 == slot {
			return "{" + tag + "}"
		}
	}
}

// TestClusterReshardDuringBatch: redis-cli --cluster reshard moves the
// stream's slot (the source's first, which is the one reshard takes) while
// a batch runs, as an operator would. Every line once, at IDMP-MAXSIZE 1,
// 100 and 10000, one after the other (a reshard takes the source's first
// slot, which the one before may have just given it).
func TestClusterReshardDuringBatch(t *testing.T) {
	cl := redistest.NewCluster(t)
	eachBatchMode(t, func(t *testing.T, m batchMode) {
		testClusterReshardDuringBatch(t, cl, m)
	})
}

func testClusterReshardDuringBatch(t *testing.T, cl *redistest.Cluster, m batchMode) {
	const lines = 20_000
	for i, maxsize := range []int{1, 100, 10000} {
		t.Run(fmt.Sprintf("maxsize=%d", maxsize), func(t *testing.T) {
			c := clitest.New(t, "IDMPCTL_URL="+cl.URL)
			first, err := cl.FirstSlot(cl.Nodes[i])
			if err != nil {
				t.Fatal(err)
			}
			s := streamInSlot(fmt.Sprintf("reshard-%s-%d-", m.name, maxsize), first)
			slot, from, to := slotNodes(t, cl, s)
			if slot != first {
				t.Fatalf("%s is in slot %d, not %d", s, slot, first)
			}
			fromID, err := from.ClusterID()
			if err != nil {
				t.Fatal(err)
			}
			toID, err := to.ClusterID()
			if err != nil {
				t.Fatal(err)
			}
			src, dst := nodeClient(t, from), nodeClient(t, to)
			clusterStream(t, c, src, s, maxsize, m)
			p, feed, pw := pipedBatch(t, c, s, "reshard", m)
			ctx := context.Background()
			feed(1, lines/2)
			faultPollFast(time.Minute, func() bool { return src.XLen(ctx, s).Val() >= lines/2 || p.Exited() })
			reshard := make(chan error, 1)
			go func() {
				cctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				out, err := exec.CommandContext(cctx, redistest.CLIBinary(), "--cluster", "reshard", from.Addr,
					"--cluster-from", fromID, "--cluster-to", toID, "--cluster-slots", "1", "--cluster-yes").CombinedOutput()
				if err != nil {
					err = fmt.Errorf("%v: %s", err, out)
				}
				reshard <- err
			}()
			for i := lines/2 + 1; i <= lines; i += 200 {
				feed(i, min(i+199, lines))
				time.Sleep(5 * time.Millisecond)
			}
			_ = pw.Close()
			if err := <-reshard; err != nil {
				t.Fatalf("redis-cli --cluster reshard: %v", err)
			}
			r := p.Wait(3 * time.Minute)
			if owner, err := cl.Owner(slot); err != nil || owner != to {
				t.Fatalf("slot %d not moved to %s: %v", slot, to.Addr, err)
			}
			faultBatchInvariant(t, dst, s, lines)
			missing, extra := faultScanStream(t, dst, s, lines)
			t.Logf("maxsize %d: slot %d resharded %s -> %s; batch: exit %d after %s; stderr: %s; %d missing, %d duplicated",
				maxsize, slot, from.Addr, to.Addr, r.Code, r.Elapsed.Round(time.Millisecond),
				strings.ReplaceAll(strings.TrimSpace(r.Stderr), "\n", " | "), missing, extra)
			if r.Code != 0 || missing != 0 || extra != 0 {
				t.Fatalf("exit %d, %d missing, %d duplicated: %s", r.Code, missing, extra, r)
			}
			wantPath(t, m, r.Stderr)
		})
	}
}

// TestClusterMigratingMove: `idmpctl exec RENAME` (and COPY ... REPLACE)
// of a stream with emulated IDMP state onto one that has state too, while
// the slot is MIGRATING. Before: the script deleted the destination's old
// state, then met a key the node does not hold (its progress index) and
// stopped half-way. Now it reads every key first: refused, nothing changed;
// after SETSLOT STABLE the same command moves stream and state.
func TestClusterMigratingMove(t *testing.T) {
	cl := redistest.NewCluster(t)
	a, b := "{mvx}a", "{mvx}b"
	slot, from, to := slotNodes(t, cl, a)
	c := clitest.New(t, "IDMPCTL_URL="+from.URL)
	node := nodeClient(t, from)
	for _, add := range [][]string{{a, "p", "i"}, {b, "q", "j"}, {b, "p", "k"}} {
		c.Expect(0, "xadd", add[0], "--pid", add[1], "--iid", add[2], "f", "v", "--mode", "emulated")
	}
	before := keyDump(t, node)
	if err := cl.StartMigration(slot, from, to); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"RENAME", a, b}, {"COPY", a, b, "REPLACE"}} {
		r := c.Run(append([]string{"exec", "--mode", "emulated"}, cmd...)...)
		t.Logf("%s with slot %d MIGRATING: exit %d, %s", cmd[0], slot, r.Code, strings.TrimSpace(r.Stderr))
		if r.Code == 0 {
			t.Errorf("%s with the slot MIGRATING succeeded: %s", cmd[0], r)
		}
		if after := keyDump(t, node); !maps.Equal(before, after) {
			t.Fatalf("%s with the slot MIGRATING changed keys:\nbefore %q\nafter  %q", cmd[0], slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
		}
	}
	if err := cl.StableSlot(slot, from, to); err != nil {
		t.Fatal(err)
	}
	c.Expect(0, "exec", "--mode", "emulated", "RENAME", a, b)
	r := c.Run("xadd", b, "--pid", "p", "--iid", "i", "f", "v", "--mode", "emulated", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"duplicate":true`) {
		t.Fatalf("the renamed stream forgot p/i: %s", r)
	}
	if n := node.Exists(context.Background(), "{mvx}b:idmp:ids:q", "{mvx}b:idmp:order:q").Val(); n != 0 {
		t.Fatalf("%d keys of the destination's old pid q are left", n)
	}
}
