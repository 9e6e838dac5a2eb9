package keyspace

import (
	"context"

	"github.com/idmpctl/idmpctl/internal/backup"
)

// Restore is RestoreUnless with no record held to missing keys only.
func (r *Restorer) Restore(ctx context.Context, recs []backup.Record) ([]RestoreOutcome, error) {
	return r.RestoreUnless(ctx, recs, nil)
}
