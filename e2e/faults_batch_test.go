package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestFaultBatchKills stops an xadd --batch again and again at random
// points: by killing the server (appendfsync always, then restarted) or by
// killing idmpctl with kill -9, and runs the same command again after each
// stop, until a run completes. Whatever IDMP-MAXSIZE is (1, 100, 10000:
// far smaller or larger than what is in flight), the stream must then hold
// every line exactly once: the progress record, written with each chunk,
// is what a run resumes from, not IDMP's dedupe window.
//
// The amount of work is fixed: rounds kills of a lines-line batch per case
// (20 of 200,000 with IDMPCTL_SOAK=1, which make test-soak sets; 3 of
// 20,000 otherwise). Where each kill lands depends on the seed (fixed;
// IDMPCTL_FAULT_SEED replays another) and on how fast the machine is.
func TestFaultBatchKills(t *testing.T) {
	lines, rounds := 20_000, 3
	if os.Getenv("IDMPCTL_SOAK") == "1" {
		lines, rounds = 200_000, 20
	}
	seed := uint64(1)
	if s, err := strconv.ParseUint(os.Getenv("IDMPCTL_FAULT_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d: replay with IDMPCTL_FAULT_SEED=%d", seed, seed)
		}
	})
	file := filepath.Join(t.TempDir(), "batch.ndjson")
	faultBatchFile(t, file, lines)
	eachBatchMode(t, func(t *testing.T, m batchMode) {
		for _, maxsize := range []int{1, 100, 10000} {
			for _, kill := range []string{"server", "idmpctl"} {
				t.Run(fmt.Sprintf("maxsize=%d/kill=%s", maxsize, kill), func(t *testing.T) {
					t.Parallel()
					rng := rand.New(rand.NewPCG(seed, uint64(maxsize)*2+map[string]uint64{"server": 0, "idmpctl": 1}[kill]))
					batchKillRounds(t, m, rng, file, lines, rounds, maxsize, kill)
				})
			}
		}
	})
}

// batchMode is how a batch fault test runs xadd --batch: the emulated batch
// (--mode emulated), or the native one, whose chunks go by its chunk script.
type batchMode struct {
	name  string
	flags []string // for xadd and cfgset
}

// The batch modes: native is the default on a server with native IDMP.
var (
	emulatedBatch = batchMode{"emulated", []string{"--mode", "emulated"}}
	nativeBatch   = batchMode{"native", []string{"--mode", "native"}}
)

// eachBatchMode runs f as a subtest for each batch mode. The native one
// needs a server under test with native IDMP (make test-native); on
// another it says it did not run.
func eachBatchMode(t *testing.T, f func(t *testing.T, m batchMode)) {
	t.Helper()
	for _, m := range []batchMode{emulatedBatch, nativeBatch} {
		t.Run(m.name, func(t *testing.T) {
			if m.name == "native" {
				if native, err := condition("redis:8.6"); err != nil {
					t.Fatal(err)
				} else if !native {
					t.Skip("the server under test has no native IDMP: make test-native runs the native batch's fault tests")
				}
			}
			f(t, m)
		})
	}
}

// wantPath checks that a batch's summary names the path m takes: the
// chunk script (native: not MULTI/EXEC).
func wantPath(t *testing.T, m batchMode, stderr string) {
	t.Helper()
	if !strings.Contains(stderr, "duplicates ("+m.name+")") && !strings.Contains(stderr, "duplicate ("+m.name+")") {
		t.Errorf("the summary does not say %s by the chunk script:\n%s", m.name, stderr)
	}
}

func batchKillRounds(t *testing.T, m batchMode, rng *rand.Rand, file string, lines, rounds, maxsize int, kill string) {
	srv := redistest.NewWith(t, redistest.Options{AOF: true})
	rdb := faultRedis(t, srv)
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	ctx := context.Background()
	if err := rdb.Do(ctx, "XADD", "s", "MAXLEN", "0", "*", "init", "1").Err(); err != nil {
		t.Fatal(err)
	}
	c.Expect(0, append([]string{"cfgset", "s", "--maxsize", strconv.Itoa(maxsize), "--yes"}, m.flags...)...)
	batch := append([]string{"xadd", "s", "--pid", "p", "--batch", file, "--retries", "0"}, m.flags...)

	var kills, printed int
	var log []string
	for attempt := 0; attempt < rounds+10; attempt++ {
		p := c.Start(batch...)
		down := false
		if kills < rounds {
			// A random point: after some progress of this run, or at once.
			before, _ := rdb.XLen(ctx, "s").Result()
			step := int64(rng.IntN(lines/rounds + 1))
			faultPollFast(30*time.Second, func() bool {
				n, err := rdb.XLen(ctx, "s").Result()
				return err != nil || n >= before+step || p.Exited()
			})
			if !p.Exited() {
				n, _ := rdb.XLen(ctx, "s").Result()
				if kill == "server" {
					srv.Kill()
					down = true
				} else {
					_ = p.Kill()
				}
				kills++
				log = append(log, strconv.FormatInt(n, 10))
			}
		}
		r := p.Wait(2 * time.Minute)
		if down {
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
		}
		printed += len(faultLines(r.Stdout))
		switch {
		case r.Code == 0:
			if kills < rounds {
				t.Logf("the batch completed after %d kills (of %d wanted): the machine outran the kills", kills, rounds)
			}
			missing, extra := faultScanStream(t, rdb, "s", lines)
			xlen, _ := rdb.XLen(ctx, "s").Result()
			t.Logf("maxsize %d, kill %s: %d kills at XLEN %s; %d runs; %d result lines printed; stream: XLEN %d, %d missing, %d duplicated",
				maxsize, kill, kills, strings.Join(log, ","), attempt+1, printed, xlen, missing, extra)
			if xlen != int64(lines) || missing != 0 || extra != 0 {
				t.Fatalf("after %d kills: XLEN %d for %d lines, %d missing, %d duplicated", kills, xlen, lines, missing, extra)
			}
			if printed > lines {
				t.Errorf("%d result lines printed for %d lines: a line was reported twice", printed, lines)
			}
			wantPath(t, m, r.Stderr)
			return
		case kill == "server" && r.Code == 69, kill == "idmpctl" && r.Signal != 0:
			// Stopped as intended; the next run resumes from the record,
			// which must account for every entry.
			faultBatchInvariant(t, rdb, "s", lines)
		default:
			t.Fatalf("run %d: unexpected end: %s", attempt+1, r)
		}
	}
	t.Fatalf("the batch did not complete in %d runs", rounds+10)
}

// faultBatchInvariant checks what every stop of a batch must leave: the
// stream holds exactly the lines its progress record counts as committed,
// each once (and nothing else: the tests' streams start empty). An add the
// record does not account for is a duplicate at the next run; a line it
// counts that is not there is lost. A killed idmpctl's last chunks can
// still run on the server after it died (they were in its socket): the
// record is read before and after the stream, and the check is made again
// until the two agree.
func faultBatchInvariant(t *testing.T, rdb *redis.Client, stream string, total int) {
	t.Helper()
	ctx := context.Background()
	l, err := idmp.StateKeys(stream, true)
	if err != nil {
		t.Fatal(err)
	}
	record := func() (int, bool) {
		keys, err := rdb.Keys(ctx, l.BatchPrefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		switch len(keys) {
		case 0: // no chunk committed yet
			return 0, false
		case 1:
			line, err := rdb.HGet(ctx, keys[0], "line").Result()
			if err != nil {
				t.Fatalf("HGET %s line: %v", keys[0], err)
			}
			n, _ := strconv.Atoi(line)
			return n, true
		}
		t.Fatalf("%d progress records: %q", len(keys), keys)
		return 0, false
	}
	for try := 0; ; try++ {
		committed, _ := record()
		seen := make([]int, total+1)
		start := "-"
		for range total/5000 + 2 {
			msgs, err := rdb.XRangeN(ctx, stream, start, "+", 5000).Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 {
				break
			}
			for _, m := range msgs {
				v, _ := m.Values["n"].(string)
				n, err := strconv.Atoi(v)
				if len(m.Values) != 1 || err != nil || n < 1 || n > total {
					t.Fatalf("unexpected entry %s %v", m.ID, m.Values)
				}
				seen[n]++
			}
			start = "(" + msgs[len(msgs)-1].ID
		}
		if again, _ := record(); again != committed && try < 50 {
			time.Sleep(20 * time.Millisecond) // a chunk ran meanwhile
			continue
		}
		var untracked, lost, twice int
		for n := 1; n <= total; n++ {
			switch {
			case n <= committed && seen[n] == 0:
				lost++
			case n > committed && seen[n] > 0:
				untracked += seen[n]
			case seen[n] > 1:
				twice += seen[n] - 1
			}
		}
		if untracked+lost+twice > 0 {
			t.Fatalf("after a stop, the record says %d lines committed: %d entries it does not account for, %d committed lines missing, %d duplicated",
				committed, untracked, lost, twice)
		}
		return
	}
}
