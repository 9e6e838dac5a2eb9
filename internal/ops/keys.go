package ops

// inspect KEY... and inspect --match PATTERN: idempotency records of any
// format (internal/records), read without writing anything.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/redis/go-redis/v9"
)

// DefaultScanCount is the COUNT hint of every SCAN.
const DefaultScanCount = 1000

// InspectKeys reads the given keys, in order, in pipelined batches. A key
// that does not exist comes back as a record with Status ABSENT (Format
// none, TTLms -2). When every key is missing the records are returned
// together with a not-found error (exit 66), so a caller may print them and
// still exit 66; when some exist the error is nil.
func InspectKeys(ctx context.Context, c *Conn, keys []string) ([]records.Record, error) {
	out := make([]records.Record, 0, len(keys))
	for chunk := range slices.Chunk(keys, keyBatch) {
		reads, err := readKeys(ctx, c, chunk, readOptions{maxValue: InspectMaxValue, fullHashes: true})
		if err != nil {
			return nil, exit.Wrap(err, "inspect")
		}
		for _, rd := range reads {
			out = append(out, rd.rec)
		}
	}
	if len(keys) > 0 && !slices.ContainsFunc(out, func(r records.Record) bool { return r.Status != records.Absent }) {
		return out, exit.New(exit.NotFound, "inspect", "%s", missingKeys(keys))
	}
	return out, nil
}

func missingKeys(keys []string) string {
	const show = 3
	q := make([]string, 0, show)
	for _, k := range keys[:min(len(keys), show)] {
		q = append(q, quote(k))
	}
	msg := "no such key: " + strings.Join(q, ", ")
	if len(keys) > show {
		msg += fmt.Sprintf(" (and %d more)", len(keys)-show)
	}
	return msg
}

// ScanOptions selects the keys ScanKeys reports.
type ScanOptions struct {
	Pattern       string           // SCAN MATCH glob; "" is "*"
	Literal       bool             // match Pattern as a plain key name (GlobEscape)
	Statuses      []records.Status // report only these statuses; empty: all
	Limit         int64            // stop after this many reported; 0: no limit
	Count         int64            // SCAN COUNT hint; 0: DefaultScanCount
	MaxValueBytes int64            // read at most this much of a string; 0: ScanMaxValue
	// Progress, when set, is called after each batch with the number of keys
	// scanned so far (never concurrently).
	Progress func(scanned int64)
}

// Summary counts a scan. Matched counts reported records; ByStatus and
// ByFormat break Matched down.
type Summary struct {
	Scanned  int64                    `json:"scanned"`
	Matched  int64                    `json:"matched"`
	ByStatus map[records.Status]int64 `json:"by_status"`
	ByFormat map[records.Format]int64 `json:"by_format"`
	Limited  bool                     `json:"limited,omitempty"` // stopped at Limit; more keys may match
}

// ScanKeys walks the keyspace with SCAN MATCH (every primary of a cluster),
// reads and decodes each batch in pipelines, and calls emit for each record
// that passes the status filter, in SCAN order within a batch. Memory stays
// constant: only one batch per node is held at a time.
//
// In a cluster the primaries are scanned concurrently; emit and Progress are
// never called concurrently, but the order across nodes is unspecified (sort
// small outputs). SCAN may return a key twice while the keyspace is being
// rehashed, and keys that vanish between SCAN and the read are skipped.
// An error from emit stops the scan and is returned as is.
func ScanKeys(ctx context.Context, c *Conn, opts ScanOptions, emit func(records.Record) error) (Summary, error) {
	sum := Summary{ByStatus: map[records.Status]int64{}, ByFormat: map[records.Format]int64{}}
	want := recordStatusSet(opts.Statuses)
	var mu sync.Mutex
	var emitErr error
	err := scanNodes(ctx, c, scanMatch(opts.Pattern, opts.Literal), opts.Count, func(ctx context.Context, keys []string) error {
		reads, err := readKeys(ctx, c, keys, readOptions{maxValue: opts.MaxValueBytes})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		sum.Scanned += int64(len(keys))
		for _, rd := range reads {
			r := rd.rec
			if r.Format == records.FormatNone || (want != nil && !want[r.Status]) {
				continue
			}
			if opts.Limit > 0 && sum.Matched >= opts.Limit {
				sum.Limited = true
				return errStopScan
			}
			sum.Matched++
			sum.ByStatus[r.Status]++
			sum.ByFormat[r.Format]++
			if err := emit(r); err != nil {
				emitErr = err
				return errStopScan
			}
		}
		if opts.Progress != nil {
			opts.Progress(sum.Scanned)
		}
		if opts.Limit > 0 && sum.Matched >= opts.Limit {
			sum.Limited = true
			return errStopScan
		}
		return nil
	})
	if emitErr != nil {
		return sum, emitErr
	}
	return sum, exit.Wrap(err, "scan")
}

// errStopScan ends a scan early without an error.
var errStopScan = errors.New("stop scan")

// scanNodes runs batch on every batch of keys SCAN MATCH returns, on every
// primary of a cluster (concurrently: batch must be safe for that) or on the
// one server. A batch returning errStopScan ends every node's scan quietly.
func scanNodes(ctx context.Context, c *Conn, match string, count int64, batch func(ctx context.Context, keys []string) error) error {
	if count <= 0 {
		count = DefaultScanCount
	}
	var stopped atomic.Bool
	scanOne := func(ctx context.Context, node redis.Cmdable) error {
		var cursor uint64
		for !stopped.Load() {
			sctx, cancel := c.Ctx(ctx)
			keys, next, err := node.Scan(sctx, cursor, match, count).Result()
			cancel()
			if err != nil {
				stopped.Store(true)
				return err
			}
			if len(keys) > 0 {
				if err := batch(ctx, keys); err != nil {
					stopped.Store(true)
					if errors.Is(err, errStopScan) {
						return nil
					}
					return err
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
		return nil
	}
	if cc, ok := c.Client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return scanOne(ctx, node)
		})
	}
	return scanOne(ctx, c.Client)
}

// GlobEscape quotes the glob metacharacters of SCAN MATCH (* ? [ ] \) so
// that the pattern matches s literally.
func GlobEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ { // bytes: key names need not be UTF-8
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func scanMatch(pattern string, literal bool) string {
	switch {
	case literal:
		return GlobEscape(pattern)
	case pattern == "":
		return "*"
	}
	return pattern
}

func recordStatusSet(statuses []records.Status) map[records.Status]bool {
	if len(statuses) == 0 {
		return nil
	}
	set := make(map[records.Status]bool, len(statuses))
	for _, s := range statuses {
		set[s] = true
	}
	return set
}
