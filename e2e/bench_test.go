package e2e

// BenchmarkCLI measures what scripts feel, side by side with the anchors
// of docs/speed.md, in one run on one server: the release
// build of idmpctl (static, stripped) against redis-cli, redis-benchmark
// and redis-cli --pipe, all on loopback TCP. It prints a markdown table of medians and
// reports each ratio (b.ReportMetric). A benchmark, not a test: it asserts
// nothing about speed. Run it with `make bench`.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/redistest"
)

// Rounds: each single-call row alternates idmpctl and its anchor this many
// times; the batch row runs each side batchRounds times.
const (
	benchCalls   = 200
	benchLoop    = 100
	batchLines   = 200_000
	batchRounds  = 3
	execLines    = 100_000
	execRounds   = 3
	benchTimeout = 5 * time.Minute
)

// benchRow is one line of the table: medians, and the goal on their ratio.
type benchRow struct {
	what, anchor    string
	ours, theirs    float64 // ms a call, or adds a second
	unit            string
	goal            float64
	higherIsBetter  bool
	noGoal          bool // a figure beside the others, no goal of its own
	ratio           float64
	ratioSet        bool // ratio is given (a median of per-round ratios), not ours/theirs
	oursS, theirsS  string
	metric, comment string
}

func BenchmarkCLI(b *testing.B) {
	for _, tool := range []string{"redis-cli", "redis-benchmark"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("%s not found: the anchors need it", tool)
		}
	}
	// IDMPCTL_BENCH_BIN measures another build (an older one, for a
	// before-and-after) in the same harness.
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
	url := srv.URL
	env := append(os.Environ(), "IDMPCTL_URL="+url)
	dir := b.TempDir()

	run := func(name string, args ...string) time.Duration {
		b.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
		defer cancel()
		c := exec.CommandContext(ctx, name, args...)
		c.Env, c.Dir = env, dir
		start := time.Now()
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return time.Since(start)
	}
	// pair times n alternating calls of ours and theirs, each a func of the
	// round, and returns the medians in ms.
	pair := func(n int, ours, theirs func(i int) time.Duration) (float64, float64) {
		var a, t []time.Duration
		for i := range n + 10 {
			da, dt := ours(i), theirs(i)
			if i >= 10 { // warm-up: page cache, script cache, server allocations
				a, t = append(a, da), append(t, dt)
			}
		}
		return median(a), median(t)
	}

	b.ResetTimer()
	for b.Loop() {
		var rows []benchRow
		ours, theirs := pair(benchCalls,
			func(int) time.Duration { return run(bin, "calc-maxsize", "--rate", "1000/s", "--mark-delay", "80ms") },
			func(int) time.Duration { return run("redis-cli", "-p", port, "PING") })
		rows = append(rows, benchRow{what: "`calc-maxsize` start", anchor: "`redis-cli PING`", ours: ours, theirs: theirs,
			unit: "ms", goal: 0.9, metric: "start-x"})

		ours, theirs = pair(benchCalls,
			func(i int) time.Duration {
				return run(bin, "xadd", "s", "--pid", "p", "--iid", "i-"+strconv.Itoa(i), "f", "v")
			},
			func(int) time.Duration { return run("redis-cli", "-p", port, "XADD", "s2", "*", "f", "v") })
		rows = append(rows, benchRow{what: "single `xadd` (emulated)", anchor: "`redis-cli XADD`", ours: ours, theirs: theirs,
			unit: "ms", goal: 1.0, metric: "xadd-x"})

		ours, theirs = pair(benchCalls,
			func(i int) time.Duration { return run(bin, "claim", "acquire", "acq:"+strconv.Itoa(i)) },
			func(i int) time.Duration {
				return run("redis-cli", "-p", port, "SET", "nx:"+strconv.Itoa(i), "PROCESSING", "NX", "EX", "60")
			})
		rows = append(rows, benchRow{what: "`claim acquire`", anchor: "`redis-cli SET NX`", ours: ours, theirs: theirs,
			unit: "ms", goal: 1.0, metric: "acquire-x"})

		truePath, _ := exec.LookPath("true")
		ours, theirs = pair(benchLoop,
			func(i int) time.Duration { return run(bin, "claim", "run", "run:"+strconv.Itoa(i), "--", truePath) },
			func(i int) time.Duration {
				k := "loop:" + strconv.Itoa(i)
				return run("redis-cli", "-p", port, "SET", k, "PROCESSING", "NX", "EX", "60") +
					run(truePath) + run("redis-cli", "-p", port, "SET", k, "COMPLETED")
			})
		rows = append(rows, benchRow{what: "a message: `claim run KEY -- true`", anchor: "`redis-cli SET k PROCESSING NX EX` + `true` + `redis-cli SET k COMPLETED`",
			ours: ours, theirs: theirs, unit: "ms", goal: 0.8, metric: "claim-run-x"})

		rows = append(rows, batchRow(b, bin, dir, port, run))
		sizes, rounds := batchPathSizes()
		for _, n := range sizes {
			rows = append(rows, batchPathRows(b, bin, srv, n, rounds)...)
		}
		rows = append(rows, execRow(b, bin, dir, port, run))
		for i := range rows {
			rows[i].settle()
			b.ReportMetric(rows[i].ratio, rows[i].metric)
		}
		printTable(rows)
	}
}

// batchRow times xadd --batch of batchLines lines (default settings, a new
// stream each round) against redis-cli --pipe of the same number of plain
// XADDs (the goal's anchor), and redis-benchmark -P 64 XADD (a comment).
func batchRow(b *testing.B, bin, dir, port string, run func(string, ...string) time.Duration) benchRow {
	b.Helper()
	file := filepath.Join(dir, "batch.ndjson")
	pipe := filepath.Join(dir, "pipe.resp")
	lines := filepath.Join(dir, "pipe.txt")
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	p, err := os.Create(pipe)
	if err != nil {
		b.Fatal(err)
	}
	l, err := os.Create(lines)
	if err != nil {
		b.Fatal(err)
	}
	w, pw, lw := bufio.NewWriter(f), bufio.NewWriter(p), bufio.NewWriter(l)
	for i := 1; i <= batchLines; i++ {
		fmt.Fprintf(w, "{\"iid\":\"order-%d\",\"fields\":{\"amount\":\"%d\",\"currency\":\"EUR\"}}\n", i, i)
		n := strconv.Itoa(i)
		fmt.Fprintf(pw, "*7\r\n$4\r\nXADD\r\n$2\r\npp\r\n$1\r\n*\r\n$6\r\namount\r\n$%d\r\n%s\r\n$8\r\ncurrency\r\n$3\r\nEUR\r\n", len(n), n)
		fmt.Fprintf(lw, "XADD pl * amount %s currency EUR\n", n)
	}
	if err := errorsJoin(w.Flush(), f.Close(), pw.Flush(), p.Close(), lw.Flush(), l.Close()); err != nil {
		b.Fatal(err)
	}
	rate := func(d time.Duration) float64 { return batchLines / d.Seconds() }
	var ours, bench, piped, resp []float64
	rps := regexp.MustCompile(`([0-9.]+) requests per second`)
	for round := range batchRounds {
		// Results to a file, as a producer keeps them (the anchors print nothing).
		ours = append(ours, rate(run("sh", "-c", bin+" xadd b"+strconv.Itoa(round)+" --pid p --batch "+file+" > results.txt")))
		ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
		out, err := exec.CommandContext(ctx, "redis-benchmark", "-p", port, "-P", "64", "-n", strconv.Itoa(batchLines),
			"-q", "XADD", "rb", "*", "amount", "100", "currency", "EUR").Output()
		cancel()
		if err != nil {
			b.Fatalf("redis-benchmark: %v", err)
		}
		m := rps.FindAllStringSubmatch(string(out), -1)
		if m == nil {
			b.Fatalf("redis-benchmark: no rate in %q", out)
		}
		v, _ := strconv.ParseFloat(m[len(m)-1][1], 64)
		bench = append(bench, v)
		piped = append(piped, rate(run("sh", "-c", "redis-cli -p "+port+" --pipe < "+lines+" > /dev/null")))
		resp = append(resp, rate(run("sh", "-c", "redis-cli -p "+port+" --pipe < "+pipe+" > /dev/null")))
	}
	// The goal's anchor is the issue's "redis-cli --pipe with plain XADD
	// lines": text lines, as a script writes them. The same adds already
	// encoded as RESP, which redis-cli forwards without parsing, and
	// redis-benchmark are shown beside it, with our ratio to each.
	mo, mb, mp, mr := medianF(ours), medianF(bench), medianF(piped), medianF(resp)
	return benchRow{what: fmt.Sprintf("`xadd --batch` %dk lines, default settings", batchLines/1000),
		anchor: "`redis-cli --pipe` plain XADD lines", ours: mo, theirs: mp, unit: "adds/s", goal: 0.6, higherIsBetter: true,
		metric: "batch-x", comment: fmt.Sprintf("the same as RESP %.0fk/s (%.2fx); `redis-benchmark -P 64` %.0fk/s (%.2fx)",
			mr/1000, mo/mr, mb/1000, mo/mb)}
}

// execRow times execLines XADD IDMP lines through idmpctl exec < file
// (replies to a file) against redis-cli < file with as many plain XADD
// lines, on the same server in the same run: median of execRounds each.
func execRow(b *testing.B, bin, dir, port string, run func(string, ...string) time.Duration) benchRow {
	b.Helper()
	idmpFile, plainFile := filepath.Join(dir, "exec-idmp.txt"), filepath.Join(dir, "exec-plain.txt")
	f, err := os.Create(idmpFile)
	if err != nil {
		b.Fatal(err)
	}
	p, err := os.Create(plainFile)
	if err != nil {
		b.Fatal(err)
	}
	w, pw := bufio.NewWriter(f), bufio.NewWriter(p)
	for i := 1; i <= execLines; i++ {
		fmt.Fprintf(w, "XADD ex IDMP producer-1 order-%d * amount %d currency EUR\n", i, i)
		fmt.Fprintf(pw, "XADD px * amount %d currency EUR\n", i)
	}
	if err := errorsJoin(w.Flush(), f.Close(), pw.Flush(), p.Close()); err != nil {
		b.Fatal(err)
	}
	rate := func(d time.Duration) float64 { return execLines / d.Seconds() }
	var ours, theirs []float64
	for range execRounds {
		ours = append(ours, rate(run("sh", "-c", bin+" exec < "+idmpFile+" > exec-results.txt")))
		theirs = append(theirs, rate(run("sh", "-c", "redis-cli -p "+port+" < "+plainFile+" > cli-results.txt")))
	}
	return benchRow{what: fmt.Sprintf("`idmpctl exec < file`, %dk `XADD ... IDMP` lines", execLines/1000),
		anchor: fmt.Sprintf("`redis-cli < file`, %dk plain `XADD` lines", execLines/1000), ours: medianF(ours), theirs: medianF(theirs),
		unit: "adds/s", goal: 1.0, higherIsBetter: true, metric: "exec-x"}
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *benchRow) settle() {
	if !r.ratioSet {
		r.ratio = r.ours / r.theirs
	}
	if r.unit == "ms" {
		r.oursS, r.theirsS = fmt.Sprintf("%.2f ms", r.ours), fmt.Sprintf("%.2f ms", r.theirs)
		return
	}
	r.oursS, r.theirsS = fmt.Sprintf("%.0fk/s", r.ours/1000), fmt.Sprintf("%.0fk/s", r.theirs/1000)
}

func printTable(rows []benchRow) {
	host, _ := os.Hostname()
	fmt.Printf("\nidmpctl (release build: static, stripped) against its anchors, one run, medians; %s/%s, %d CPUs, %s, %s\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), host, time.Now().UTC().Format(time.RFC3339))
	fmt.Println("| what | idmpctl | anchor | ratio | goal | met |")
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	for _, r := range rows {
		goal, met := fmt.Sprintf("<= %.2fx", r.goal), r.ratio <= r.goal
		if r.higherIsBetter {
			goal, met = fmt.Sprintf(">= %.2fx", r.goal), r.ratio >= r.goal
		}
		metS := map[bool]string{true: "yes", false: "no"}[met]
		if r.noGoal {
			goal, metS = "-", "-"
		}
		anchor := r.anchor + " " + r.theirsS
		if r.comment != "" {
			anchor += "; " + r.comment
		}
		fmt.Printf("| %s | %s | %s | %.2fx | %s | %s |\n", r.what, r.oursS, anchor, r.ratio, goal, metS)
	}
	fmt.Println()
}

func median(ds []time.Duration) float64 {
	f := make([]float64, len(ds))
	for i, d := range ds {
		f[i] = float64(d) / float64(time.Millisecond)
	}
	return medianF(f)
}

func medianF(f []float64) float64 {
	if len(f) == 0 {
		return 0
	}
	s := slices.Clone(f)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
