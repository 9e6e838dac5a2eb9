//go:build unix

package main

// A live reshard of a real 3-primary Redis Cluster while idmpctl adds to a
// stream whose slot moves (issue 15, item 7). Before: the emulated script
// emptied {S}:idmp:order:<pid> (IDMP-MAXSIZE below a chunk's adds), Redis
// deleted it, and the script wrote it again, which the source node refuses
// mid-script while the slot is MIGRATING: exit 70 with a chunk's adds in
// the stream and not tracked, and 1,000 duplicates at the rerun.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
// IDMP-MAXSIZE in mode (emulated when none is given).
func clusterStream(t *testing.T, c *clitest.CLI, node *redis.Client, s string, maxsize int, mode ...string) {
	t.Helper()
	if err := node.Do(context.Background(), "XADD", s, "MAXLEN", "0", "*", "init", "1").Err(); err != nil {
		t.Fatal(err)
	}
	c.Expect(0, "cfgset", s, "--maxsize", strconv.Itoa(maxsize), "--mode", append(mode, "emulated")[0], "--yes")
}

// TestClusterMigratingBetweenChunks: one chunk committed, the slot set
// MIGRATING to another primary (no key moved), the next chunk sent:
// emulated, it is written on the source with its state; native, it waits
// for the migration (TRYAGAIN) until --timeout and stops with 69, every
// committed line counted: the upgrade guard must know whether the stream
// has emulated state keys, which the source cannot tell while they may
// have moved. After SETSLOT STABLE a rerun adds the rest, each once. At
// IDMP-MAXSIZE 1, 100 and 10000, in each mode (native on Redis 8.6).
func TestClusterMigratingBetweenChunks(t *testing.T) {
	cl := redistest.NewCluster(t)
	eachMode(t, func(t *testing.T, mode string) { clusterMigratingBetweenChunks(t, cl, mode) })
}

func clusterMigratingBetweenChunks(t *testing.T, cl *redistest.Cluster, mode string) {
	for _, maxsize := range []int{1, 100, 10000} {
		t.Run(fmt.Sprintf("maxsize=%d", maxsize), func(t *testing.T) {
			t.Parallel()
			c := clitest.New(t, "IDMPCTL_URL="+cl.URL)
			s := fmt.Sprintf("{mig-%s-%d}", mode, maxsize)
			slot, from, to := slotNodes(t, cl, s)
			node := nodeClient(t, from)
			clusterStream(t, c, node, s, maxsize, mode)
			file := filepath.Join(c.Dir, fmt.Sprintf("mig-%d.ndjson", maxsize))
			writeLines(t, file, 1000)
			batch := []string{"xadd", s, "--pid", "p", "--batch", file, "--mode", mode}
			c.Expect(0, batch...)
			writeLines(t, file, 2000) // the same batch (same first line), 1,000 more lines
			if err := cl.StartMigration(slot, from, to); err != nil {
				t.Fatal(err)
			}
			wantMigrating := 0
			if mode == "native" {
				wantMigrating = 69
			}
			migrating := c.Run(append(batch, "--timeout", "2s")...)
			faultBatchInvariant(t, node, s, 2000)
			if err := cl.StableSlot(slot, from, to); err != nil {
				t.Fatal(err)
			}
			rerun := c.Run(batch...)
			missing, extra := faultScanStream(t, node, s, 2000)
			t.Logf("%s, maxsize %d: with the slot MIGRATING: exit %d; after STABLE: exit %d; XLEN %d, %d missing, %d duplicated",
				mode, maxsize, migrating.Code, rerun.Code, node.XLen(context.Background(), s).Val(), missing, extra)
			if migrating.Code != wantMigrating || rerun.Code != 0 {
				t.Fatalf("want exit %d with the slot MIGRATING, 0 after:\n%s\n%s", wantMigrating, migrating, rerun)
			}
			if mode == "native" && !strings.Contains(migrating.Stderr, "the stream's cluster slot was still moving after --timeout 2s") {
				t.Errorf("the native batch does not say it waited for the migration:\n%s", migrating)
			}
			if missing != 0 || extra != 0 {
				t.Fatalf("%d missing, %d duplicated", missing, extra)
			}
		})
	}
}

// pipedBatch starts xadd --batch - on stream s (emulated, batch ID id),
// reading a pipe: feed(from, to) writes lines m-from..m-to to it, and
// closing pw ends the input.
func pipedBatch(t *testing.T, c *clitest.CLI, s, id string, mode ...string) (*clitest.Proc, func(from, to int), *os.File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pw.Close() })
	p := c.WithStdin(pr).Start("xadd", s, "--pid", "p", "--batch", "-", "--batch-id", id, "--mode", append(mode, "emulated")[0], "--timeout", "15s")
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
// which make test-soak sets), at IDMP-MAXSIZE 1, 100 and 10000, in each
// mode (native on Redis 8.6).
func TestClusterSlotMoveDuringBatch(t *testing.T) {
	lines := 20_000
	if os.Getenv("IDMPCTL_SOAK") == "1" {
		lines = 200_000
	}
	cl := redistest.NewCluster(t)
	eachMode(t, func(t *testing.T, mode string) { clusterSlotMoveDuringBatch(t, cl, lines, mode) })
}

func clusterSlotMoveDuringBatch(t *testing.T, cl *redistest.Cluster, lines int, mode string) {
	for _, maxsize := range []int{1, 100, 10000} {
		t.Run(fmt.Sprintf("maxsize=%d", maxsize), func(t *testing.T) {
			t.Parallel()
			c := clitest.New(t, "IDMPCTL_URL="+cl.URL)
			s := fmt.Sprintf("{move-%s-%d}", mode, maxsize)
			slot, from, to := slotNodes(t, cl, s)
			src, dst := nodeClient(t, from), nodeClient(t, to)
			clusterStream(t, c, src, s, maxsize, mode)
			p, feed, pw := pipedBatch(t, c, s, "move", mode)
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
			moveErr := <-moved
			r := p.Wait(3 * time.Minute)
			faultBatchInvariant(t, dst, s, lines)
			if moveErr != nil {
				t.Fatalf("moving slot %d: %v", slot, moveErr)
			}
			missing, extra := faultScanStream(t, dst, s, lines)
			t.Logf("%s, maxsize %d: slot %d moved %s -> %s after line %d; batch: exit %d after %s; stderr: %s; XLEN %d, %d missing, %d duplicated",
				mode, maxsize, slot, from.Addr, to.Addr, half, r.Code, r.Elapsed.Round(time.Millisecond),
				strings.ReplaceAll(strings.TrimSpace(r.Stderr), "\n", " | "), dst.XLen(ctx, s).Val(), missing, extra)
			if r.Code != 0 {
				t.Fatalf("the batch did not ride out the migration: %s", r)
			}
			if missing != 0 || extra != 0 {
				t.Fatalf("%d missing, %d duplicated", missing, extra)
			}
		})
	}
}

// TestClusterSlotMoveDuringSingleAdds: single adds, each run again by the
// caller until it succeeds (as a producer retries), while the stream's slot
// moves: every message once. In each mode (native on Redis 8.6).
func TestClusterSlotMoveDuringSingleAdds(t *testing.T) {
	cl := redistest.NewCluster(t)
	eachMode(t, func(t *testing.T, mode string) { clusterSlotMoveDuringSingleAdds(t, cl, mode) })
}

func clusterSlotMoveDuringSingleAdds(t *testing.T, cl *redistest.Cluster, mode string) {
	const adds = 60
	for _, maxsize := range []int{1, 100, 10000} {
		t.Run(fmt.Sprintf("maxsize=%d", maxsize), func(t *testing.T) {
			t.Parallel()
			c := clitest.New(t, "IDMPCTL_URL="+cl.URL)
			s := fmt.Sprintf("{single-%s-%d}", mode, maxsize)
			slot, from, to := slotNodes(t, cl, s)
			src, dst := nodeClient(t, from), nodeClient(t, to)
			clusterStream(t, c, src, s, maxsize, mode)
			var wg sync.WaitGroup
			var moveErr error
			failed := 0
			for k := 1; k <= adds; k++ {
				if k == adds/4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						moveErr = cl.MoveSlot(slot, from, to, 1, 50*time.Millisecond)
					}()
				}
				// With maxsize 1 only the latest add dedupes: the same add
				// is repeated at once, as a producer's retry is.
				args := []string{"xadd", s, "--pid", "p", "--iid", "m-" + strconv.Itoa(k), "n", strconv.Itoa(k), "--mode", mode}
				for try := 0; ; try++ {
					r := c.Run(args...)
					if r.Code == 0 {
						break
					}
					failed++
					if try == 20 {
						t.Fatalf("add %d failed 20 times: %s", k, r)
					}
				}
			}
			wg.Wait()
			if moveErr != nil {
				t.Fatal(moveErr)
			}
			missing, extra := faultScanStream(t, dst, s, adds)
			t.Logf("%s, maxsize %d: %d adds during the move of slot %d, %d runs failed and were repeated; %d missing, %d duplicated",
				mode, maxsize, adds, slot, failed, missing, extra)
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
	eachMode(t, func(t *testing.T, mode string) { clusterReshardDuringBatch(t, cl, mode) })
}

func clusterReshardDuringBatch(t *testing.T, cl *redistest.Cluster, mode string) {
	const lines = 20_000
	for i, maxsize := range []int{1, 100, 10000} {
		t.Run(fmt.Sprintf("maxsize=%d", maxsize), func(t *testing.T) {
			c := clitest.New(t, "IDMPCTL_URL="+cl.URL)
			first, err := cl.FirstSlot(cl.Nodes[i])
			if err != nil {
				t.Fatal(err)
			}
			s := streamInSlot(fmt.Sprintf("reshard-%s-%d-", mode, maxsize), first)
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
			clusterStream(t, c, src, s, maxsize, mode)
			p, feed, pw := pipedBatch(t, c, s, "reshard", mode)
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
			t.Logf("%s, maxsize %d: slot %d resharded %s -> %s; batch: exit %d after %s; stderr: %s; %d missing, %d duplicated",
				mode, maxsize, slot, from.Addr, to.Addr, r.Code, r.Elapsed.Round(time.Millisecond),
				strings.ReplaceAll(strings.TrimSpace(r.Stderr), "\n", " | "), missing, extra)
			if r.Code != 0 || missing != 0 || extra != 0 {
				t.Fatalf("exit %d, %d missing, %d duplicated: %s", r.Code, missing, extra, r)
			}
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
