package e2e

// BenchmarkConsume: entries a second of `consume --until-empty` with a
// trivial handler (true), beside the loop a user writes by hand
// (docs/claim-run.md): XREADGROUP with redis-cli, claim run, XACK with
// redis-cli, an entry at a time. The release build on loopback TCP, as in
// BenchmarkCLI. A benchmark: it asserts nothing about speed.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/redistest"
)

// consumeLoop is the hand-written consumer: one entry a round.
const consumeLoop = `while :; do
  out=$(redis-cli -p "$PORT" --raw XREADGROUP GROUP g c COUNT 1 STREAMS "$STREAM" '>')
  [ -z "$out" ] && break
  id=$(printf '%s\n' "$out" | sed -n 2p)
  "$IDMPCTL" claim run "$STREAM:$id" -- true && redis-cli -p "$PORT" XACK "$STREAM" g "$id" >/dev/null
done
`

func BenchmarkConsume(b *testing.B) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		b.Skip("redis-cli not found: the hand-written loop needs it")
	}
	n := 1000 // IDMPCTL_BENCH_CONSUME_ENTRIES: entries a run
	if v, err := strconv.Atoi(os.Getenv("IDMPCTL_BENCH_CONSUME_ENTRIES")); err == nil && v > 0 {
		n = v
	}
	bin := os.Getenv("IDMPCTL_BENCH_BIN")
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "idmpctl")
		build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "..")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("release build: %v\n%s", err, out)
		}
	} else if abs, err := filepath.Abs(bin); err == nil {
		bin = abs
	}
	srv := redistest.NewWith(b, redistest.Options{})
	port := strconv.Itoa(srv.Opts.Port)
	dir := b.TempDir()
	env := append(os.Environ(), "IDMPCTL_URL="+srv.URL, "PORT="+port, "IDMPCTL="+bin)
	round := 0
	// rate fills a new stream of n entries and its group, and returns the
	// entries a second of one consumer of it.
	rate := func(consumer func(stream string) *exec.Cmd) float64 {
		b.Helper()
		round++
		stream := "bench" + strconv.Itoa(round)
		var adds strings.Builder
		for i := range n {
			fmt.Fprintf(&adds, "XADD %s * n %d\n", stream, i)
		}
		adds.WriteString("XGROUP CREATE " + stream + " g 0\n")
		cli := exec.Command("redis-cli", "-p", port)
		cli.Stdin = strings.NewReader(adds.String())
		if out, err := cli.CombinedOutput(); err != nil {
			b.Fatalf("redis-cli: %v\n%s", err, out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		c := consumer(stream)
		c = exec.CommandContext(ctx, c.Path, c.Args[1:]...)
		c.Dir, c.Env = dir, append(env, "STREAM="+stream)
		start := time.Now()
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", strings.Join(c.Args, " "), err, out)
		}
		elapsed := time.Since(start)
		if p, err := srv.Do("XPENDING", stream, "g"); err != nil || !strings.HasPrefix(p, "0") {
			b.Fatalf("%s: %q pending after the run (%v)", stream, p, err)
		}
		return float64(n) / elapsed.Seconds()
	}
	consume := func(workers int) func(string) *exec.Cmd {
		return func(stream string) *exec.Cmd {
			return exec.Command(bin, "consume", stream, "--group", "g", "--workers", strconv.Itoa(workers),
				"--until-empty", "--block", "10ms", "-o", "raw", "--", "true")
		}
	}
	b.ResetTimer()
	for b.Loop() {
		one, four := rate(consume(1)), rate(consume(4))
		loop := rate(func(string) *exec.Cmd { return exec.Command("sh", "-c", consumeLoop) })
		b.ReportMetric(one, "consume-entries/s")
		b.ReportMetric(four, "consume-workers4-entries/s")
		b.ReportMetric(loop, "loop-entries/s")
		b.ReportMetric(one/loop, "consume/loop-x")
		fmt.Printf("\n| %d entries, handler `true` | entries/s |\n| --- | --- |\n", n)
		fmt.Printf("| `consume --until-empty` | %.0f |\n| `consume --until-empty --workers 4` | %.0f |\n", one, four)
		fmt.Printf("| shell loop: `redis-cli XREADGROUP` + `claim run` + `redis-cli XACK` | %.0f |\n\n", loop)
	}
}
