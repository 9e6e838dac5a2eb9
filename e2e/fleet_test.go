package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// olderRelease is the idmpctl the mixed fleet's old members run: the last
// release before one backend per mode (native single adds without a
// script, the guard inside the native add script).
const olderRelease = "e47b608"

// buildOlder builds olderRelease's idmpctl from this repository's history
// (git archive: the working tree is not touched), once per test binary.
var buildOlder = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "idmpctl-older-")
	if err != nil {
		return "", err
	}
	archive := exec.Command("sh", "-c", "git -C .. archive "+olderRelease+" | tar -x -C "+dir)
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("git archive %s: %v\n%s", olderRelease, err, out)
	}
	bin := filepath.Join(dir, "idmpctl")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", olderRelease, err, out)
	}
	return bin, nil
})

// TestUpgradeMixedFleet: a fleet in the middle of its upgrade to Redis 8.6,
// where members of the older release still write emulated state (their
// mode settled before the upgrade: --mode emulated here) while members of
// this one add natively, at the same time, to the same streams. Every
// message is first added by an old member; new members retry those the
// old ones acknowledged, each by xadd, xadd --batch or exec, racing the old
// members' first emulated writes to a stream. A retry must never add a
// second copy: the guard (one EXISTS a run; a single add's WATCH) sees the
// state, whenever it appears. (The other way round, an old member's
// emulated retry of a native add, no release guards: docs/upgrade.md.)
func TestUpgradeMixedFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("mixed fleet in -short mode")
	}
	redistest.RequireNative(t)
	older, err := buildOlder()
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.NewNative(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	cli := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	runOld := func(args ...string) error {
		cmd := exec.Command(older, args...)
		cmd.Env = clitest.Env("IDMPCTL_URL=" + srv.URL)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %v\n%s", older, strings.Join(args, " "), err, out)
		}
		return nil
	}

	const perStream, oldMembers, newMembers = 60, 2, 3
	streams := []string{"{f1}", "{f2}", "{f3}"}
	var mu sync.Mutex
	var acked []message // added by an old member: new members retry these
	var failures []string
	fail := func(f string, a ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(f, a...))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range oldMembers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range perStream * len(streams) / oldMembers {
				i := k*oldMembers + w
				m := message{stream: streams[i%len(streams)], pid: fmt.Sprint("p", i%2), name: fmt.Sprint("m", i), auto: i%5 == 0}
				if err := runOld(m.xaddArgs("emulated")...); err != nil {
					fail("%v", err)
					return
				}
				mu.Lock()
				acked = append(acked, m)
				mu.Unlock()
			}
		}()
	}
	var retriers sync.WaitGroup
	for w := range newMembers {
		retriers.Add(1)
		go func() {
			defer retriers.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for {
				select {
				case <-done:
					return
				default:
				}
				mu.Lock()
				var pick []message
				for range 1 + rng.IntN(4) {
					if len(acked) > 0 {
						pick = append(pick, acked[rng.IntN(len(acked))])
					}
				}
				mu.Unlock()
				if len(pick) == 0 {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				var r clitest.Result
				switch m := pick[0]; rng.IntN(3) {
				case 0:
					r = cli.Run(m.xaddArgs("auto")...)
				case 1:
					var lines []string
					for _, q := range pick {
						if q.stream == m.stream && q.pid == m.pid && q.auto == m.auto {
							lines = append(lines, q.batchLine())
						}
					}
					args := []string{"xadd", m.stream, "--pid", m.pid, "--batch", "-", "--batch-id", fmt.Sprint("r", rng.Uint64())}
					if m.auto {
						args = append(args, "--auto")
					}
					r = cli.WithStdin(strings.NewReader(strings.Join(lines, "\n") + "\n")).Run(args...)
				default:
					var lines []string
					for _, q := range pick {
						lines = append(lines, q.execLine())
					}
					r = cli.WithStdin(strings.NewReader(strings.Join(lines, "\n") + "\n")).Run("exec")
				}
				if r.Code != 0 {
					fail("a retry: %s", r)
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	retriers.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures, the first: %s", len(failures), failures[0])
	}
	// Each message once, by content.
	rdb := faultRedis(t, srv)
	ctx := context.Background()
	total := 0
	for _, s := range streams {
		entries, err := rdb.XRange(ctx, s, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, e := range entries {
			seen[fmt.Sprint(e.Values["msg"])]++
		}
		for name, n := range seen {
			if n > 1 {
				t.Errorf("%s: %s appears %d times", s, name, n)
			}
		}
		total += len(entries)
	}
	if total != perStream*len(streams) {
		t.Errorf("%d entries, want %d", total, perStream*len(streams))
	}
	t.Logf("%d messages, %d retried concurrently by %d members of this release", total, len(acked), newMembers)
}
