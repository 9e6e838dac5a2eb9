package keyspace

import (
	"context"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// TestMeasureSample: the means of the keys sampled, and 66 when none
// matches.
func TestMeasureSample(t *testing.T) {
	t.Parallel()
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	c.Client().Set(ctx, "s:1", "12345678", 0)    // name 3 bytes, value 8
	c.Client().Set(ctx, "s:22", "1234567890", 0) // name 4, value 10
	m, err := MeasureSample(ctx, c, "s:*", 10)
	if err != nil {
		t.Fatal(err)
	}
	if m.Pattern != "s:*" || m.Keys != 2 || m.KeyBytes != 3.5 || m.ValueBytes != 9 || m.UsageBytes <= m.KeyBytes+m.ValueBytes {
		t.Errorf("measured %+v", m)
	}
	if _, err := MeasureSample(ctx, c, "nothing:*", 10); exit.Code(err) != exit.NotFound {
		t.Errorf("no match: %v", err)
	}
}
