package stream

import (
	"context"
	"slices"
	"strconv"
	"sync"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/redis/go-redis/v9"
)

// MigrateSelection is what migrate moves: the streams named, or those
// matching Match on every primary.
type MigrateSelection struct {
	Streams []string
	Match   string
}

// MigrateStreams checks XIDMPRECORD (78), lists the streams (sorted), then
// migrates each and hands each result to each. A scanned stream gone since
// is passed over; a named one is exit.NotFound.
func (s *Streams) MigrateStreams(ctx context.Context, sel MigrateSelection, dryRun bool, each func(MigrateResult) error) error {
	cctx, cancel := s.Conn.Ctx(ctx)
	err := s.CheckMigrate(cctx)
	cancel()
	if err != nil {
		return exit.Wrap(err, "migrate")
	}
	names := sel.Streams
	if sel.Match != "" {
		if names, err = s.scanStreams(ctx, sel.Match); err != nil {
			return exit.Wrap(err, "migrate --match "+strconv.Quote(sel.Match))
		}
	}
	for _, name := range names {
		mctx, cancel := s.Conn.Ctx(ctx)
		res, err := s.Migrate(mctx, name, dryRun)
		cancel()
		if sel.Match != "" && exit.Code(err) == exit.NotFound {
			continue // deleted since the scan
		}
		if err != nil {
			return exit.Wrap(err, "migrate "+strconv.Quote(name))
		}
		if err := each(res); err != nil {
			return err
		}
	}
	return nil
}

// scanStreams lists the streams matching pattern on every primary, sorted.
func (s *Streams) scanStreams(ctx context.Context, pattern string) ([]string, error) {
	var mu sync.Mutex
	var names []string
	err := s.Conn.EachPrimary(ctx, func(ctx context.Context, node redis.Cmdable, _ string) error {
		found, err := ScanStreams(ctx, node, pattern, s.Conn.Timeout)
		mu.Lock()
		names = append(names, found...)
		mu.Unlock()
		return err
	})
	slices.Sort(names)
	return slices.Compact(names), err
}
