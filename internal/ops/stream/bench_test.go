package stream

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// uuidLike is a 36-byte iid, the common shape of idempotency keys.
func uuidLike(i int) string {
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", i, i%65536, 0x4000|i%4096, 0x8000|i%16384, i*7919)
}

// bytesPerIID fills one pid with n 36-byte iids and returns MEMORY USAGE of
// the pid's two keys divided by n.
func bytesPerIID(tb testing.TB, s *Streams, stream string, n int) float64 {
	tb.Helper()
	ctx := context.Background()
	if _, err := s.add1(ctx, AddRequest{Stream: stream, PID: "p", IID: "init", Fields: []string{"f", "v"}}); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.CfgSet(ctx, stream, 3600, int64(n)); err != nil {
		tb.Fatal(err)
	}
	batch := make([]AddRequest, 0, 256)
	for i := 0; i < n; i++ {
		batch = append(batch, AddRequest{Stream: stream, PID: "p", IID: uuidLike(i), Fields: []string{"f", "v"}})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.AddBatch(ctx, batch); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	l, _ := idmp.StateKeys(stream, false)
	var total int64
	for _, k := range []string{l.IDs("p"), l.Order("p")} {
		v, err := s.Conn.Client().MemoryUsage(ctx, k, 0).Result()
		if err != nil {
			tb.Fatal(err)
		}
		total += v
	}
	if got := s.Conn.Client().HLen(ctx, l.IDs("p")).Val(); got != int64(n) {
		tb.Fatalf("%d iids tracked, want %d", got, n)
	}
	return float64(total) / float64(n)
}

// BenchmarkEmulatedMemoryPerIID: bytes of emulated state per tracked 36-byte
// iid (10,000 in one pid). Run with -benchtime=1x.
func BenchmarkEmulatedMemoryPerIID(b *testing.B) {
	conn, _ := redistest.Conn(b)
	s, _ := NewStreams(conn, ModeEmulated)
	var per float64
	for i := 0; i < b.N; i++ {
		per = bytesPerIID(b, s, fmt.Sprint("mem-", i), 10000)
	}
	b.ReportMetric(per, "bytes/iid")
}

// TestEmulatedBytesPerIID keeps EmulatedBytesPerIID honest (within 30%).
func TestEmulatedBytesPerIID(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	s, _ := NewStreams(conn, ModeEmulated)
	per := bytesPerIID(t, s, "mem", 5000)
	if math.Abs(per-EmulatedBytesPerIID)/EmulatedBytesPerIID > 0.30 {
		t.Fatalf("measured %.1f bytes/iid, EmulatedBytesPerIID is %d: update it", per, EmulatedBytesPerIID)
	}
	t.Logf("%.1f bytes/iid (constant %d)", per, EmulatedBytesPerIID)
}

// benchMessages is the workload of both throughput benchmarks: 10,000
// messages of 2 fields, sent in chunks of 256.
const benchMessages, benchChunk = 10000, 256

func benchFields(i int) []string {
	return []string{"order", fmt.Sprint("order-", i), "amount", fmt.Sprint(i % 997)}
}

// BenchmarkEmulatedBatch: emulated idempotent adds, one script call per chunk.
func BenchmarkEmulatedBatch(b *testing.B) {
	conn, _ := redistest.Conn(b)
	s, _ := NewStreams(conn, ModeEmulated)
	ctx := context.Background()
	start := time.Now()
	for n := 0; n < b.N; n++ {
		stream := fmt.Sprint("bench-emu-", n)
		batch := make([]AddRequest, 0, benchChunk)
		for i := 0; i < benchMessages; i++ {
			batch = append(batch, AddRequest{Stream: stream, PID: "p", IID: uuidLike(i), Fields: benchFields(i)})
			if len(batch) == benchChunk || i == benchMessages-1 {
				if _, err := s.AddBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	b.ReportMetric(float64(b.N*benchMessages)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkPipelinedXAdd: the same messages as plain XADDs, pipelined per chunk.
func BenchmarkPipelinedXAdd(b *testing.B) {
	conn, _ := redistest.Conn(b)
	ctx := context.Background()
	start := time.Now()
	for n := 0; n < b.N; n++ {
		stream := fmt.Sprint("bench-plain-", n)
		for i := 0; i < benchMessages; i += benchChunk {
			_, err := conn.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
				for j := i; j < min(i+benchChunk, benchMessages); j++ {
					p.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: benchFields(j)})
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*benchMessages)/time.Since(start).Seconds(), "msgs/s")
}
