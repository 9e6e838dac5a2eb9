package e2e

// The batch paths side by side (issue 23): xadd --batch by each path it can
// take, against redis-cli --pipe of the same XADD ... IDMP lines on the same
// Redis 8.6.3 server, in alternating rounds: the native chunk script, the
// native MULTI/EXEC fallback (a user without scripting rights), the
// emulated batch (--mode emulated) on 8.6.3, and the emulated batch on the
// server under test (Redis 7.0 in make bench) against its own redis-cli
// --pipe. Part of BenchmarkCLI's table; BenchmarkCLIBatch prints these rows
// alone. A benchmark, not a test: it asserts nothing about speed.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// batchPathSizes are the batches' lines (IDMPCTL_BENCH_BATCH_LINES, comma
// separated) and batchPathRounds the rounds of each
// (IDMPCTL_BENCH_BATCH_ROUNDS).
func batchPathSizes() ([]int, int) {
	sizes := []int{200_000, 1_000_000}
	if v := os.Getenv("IDMPCTL_BENCH_BATCH_LINES"); v != "" {
		sizes = nil
		for f := range strings.SplitSeq(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
				sizes = append(sizes, n)
			}
		}
	}
	rounds := 5
	if n, err := strconv.Atoi(os.Getenv("IDMPCTL_BENCH_BATCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	return sizes, rounds
}

// BenchmarkCLIBatch prints the batch paths' rows alone (see
// batchPathRows): go test -run '^$' -bench '^BenchmarkCLIBatch$' -benchtime 1x ./e2e
func BenchmarkCLIBatch(b *testing.B) {
	bin := releaseBuild(b)
	srv := redistest.NewWith(b, redistest.Options{})
	for b.Loop() {
		var rows []benchRow
		sizes, rounds := batchPathSizes()
		for _, n := range sizes {
			rows = append(rows, batchPathRows(b, bin, srv, n, rounds)...)
		}
		for i := range rows {
			rows[i].settle()
			b.ReportMetric(rows[i].ratio, rows[i].metric)
		}
		printTable(rows)
	}
}

// releaseBuild builds idmpctl as released (static, stripped), or takes
// IDMPCTL_BENCH_BIN (another build, for a before-and-after).
func releaseBuild(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("IDMPCTL_BENCH_BIN"); bin != "" {
		if abs, err := filepath.Abs(bin); err == nil {
			return abs
		}
		return bin
	}
	bin := filepath.Join(b.TempDir(), "idmpctl")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("release build: %v\n%s", err, out)
	}
	return bin
}

// batchPath is one way of sending the batch, timed on one server.
type batchPath struct {
	what   string
	srv    *redistest.Server
	cmd    string // a shell command line; $F the input file
	native bool   // the server is the 8.6.3 one
	rates  []float64
	cpu    []float64 // the server's CPU seconds a run
}

// batchPathRows times the paths over n lines, rounds times each, one after
// the other in every round (the server flushed before each run, untimed),
// and returns a row per path: the median lines/s, and the median of its
// ratios to the pipe of the same server in the same round.
func batchPathRows(b *testing.B, bin string, under *redistest.Server, n, rounds int) []benchRow {
	b.Helper()
	nativeBin := redistest.NativeBinary()
	if nativeBin == "" {
		b.Skip("no Redis 8.6.3 (scripts/install-redis.sh): the native batch paths need it")
	}
	srv86 := redistest.NewWith(b, redistest.Options{Binary: nativeBin})
	cli86 := filepath.Join(filepath.Dir(nativeBin), "redis-cli")
	if _, err := srv86.Do("ACL", "SETUSER", "noscripts", "on", ">pw", "~*", "&*", "+@all", "-@scripting"); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	file, idmpText, plainText := filepath.Join(dir, "batch.ndjson"), filepath.Join(dir, "idmp.txt"), filepath.Join(dir, "plain.txt")
	writeBatchInputs(b, n, file, idmpText, plainText)
	underNative := false
	if c, err := redistest.Dial(context.Background(), redisconn.ConnConfig{URL: under.URL, Timeout: 5 * time.Second}); err == nil {
		if caps, err := c.Capabilities(context.Background()); err == nil {
			underNative = caps.NativeIDMP
		}
		c.Close()
	}
	url86 := "redis://127.0.0.1:" + strconv.Itoa(srv86.Opts.Port) + "/0"
	urlUnder := "redis://127.0.0.1:" + strconv.Itoa(under.Opts.Port) + "/0"
	xadd := bin + " xadd s --pid p --batch " + file + " > results.txt"
	underPipe := "redis-cli -p " + strconv.Itoa(under.Opts.Port) + " --pipe < " + plainText + " > /dev/null"
	underAnchor := "plain `XADD` lines"
	if underNative {
		underPipe = strings.Replace(underPipe, plainText, idmpText, 1)
		underAnchor = "the same `XADD ... IDMP` lines"
	}
	pipe86 := &batchPath{what: "redis-cli --pipe", srv: srv86, native: true,
		cmd: cli86 + " -p " + strconv.Itoa(srv86.Opts.Port) + " --pipe < " + idmpText + " > /dev/null"}
	pipeUnder := &batchPath{what: "redis-cli --pipe (under test)", srv: under, cmd: underPipe}
	paths := []*batchPath{
		pipe86,
		{what: "native, chunk script", srv: srv86, native: true, cmd: "IDMPCTL_URL=" + url86 + " " + xadd},
		{what: "native, MULTI/EXEC (no scripting rights)", srv: srv86, native: true,
			cmd: "IDMPCTL_URL=redis://noscripts:pw@127.0.0.1:" + strconv.Itoa(srv86.Opts.Port) + "/0 " + xadd},
		{what: "emulated (`--mode emulated`)", srv: srv86, native: true, cmd: "IDMPCTL_URL=" + url86 + " " + xadd + " --mode emulated"},
		pipeUnder,
		{what: "emulated", srv: under, cmd: "IDMPCTL_URL=" + urlUnder + " " + xadd},
	}
	if underNative {
		paths[5].what = "native, chunk script"
	}
	for range rounds {
		for _, p := range paths {
			if _, err := p.srv.Do("FLUSHALL"); err != nil {
				b.Fatal(err)
			}
			cpu0 := serverCPU(b, p.srv)
			d := timeShell(b, dir, p.cmd)
			p.rates = append(p.rates, float64(n)/d.Seconds())
			p.cpu = append(p.cpu, serverCPU(b, p.srv)-cpu0)
		}
	}
	if _, err := srv86.Do("FLUSHALL"); err != nil {
		b.Fatal(err)
	}
	if _, err := under.Do("FLUSHALL"); err != nil {
		b.Fatal(err)
	}
	v86, vUnder := serverVersion(b, srv86), serverVersion(b, under)
	size := fmt.Sprintf("%dk", n/1000)
	if n >= 1_000_000 && n%1_000_000 == 0 {
		size = fmt.Sprintf("%dM", n/1_000_000)
	}
	var rows []benchRow
	for _, p := range paths {
		if p == pipe86 || p == pipeUnder {
			continue
		}
		anchor, ver, anchorWhat := pipe86, v86, "the same `XADD ... IDMP` lines"
		if !p.native {
			anchor, ver, anchorWhat = pipeUnder, vUnder, underAnchor
		}
		ratios := make([]float64, len(p.rates))
		for i := range p.rates {
			ratios[i] = p.rates[i] / anchor.rates[i]
		}
		row := benchRow{what: fmt.Sprintf("`xadd --batch` %s lines, %s, %s", size, p.what, ver),
			anchor: fmt.Sprintf("`redis-cli --pipe` of %s", anchorWhat), ours: medianF(p.rates), theirs: medianF(anchor.rates),
			unit: "adds/s", higherIsBetter: true, ratio: medianF(ratios), ratioSet: true,
			metric:  "batch-" + size + "-" + strings.NewReplacer(" ", "-", ",", "", "/", "-", "(", "", ")", "", "`", "").Replace(p.what) + "-x",
			comment: fmt.Sprintf("server CPU %.2f us a line (the pipe's %.2f)", medianF(p.cpu)/float64(n)*1e6, medianF(anchor.cpu)/float64(n)*1e6)}
		if p.what == "native, chunk script" && p.native {
			row.goal = 1.0
		} else {
			row.noGoal = true
		}
		rows = append(rows, row)
	}
	return rows
}

// writeBatchInputs writes n lines as xadd --batch takes them, and as XADD
// ... IDMP and plain XADD text lines for redis-cli --pipe.
func writeBatchInputs(b *testing.B, n int, file, idmpText, plainText string) {
	b.Helper()
	var ws []*bufio.Writer
	var fs []*os.File
	for _, name := range []string{file, idmpText, plainText} {
		f, err := os.Create(name)
		if err != nil {
			b.Fatal(err)
		}
		fs, ws = append(fs, f), append(ws, bufio.NewWriter(f))
	}
	for i := 1; i <= n; i++ {
		fmt.Fprintf(ws[0], "{\"iid\":\"order-%d\",\"fields\":{\"amount\":\"%d\",\"currency\":\"EUR\"}}\n", i, i)
		fmt.Fprintf(ws[1], "XADD s IDMP p order-%d * amount %d currency EUR\n", i, i)
		fmt.Fprintf(ws[2], "XADD s * amount %d currency EUR\n", i)
	}
	for i := range ws {
		if err := errorsJoin(ws[i].Flush(), fs[i].Close()); err != nil {
			b.Fatal(err)
		}
	}
}

// timeShell times one shell command line in dir.
func timeShell(b *testing.B, dir, line string) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", line)
	c.Dir = dir
	start := time.Now()
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", line, err, out)
	}
	return time.Since(start)
}

// serverCPU is the server's CPU seconds so far (user and system).
func serverCPU(b *testing.B, srv *redistest.Server) float64 {
	b.Helper()
	info, err := srv.Do("INFO", "cpu")
	if err != nil {
		b.Fatal(err)
	}
	m := redisconn.ParseInfo(info)
	u, _ := strconv.ParseFloat(m["used_cpu_user"], 64)
	s, _ := strconv.ParseFloat(m["used_cpu_sys"], 64)
	return u + s
}

// serverVersion is "Redis 8.6.3", or Valkey's.
func serverVersion(b *testing.B, srv *redistest.Server) string {
	b.Helper()
	info, err := srv.Do("INFO", "server")
	if err != nil {
		b.Fatal(err)
	}
	m := redisconn.ParseInfo(info)
	if v := m["valkey_version"]; v != "" {
		return "Valkey " + v
	}
	return "Redis " + m["redis_version"]
}
