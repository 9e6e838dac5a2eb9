package ops

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/idmpctl/idmpctl/internal/records"
)

// benchKeyCount is how many records the purge and scan benchmarks fill:
// 100,000, or IDMPCTL_BENCH_KEYS (e.g. 1000000).
func benchKeyCount(b *testing.B) int {
	if s := os.Getenv("IDMPCTL_BENCH_KEYS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("IDMPCTL_BENCH_KEYS=%q: want a positive integer", s)
		}
		return n
	}
	return 100_000
}

// BenchmarkPurge fills N claim records, then purges them all (SCAN, decode,
// re-check script, UNLINK) on a local server over a unix socket.
func BenchmarkPurge(b *testing.B) {
	c, _ := testConn(b)
	n := benchKeyCount(b)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		fillClaims(b, c.Client, "bench:", n)
		b.StartTimer()
		sum, err := Purge(context.Background(), c, PurgeOptions{Pattern: "bench:*", Statuses: []records.Status{records.Completed}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if sum.Deleted != int64(n) {
			b.Fatalf("deleted %d of %d", sum.Deleted, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}

// BenchmarkScanInspect scans and decodes N claim records (inspect --match).
func BenchmarkScanInspect(b *testing.B) {
	c, _ := testConn(b)
	n := benchKeyCount(b)
	fillClaims(b, c.Client, "bench:", n)
	b.ResetTimer()
	for range b.N {
		sum, err := ScanKeys(context.Background(), c, ScanOptions{Pattern: "bench:*"}, func(records.Record) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		if sum.ByStatus[records.Completed] != int64(n) {
			b.Fatalf("scanned %+v", sum)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}
