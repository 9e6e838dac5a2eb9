package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The upgrade (docs/upgrade.md), as a fleet lives it: emulated adds on
// Redis 7.0 with AOF, the same data directory started on Redis 8.6.3,
// more emulated adds there (--mode emulated), then rounds of retries in
// auto mode (xadd, xadd --batch, exec) and migrations, with idmpctl and
// the server killed (SIGKILL) at random points. Every message carries its
// identity in its fields: at the end each appears at most once, and those
// whose entries were deleted not at all.

// redis70 is a Redis 7.x server binary for the emulated phase ("" none).
func redis70() string {
	for _, b := range []string{os.Getenv("IDMPCTL_TEST_REDIS7_SERVER"), "/usr/bin/redis-server", "redis-server"} {
		if b == "" {
			continue
		}
		out, err := exec.Command(b, "--version").Output()
		if err == nil && strings.Contains(string(out), "v=7.") {
			return b
		}
	}
	return ""
}

type upgradeRun struct {
	t     *testing.T
	rng   *rand.Rand
	srv   *redistest.Server
	cli   *clitest.CLI
	kills map[string]int
	sent  map[string]bool // every message's key, "stream pid kind name"
}

// message is one idempotent add: an explicit iid, or IDMPAUTO of fields
// that name it (the same fields on every retry).
type message struct {
	stream, pid, name string
	auto              bool
}

func (m message) key() string { return fmt.Sprintf("%s %s %v %s", m.stream, m.pid, m.auto, m.name) }

func (m message) xaddArgs(mode string) []string {
	args := []string{"xadd", m.stream, "--pid", m.pid, "--mode", mode}
	if m.auto {
		args = append(args, "--auto")
	} else {
		args = append(args, "--iid", m.name)
	}
	return append(args, "msg", m.name, "auto", fmt.Sprint(m.auto))
}

func (m message) batchLine() string {
	f := fmt.Sprintf(`"fields":[["msg",%q],["auto",%q]]`, m.name, fmt.Sprint(m.auto))
	if m.auto {
		return "{" + f + "}"
	}
	return fmt.Sprintf(`{"iid":%q,%s}`, m.name, f)
}

func (m message) execLine() string {
	if m.auto {
		return fmt.Sprintf("XADD %s IDMPAUTO %s * msg %s auto true", m.stream, m.pid, m.name)
	}
	return fmt.Sprintf("XADD %s IDMP %s %s * msg %s auto false", m.stream, m.pid, m.name, m.name)
}

// maybeKill runs idmpctl; with probability p it kills it (SIGKILL) after a
// random delay, or kills the server meanwhile and restarts it.
func (u *upgradeRun) maybeKill(p float64, stdin string, args ...string) {
	u.t.Helper()
	cli := u.cli
	if stdin != "" {
		cli = cli.WithStdin(strings.NewReader(stdin))
	}
	if u.rng.Float64() >= p {
		cli.Run(args...)
		return
	}
	proc := cli.Start(args...)
	time.Sleep(time.Duration(u.rng.IntN(40)) * time.Millisecond)
	if u.rng.IntN(3) == 0 {
		u.kills["server during "+args[0]]++
		u.srv.Kill()
		proc.Wait(time.Minute)
		if err := u.srv.Restart(); err != nil {
			u.t.Fatal(err)
		}
		return
	}
	if !proc.Exited() {
		u.kills["idmpctl "+args[0]]++
		_ = proc.Kill()
	} else {
		u.kills["none (idmpctl "+args[0]+" was done)"]++
	}
	proc.Wait(time.Minute)
}

// add sends m until idmpctl says it is there (killed tries included).
func (u *upgradeRun) add(m message, mode string, killP float64) {
	u.t.Helper()
	u.sent[m.key()] = true
	u.maybeKill(killP, "", m.xaddArgs(mode)...)
	for try := 0; ; try++ {
		r := u.cli.Run(m.xaddArgs(mode)...)
		if r.Code == 0 {
			return
		}
		if try == 20 {
			u.t.Fatalf("add %s: %s", m.key(), r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// retry sends ms again in auto mode, by one of xadd, xadd --batch, exec.
func (u *upgradeRun) retry(ms []message, killP float64) {
	u.t.Helper()
	if len(ms) == 0 {
		return
	}
	switch u.rng.IntN(3) {
	case 0:
		for _, m := range ms {
			u.maybeKill(killP/float64(len(ms)), "", m.xaddArgs("auto")...)
		}
	case 1:
		// One batch per stream, producer and kind.
		groups := map[string][]message{}
		for _, m := range ms {
			k := fmt.Sprintf("%s %s %v", m.stream, m.pid, m.auto)
			groups[k] = append(groups[k], m)
		}
		for _, g := range groups {
			var lines []string
			for _, m := range g {
				lines = append(lines, m.batchLine())
			}
			args := []string{"xadd", g[0].stream, "--pid", g[0].pid, "--batch", "-", "--batch-id", fmt.Sprint("r", u.rng.Uint64())}
			if g[0].auto {
				args = append(args, "--auto")
			}
			u.maybeKill(killP, strings.Join(lines, "\n")+"\n", args...)
		}
	default:
		var lines []string
		for _, m := range ms {
			lines = append(lines, m.execLine())
		}
		u.maybeKill(killP, strings.Join(lines, "\n")+"\n", "exec")
	}
}

func TestUpgradeAddsNoDuplicate(t *testing.T) {
	if testing.Short() {
		t.Skip("upgrade test in -short mode")
	}
	native := redistest.RequireNative(t)
	old := redis70()
	if old == "" {
		t.Skip("no Redis 7 server for the emulated phase (set IDMPCTL_TEST_REDIS7_SERVER)")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	dir := filepath.Join(t.TempDir(), "data")
	srv, err := redistest.Start(redistest.Options{Dir: dir, Unix: true, AOF: true, Binary: old})
	if err != nil {
		t.Fatal(err)
	}
	u := &upgradeRun{t: t, rng: rand.New(rand.NewPCG(seed, 23)), srv: srv, kills: map[string]int{}, sent: map[string]bool{},
		cli: clitest.New(t, "IDMPCTL_URL="+srv.URL)}
	t.Cleanup(func() { u.srv.Kill() })
	ctx := context.Background()

	// Phase 1, Redis 7.0: two streams with a long DURATION, adds of both
	// kinds, some entries deleted afterwards.
	streams := []string{"{a}", "{b}"}
	var all []message
	for _, s := range streams {
		u.cli.Expect(0, "exec", "XADD", s, "*", "created", "1")
		u.cli.Expect(0, "cfgset", s, "--duration", "3600", "--maxsize", "1000", "--yes")
		for k := range 24 {
			m := message{stream: s, pid: fmt.Sprint("p", k%3), name: fmt.Sprint("e", k), auto: k%4 == 3}
			u.add(m, "auto", 0.3)
			all = append(all, m)
		}
	}
	rdb7 := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Addr})
	deleted := map[string]bool{}
	for _, s := range streams {
		entries, err := rdb7.XRange(ctx, s, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries[1:] {
			if u.rng.IntN(6) == 0 {
				rdb7.XDel(ctx, s, e.ID)
				deleted[fmt.Sprintf("%s %v", s, e.Values["msg"])] = true
			}
		}
	}
	rdb7.Close()

	// The upgrade: the 7.0 server killed, its data directory started on
	// Redis 8.6.3, which loads the AOF.
	u.srv.Kill()
	if u.srv, err = redistest.Start(redistest.Options{Dir: dir, Unix: true, AOF: true, Binary: native}); err != nil {
		t.Fatal(err)
	}

	// Phase 2, Redis 8.6.3: emulated adds asked for (--mode emulated).
	for _, s := range streams {
		for k := range 8 {
			m := message{stream: s, pid: fmt.Sprint("p", k%3), name: fmt.Sprint("m", k), auto: k%4 == 1}
			u.add(m, "emulated", 0.3)
			all = append(all, m)
		}
	}

	// Phase 3: {a} is migrated at once, before any native add; {b} gets
	// retries first. Then rounds of retries, new native adds and
	// migrations, with kills.
	u.maybeKill(0.5, "", "migrate", "{a}")
	const rounds = 10
	fresh := 0
	for round := range rounds {
		var pick []message
		for _, m := range all {
			if u.rng.IntN(3) == 0 {
				pick = append(pick, m)
			}
		}
		u.retry(pick, 0.5)
		for range 3 {
			m := message{stream: streams[u.rng.IntN(2)], pid: fmt.Sprint("p", u.rng.IntN(3)), name: fmt.Sprint("n", fresh), auto: u.rng.IntN(2) == 0}
			fresh++
			u.add(m, "auto", 0.3)
			all = append(all, m)
		}
		if round%3 == 2 {
			args := []string{"migrate", "--match", "{*}"}
			if u.rng.IntN(4) == 0 {
				args = append(args, "--dry-run")
			}
			u.maybeKill(0.5, "", args...)
		}
		if u.rng.IntN(4) == 0 {
			u.kills["server between rounds"]++
			u.srv.Kill()
			if err := u.srv.Restart(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A last pass: every message once more, after a last migration.
	u.cli.Run("migrate", "--match", "{*}")
	u.retry(all, 0)

	// Count by content.
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: u.srv.Addr})
	defer rdb.Close()
	seen := map[string]int{}
	var xlen int64
	for _, s := range streams {
		entries, err := rdb.XRange(ctx, s, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		xlen += int64(len(entries))
		for _, e := range entries {
			if e.Values["created"] != nil {
				continue
			}
			seen[fmt.Sprintf("%s %v", s, e.Values["msg"])]++
		}
	}
	dups := 0
	for k, n := range seen {
		if n > 1 {
			dups += n - 1
			t.Errorf("%s appears %d times", k, n)
		}
	}
	for k := range deleted {
		if seen[k] > 0 {
			dups++
			t.Errorf("%s was deleted before the upgrade and added again", k)
		}
	}
	distinct := map[string]bool{}
	for _, m := range all {
		distinct[fmt.Sprintf("%s %s", m.stream, m.name)] = true
	}
	for k := range distinct {
		if seen[k] == 0 && !deleted[k] {
			t.Errorf("%s never made it into the stream", k)
		}
	}
	var kills []string
	for k, n := range u.kills {
		kills = append(kills, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(kills)
	t.Logf("rounds %d, messages %d (%d deleted before the upgrade), entries %d, duplicates %d; kills: %s",
		rounds, len(distinct), len(deleted), xlen, dups, strings.Join(kills, ", "))
}
