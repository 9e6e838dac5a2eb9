package claim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The claim cycle (acquire + complete: two scripts) against the naive
// SET NX + SET on the same server. cycles/s is the metric to compare: the
// ratio is the price of leases, fencing and records. Every iteration runs a
// round of benchRound cycles, so that `make bench-speed` (-benchtime 1x) measures
// thousands of cycles, not one.
//
// ClaimCycle is acquire, then complete: 2 round trips (the work happens in
// between). BenchmarkClaimVsBaseline reports its ratio to the baseline from
// interleaved rounds on one server.

const benchRound = 1000 // cycles per benchmark iteration

func BenchmarkClaimCycle(b *testing.B) {
	ctx, c := benchClient(b)
	var n int
	for b.Loop() {
		if err := claimRound(ctx, c, &n); err != nil {
			b.Fatal(err)
		}
	}
	reportCycles(b, benchRound)
}

// BenchmarkSetNXBaseline pipelines both SETs of a key in one round trip.
func BenchmarkSetNXBaseline(b *testing.B) {
	ctx, c := benchClient(b)
	var n int
	for b.Loop() {
		if err := baselineRound(ctx, c, &n); err != nil {
			b.Fatal(err)
		}
	}
	reportCycles(b, benchRound)
}

// BenchmarkSetNXBaselineTwoTrips is the naive pattern as used: the work
// happens between the claim and the outcome, so two round trips.
func BenchmarkSetNXBaselineTwoTrips(b *testing.B) {
	ctx, c := benchClient(b)
	var n int
	for b.Loop() {
		for range benchRound {
			key := benchKey(&n)
			if err := c.Client().SetNX(ctx, key, "PROCESSING", time.Hour).Err(); err != nil {
				b.Fatal(err)
			}
			if err := c.Client().Set(ctx, key, "COMPLETED", 24*time.Hour).Err(); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportCycles(b, benchRound)
}

// The parallel pair measures server capacity rather than latency.

func BenchmarkClaimCycleParallel(b *testing.B) {
	ctx, c := benchClient(b)
	var n atomic.Int64
	result := "ok"
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for range benchRound {
				if err := claimCycle(ctx, c, "bench:"+strconv.FormatInt(n.Add(1), 10), &result); err != nil {
					b.Error(err) // not Fatal: this is not the benchmark's goroutine
					return
				}
			}
		}
	})
	reportCycles(b, benchRound)
}

func BenchmarkSetNXBaselineParallel(b *testing.B) {
	ctx, c := benchClient(b)
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for range benchRound {
				key := "bench:" + strconv.FormatInt(n.Add(1), 10)
				if err := setNXPipelined(ctx, c, key); err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
	reportCycles(b, benchRound)
}

// BenchmarkClaimVsBaseline alternates rounds of each claim shape and of its
// baseline on one server (so that drift and noise from other processes hit
// both alike) and reports both rates and claim-cycles/s over baseline's as
// x-baseline.
func BenchmarkClaimVsBaseline(b *testing.B) {
	for _, shape := range []struct {
		name            string
		claim, baseline func(context.Context, *redisconn.Conn, *int) error
	}{
		{"single", claimRound, baselineRound}, // 2 trips a cycle against 1
	} {
		b.Run(shape.name, func(b *testing.B) {
			ctx, c := benchClient(b)
			var n int
			var claimTime, baseTime time.Duration
			var claimCPU, baseCPU float64
			rounds := 0
			for b.Loop() {
				for range 3 {
					cpu0 := benchServerCPU(b, ctx, c)
					start := time.Now()
					if err := shape.baseline(ctx, c, &n); err != nil {
						b.Fatal(err)
					}
					mid := time.Now()
					cpu1 := benchServerCPU(b, ctx, c)
					mid2 := time.Now()
					if err := shape.claim(ctx, c, &n); err != nil {
						b.Fatal(err)
					}
					baseTime += mid.Sub(start)
					claimTime += time.Since(mid2)
					claimCPU += benchServerCPU(b, ctx, c) - cpu1
					baseCPU += cpu1 - cpu0
					rounds++
				}
			}
			cycles := float64(rounds * benchRound)
			claimRate, baseRate := cycles/claimTime.Seconds(), cycles/baseTime.Seconds()
			b.ReportMetric(claimRate, "claim-cycles/s")
			b.ReportMetric(baseRate, "baseline-cycles/s")
			b.ReportMetric(claimRate/baseRate, "x-baseline")
			// What the server spent a cycle (INFO cpu), which bounds the
			// batch shape and explains the others.
			b.ReportMetric(claimCPU/cycles*1e6, "claim-server-µs/cycle")
			b.ReportMetric(baseCPU/cycles*1e6, "baseline-server-µs/cycle")
		})
	}
}

// benchServerCPU is the server's CPU seconds so far (INFO cpu, user + sys).
func benchServerCPU(b *testing.B, ctx context.Context, c *redisconn.Conn) float64 {
	info, err := c.Client().Info(ctx, "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO cpu %s: %v", line, err)
			}
			total += f
		}
	}
	return total
}

func benchClient(b *testing.B) (context.Context, *redisconn.Conn) {
	b.Helper()
	c, _ := redistest.Conn(b)
	ctx := context.Background()
	// Load the scripts so the first iteration measures EVALSHA, not EVAL.
	result := "ok"
	if err := claimCycle(ctx, c, "bench:warm", &result); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	return ctx, c
}

func benchKey(n *int) string {
	*n++
	return "bench:" + strconv.Itoa(*n)
}

func claimCycle(ctx context.Context, c *redisconn.Conn, key string, result *string) error {
	res, err := Acquire(ctx, c, AcquireParams{Key: key, Owner: "bench", Lease: time.Minute, TTL: time.Hour})
	if err != nil {
		return err
	}
	if res.Outcome != Acquired {
		return fmt.Errorf("acquire %s: %s", key, res.Outcome)
	}
	_, err = Complete(ctx, c, key, res.Token, result, 24*time.Hour, DefaultMaxResult)
	return err
}

// claimRound: acquire, then complete, one key at a time.
func claimRound(ctx context.Context, c *redisconn.Conn, n *int) error {
	result := "ok"
	for range benchRound {
		if err := claimCycle(ctx, c, benchKey(n), &result); err != nil {
			return err
		}
	}
	return nil
}

// claimPipelinedRound: a worker loop, one round trip a message: complete the
// previous one and claim the next together.
func setNXPipelined(ctx context.Context, c *redisconn.Conn, key string) error {
	_, err := c.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
		p.SetNX(ctx, key, "PROCESSING", time.Hour)
		p.Set(ctx, key, "COMPLETED", 24*time.Hour)
		return nil
	})
	return err
}

// baselineRound: SET NX and SET of a key pipelined, one key a round trip.
func baselineRound(ctx context.Context, c *redisconn.Conn, n *int) error {
	for range benchRound {
		if err := setNXPipelined(ctx, c, benchKey(n)); err != nil {
			return err
		}
	}
	return nil
}

func reportCycles(b *testing.B, perIteration int) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N*perIteration)/s, "cycles/s")
	}
}
