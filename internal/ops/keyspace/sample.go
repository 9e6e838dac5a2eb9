package keyspace

import (
	"context"

	"github.com/idmpctl/idmpctl/internal/capacity"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// MeasureSample is calc-ttl --sample: the mean sizes of up to n keys
// matching pattern (of each primary). No key matching is exit.NotFound.
func MeasureSample(ctx context.Context, c *redisconn.Conn, pattern string, n int) (*capacity.MeasuredKeys, error) {
	keys, err := SampleKeys(ctx, c, pattern, false, n)
	if err != nil {
		return nil, exit.Wrap(err, "calc-ttl --sample")
	}
	sizes, err := MeasureKeys(ctx, c, keys, true)
	if err != nil {
		return nil, exit.Wrap(err, "calc-ttl --sample")
	}
	if len(sizes) == 0 {
		return nil, exit.New(exit.NotFound, "calc-ttl --sample", "no key matches %q", pattern)
	}
	m := &capacity.MeasuredKeys{Pattern: pattern, Keys: len(sizes)}
	for _, s := range sizes {
		m.KeyBytes += float64(s.KeyBytes)
		m.ValueBytes += float64(s.ValueBytes)
		m.UsageBytes += float64(s.UsageBytes)
	}
	n64 := float64(len(sizes))
	m.KeyBytes, m.ValueBytes, m.UsageBytes = m.KeyBytes/n64, m.ValueBytes/n64, m.UsageBytes/n64
	return m, nil
}
