//go:build linux

package e2e

// A property test of the claim protocol (issue 16): random interleavings of
// claim run workers (started, some killed -9 at random), step-wise claims
// (acquire, renew with default flags, complete, or abandoned), purges of
// every flavour but --force, and records expiring (a 2s retention), on a
// few keys, against one real server. Whatever the interleaving:
//
//   - no two runs of a key's command overlap in time. A claim run's run
//     lasts from its command's start (it writes the time) to its end (it
//     writes the time when it ends by itself; a command killed with its
//     worker, or stopped by its worker, ends when its process is seen gone,
//     polled every 2ms). A step-wise claim's run lasts from the reply of its
//     acquire to the send of its last successful renew or complete: the
//     span its token provably held the key;
//   - no fencing token is handed out twice for a key.
//
// The seed is fixed (IDMPCTL_PROPERTY_SEED replays another); the rounds
// are bounded (IDMPCTL_PROPERTY_STEPS, default 150; -short 60).

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// propRun is one run of a key's command, or one step-wise hold.
type propRun struct {
	key        string
	token      string
	start, end int64 // unix ns
	what       string
}

// propWatcher finds the claim run commands that started (run.PID files)
// and when each ended (end.PID, else the process seen gone).
type propWatcher struct {
	dir  string
	mu   sync.Mutex
	runs map[int]*propRun
	stop chan struct{}
	done chan struct{}
}

func (w *propWatcher) loop() {
	defer close(w.done)
	for {
		select {
		case <-w.stop:
			w.scan(true)
			return
		case <-time.After(2 * time.Millisecond):
		}
		w.scan(false)
	}
}

// scan picks up new runs and marks the ones whose process is gone.
func (w *propWatcher) scan(final bool) {
	entries, _ := os.ReadDir(w.dir)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), "run.")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil || w.runs[pid] != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(w.dir, e.Name()))
		f := strings.Fields(string(b))
		if err != nil || len(f) != 3 || !strings.HasSuffix(string(b), "\n") {
			continue // still being written
		}
		start, _ := strconv.ParseInt(f[2], 10, 64)
		w.runs[pid] = &propRun{key: f[0], token: f[1], start: start, what: fmt.Sprintf("claim run command (pid %d)", pid)}
	}
	now := time.Now().UnixNano()
	for pid, r := range w.runs {
		if r.end != 0 {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(w.dir, "end."+strconv.Itoa(pid))); err == nil && strings.HasSuffix(string(b), "\n") {
			r.end, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			continue
		}
		if faultProcessGone(pid) {
			r.end = now
		} else if final {
			r.end = -1
		}
	}
}

func TestPropertyClaimsNeverOverlap(t *testing.T) {
	steps := 150
	if testing.Short() {
		steps = 60
	}
	if n, err := strconv.Atoi(os.Getenv("IDMPCTL_PROPERTY_STEPS")); err == nil && n > 0 {
		steps = n
	}
	seed := uint64(16)
	if s, err := strconv.ParseUint(os.Getenv("IDMPCTL_PROPERTY_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d, %d steps: replay with IDMPCTL_PROPERTY_SEED=%d", seed, steps, seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 16))
	srv := redistest.NewWith(t, redistest.Options{})
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	keys := []string{"prop:a", "prop:b"}
	const lease, ttl, maxWorkers = "1s", "2s", 6

	w := &propWatcher{dir: c.Dir, runs: map[int]*propRun{}, stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()

	type stepClaim struct {
		token       string
		start, last int64 // acquire's reply; the send of the last successful renew or complete
	}
	held := map[string]*stepClaim{}
	var holds []propRun
	var tokens []propRun // every token handed out that the test saw
	var workers []*clitest.Proc
	var kills atomic.Int64
	var tally struct {
		workers, acquires, acquired, renews, renewed, completes, completed, lost, abandoned int
		purges, purged, liveKept, takeovers, waits                                          int
	}
	purged := regexp.MustCompile(`(deleted|would delete) (\d+)`)
	liveKept := regexp.MustCompile(`purge: (\d+) live records kept`)
	endHold := func(key string, c *stepClaim) {
		if c.last > c.start {
			holds = append(holds, propRun{key: key, token: c.token, start: c.start, end: c.last, what: "step-wise claim"})
		}
		delete(held, key)
	}

	began := time.Now()
	for step := 0; step < steps; step++ {
		key := keys[rng.IntN(len(keys))]
		running := slices.DeleteFunc(slices.Clone(workers), func(p *clitest.Proc) bool { return p.Exited() })
		switch op := rng.IntN(100); {
		case op < 30 && len(running) < maxWorkers:
			// A claim run worker: its command records its start, sleeps,
			// records its end, and succeeds or fails.
			d := time.Duration(50+rng.IntN(700)) * time.Millisecond
			code := []string{"0", "3"}[rng.IntN(2)]
			p := c.Start("claim", "run", key, "--lease", lease, "--ttl", ttl, "--timeout", "300ms", "-o", "json", "--",
				"sh", "-c", `printf '%s %s %s\n' "$IDMPCTL_KEY" "$IDMPCTL_TOKEN" "$(date +%s%N)" > "$0/run.$$"; sleep "$1"; date +%s%N > "$0/end.$$"; exit "$2"`,
				c.Dir, strconv.FormatFloat(d.Seconds(), 'f', 3, 64), code)
			workers = append(workers, p)
			tally.workers++
			if rng.IntN(3) == 0 {
				// Killed -9 at a random moment: before its acquire, during
				// its command, or while it records the outcome.
				kills.Add(1)
				time.AfterFunc(time.Duration(rng.IntN(900))*time.Millisecond, func() { _ = p.Kill() })
			}
		case op < 40 && len(running) > 0:
			_ = running[rng.IntN(len(running))].Kill()
			kills.Add(1)
		case op < 55:
			if h := held[key]; h != nil {
				// Renew with default flags: the stored lease and retention.
				tally.renews++
				sent := time.Now().UnixNano()
				r := c.Run("claim", "renew", key, "--token", h.token)
				switch r.Code {
				case 0:
					tally.renewed++
					h.last = sent
				case 76:
					tally.lost++
					endHold(key, h)
				default:
					t.Fatalf("renew: %s", r)
				}
				break
			}
			tally.acquires++
			r := c.Run("claim", "acquire", key, "--owner", "stepper", "--lease", lease, "--ttl", ttl)
			recv := time.Now().UnixNano()
			switch r.Code {
			case 0:
				tally.acquired++
				tok := strings.TrimSpace(r.Stdout)
				held[key] = &stepClaim{token: tok, start: recv, last: recv}
				tokens = append(tokens, propRun{key: key, token: tok, what: "step-wise acquire"})
				if strings.Contains(r.Stderr, "took over") {
					tally.takeovers++
				}
			case 1, 75:
			default:
				t.Fatalf("acquire: %s", r)
			}
		case op < 65:
			if h := held[key]; h != nil {
				tally.completes++
				sent := time.Now().UnixNano()
				r := c.Run("claim", "complete", key, "--token", h.token, "--result", "step")
				switch r.Code {
				case 0:
					tally.completed++
					h.last = sent
				case 76:
					tally.lost++
				default:
					t.Fatalf("complete: %s", r)
				}
				endHold(key, h)
			}
		case op < 70:
			if h := held[key]; h != nil {
				tally.abandoned++ // a step-wise worker that died holding it
				endHold(key, h)
			}
		case op < 82:
			flavour := [][]string{nil, {"--status", "PROCESSING"}, {"--stale"}, {"--older-than", "1ms"}, {"--status", "PROCESSING,COMPLETED,FAILED"}}[rng.IntN(5)]
			r := c.Run(append([]string{"purge", "--match", "prop:*", "--yes"}, flavour...)...)
			if r.Code != 0 {
				t.Fatalf("purge: %s", r)
			}
			tally.purges++
			if m := purged.FindStringSubmatch(r.Stderr); m != nil {
				n, _ := strconv.Atoi(m[2])
				tally.purged += n
			}
			if m := liveKept.FindStringSubmatch(r.Stderr); m != nil {
				n, _ := strconv.Atoi(m[1])
				tally.liveKept += n
			}
		default:
			// Time passes: leases lapse, retentions expire.
			tally.waits++
			time.Sleep(time.Duration(100+rng.IntN(900)) * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
	}
	for key, h := range held {
		endHold(key, h)
	}
	outcomes := map[string]int{}
	for _, p := range workers {
		r := p.Wait(time.Minute)
		switch {
		case r.Code == -1:
			outcomes["killed"]++
		default:
			outcomes[fmt.Sprintf("exit %d", r.Code)]++
		}
		if strings.Contains(r.Stderr, "took over") {
			tally.takeovers++
		}
	}
	close(w.stop)
	<-w.done

	// Every run and hold of a key, in order of start: none starts before
	// the previous one ended.
	all := slices.Clone(holds)
	w.mu.Lock()
	for _, r := range w.runs {
		if r.end <= 0 {
			t.Errorf("%s of %s (token %s) never ended", r.what, r.key, r.token)
			continue
		}
		all = append(all, *r)
		tokens = append(tokens, *r)
	}
	commands := len(w.runs)
	w.mu.Unlock()
	slices.SortFunc(all, func(a, b propRun) int {
		if a.key != b.key {
			return strings.Compare(a.key, b.key)
		}
		return int(a.start - b.start)
	})
	overlaps := 0
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.key == b.key && b.start < a.end {
			overlaps++
			t.Errorf("%s: %s (token %s) started %s before %s (token %s) ended", a.key, b.what, b.token,
				time.Duration(a.end-b.start), a.what, a.token)
		}
	}
	// Tokens: a command's token and a step-wise acquire's, each once per
	// key (a claim's one command reports it once).
	seen := map[string]string{}
	dups := 0
	for _, r := range tokens {
		k := r.key + " " + r.token
		if prev, ok := seen[k]; ok {
			dups++
			t.Errorf("%s: token %s handed out twice (%s, %s)", r.key, r.token, prev, r.what)
		}
		seen[k] = r.what
	}
	t.Logf("seed %d: %d steps in %s on %d keys: %d claim run workers (%d kills -9 sent; ends: %v), %d commands run; "+
		"step-wise: %d acquires (%d acquired), %d renews with default flags (%d renewed), %d completes (%d completed), %d lost, %d abandoned; "+
		"%d takeovers; %d purges deleted %d records and kept %d as live; %d waits; %d runs and holds checked: %d overlaps; %d tokens: %d handed out twice",
		seed, steps, time.Since(began).Round(time.Millisecond), len(keys), tally.workers, kills.Load(), outcomes, commands,
		tally.acquires, tally.acquired, tally.renews, tally.renewed, tally.completes, tally.completed, tally.lost, tally.abandoned,
		tally.takeovers, tally.purges, tally.purged, tally.liveKept, tally.waits, len(all), overlaps, len(tokens), dups)
}
