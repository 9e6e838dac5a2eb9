package keyspace

import (
	"context"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/redistest"
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
// re-check script, UNLINK) on a local server over a unix socket. peak-heap-MB
// is the most heap the purge held (sampled): it stays flat with N.
func BenchmarkPurge(b *testing.B) {
	c, _ := redistest.Conn(b)
	n := benchKeyCount(b)
	var peak heapPeak
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		fillClaims(b, c.Client(), "bench:", n)
		peak.start()
		b.StartTimer()
		sum, err := Purge(context.Background(), c, PurgeOptions{Pattern: "bench:*", Statuses: []records.Status{records.Completed}}, nil)
		b.StopTimer()
		peak.stop()
		b.StartTimer()
		if err != nil {
			b.Fatal(err)
		}
		if sum.Deleted != int64(n) || sum.Changed != 0 {
			b.Fatalf("deleted %d of %d (%+v)", sum.Deleted, n, sum)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
	b.ReportMetric(peak.mb(), "peak-heap-MB")
}

// BenchmarkScanInspect scans and decodes N claim records (inspect --match).
func BenchmarkScanInspect(b *testing.B) {
	c, _ := redistest.Conn(b)
	n := benchKeyCount(b)
	fillClaims(b, c.Client(), "bench:", n)
	var peak heapPeak
	peak.start()
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
	b.StopTimer()
	peak.stop()
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
	b.ReportMetric(peak.mb(), "peak-heap-MB")
}

// heapPeak samples the Go heap (runtime/metrics: no stop-the-world) every
// 10ms between start and stop and keeps the largest.
type heapPeak struct {
	max  uint64
	done chan struct{}
	wg   sync.WaitGroup
}

func (h *heapPeak) start() {
	h.done = make(chan struct{})
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			h.max = max(h.max, s[0].Value.Uint64())
			select {
			case <-h.done:
				return
			case <-t.C:
			}
		}
	}()
}

func (h *heapPeak) stop() {
	close(h.done)
	h.wg.Wait()
}

func (h *heapPeak) mb() float64 { return float64(h.max) / (1 << 20) }
