package ops

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The claim cycle (acquire + complete, two scripts, two round trips) against
// the naive SET NX + SET on the same server. cycles/s is the metric to
// compare: the ratio is the price of leases, fencing and records.

func BenchmarkClaimCycle(b *testing.B) {
	ctx, c := benchClient(b)
	result := "ok"
	for i := 0; b.Loop(); i++ {
		if err := claimCycle(ctx, c, "bench:"+strconv.Itoa(i), &result); err != nil {
			b.Fatal(err)
		}
	}
	reportCycles(b)
}

// BenchmarkSetNXBaseline pipelines both SETs in one round trip.
func BenchmarkSetNXBaseline(b *testing.B) {
	ctx, c := benchClient(b)
	for i := 0; b.Loop(); i++ {
		key := "bench:" + strconv.Itoa(i)
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.SetNX(ctx, key, "PROCESSING", time.Hour)
			p.Set(ctx, key, "COMPLETED", 24*time.Hour)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	reportCycles(b)
}

// BenchmarkSetNXBaselineTwoTrips is the naive pattern as used: the work
// happens between the claim and the outcome, so two round trips.
func BenchmarkSetNXBaselineTwoTrips(b *testing.B) {
	ctx, c := benchClient(b)
	for i := 0; b.Loop(); i++ {
		key := "bench:" + strconv.Itoa(i)
		if err := c.SetNX(ctx, key, "PROCESSING", time.Hour).Err(); err != nil {
			b.Fatal(err)
		}
		if err := c.Set(ctx, key, "COMPLETED", 24*time.Hour).Err(); err != nil {
			b.Fatal(err)
		}
	}
	reportCycles(b)
}

// The parallel pair measures server capacity rather than latency.

func BenchmarkClaimCycleParallel(b *testing.B) {
	ctx, c := benchClient(b)
	var n atomic.Int64
	result := "ok"
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := claimCycle(ctx, c, "bench:"+strconv.FormatInt(n.Add(1), 10), &result); err != nil {
				b.Error(err) // not Fatal: this is not the benchmark's goroutine
				return
			}
		}
	})
	reportCycles(b)
}

func BenchmarkSetNXBaselineParallel(b *testing.B) {
	ctx, c := benchClient(b)
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := "bench:" + strconv.FormatInt(n.Add(1), 10)
			_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.SetNX(ctx, key, "PROCESSING", time.Hour)
				p.Set(ctx, key, "COMPLETED", 24*time.Hour)
				return nil
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportCycles(b)
}

func benchClient(b *testing.B) (context.Context, redis.UniversalClient) {
	b.Helper()
	c, _ := testConn(b)
	ctx := context.Background()
	// Load the scripts so the first iteration measures EVALSHA, not EVAL.
	result := "ok"
	if err := claimCycle(ctx, c.Client, "bench:warm", &result); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	return ctx, c.Client
}

func claimCycle(ctx context.Context, c redis.UniversalClient, key string, result *string) error {
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

func reportCycles(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "cycles/s")
	}
}
