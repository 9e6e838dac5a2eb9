package keyspace

// inspect KEY... and inspect --match PATTERN: idempotency records of any
// format (internal/records), read without writing anything.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
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
func InspectKeys(ctx context.Context, c *redisconn.Conn, keys []string, decode records.DecodeOptions) ([]records.Record, error) {
	// The topology first: a cluster is read node by node.
	if _, err := c.Capabilities(ctx); err != nil {
		return nil, err
	}
	out := make([]records.Record, 0, len(keys))
	for chunk := range slices.Chunk(keys, keyBatch) {
		reads, err := readKeys(ctx, c, chunk, readOptions{maxValue: InspectMaxValue, fullHashes: true, decode: decode})
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
		q = append(q, strconv.Quote(k))
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
	Statuses      []records.Status // report only records of these statuses; empty: every key
	All           bool             // report idmpctl's emulated IDMP state keys too (hidden otherwise)
	Limit         int64            // stop after this many reported; 0: no limit
	Count         int64            // SCAN COUNT hint; 0: DefaultScanCount
	MaxValueBytes int64            // read at most this much of a string; 0: ScanMaxValue
	Decode        records.DecodeOptions
	// Progress, when set, is called after each batch with the number of keys
	// scanned so far (never concurrently).
	Progress func(scanned int64)
}

// Summary counts a scan. Matched counts the keys reported: records, streams
// and (with All) IDMP state keys. ByStatus counts the records among them by
// status (streams and state keys have none), ByFormat every reported key by
// format. StateHidden counts the IDMP state keys that matched but were not
// reported (All not set).
type Summary struct {
	Scanned     int64                    `json:"scanned"`
	Matched     int64                    `json:"matched"`
	ByStatus    map[records.Status]int64 `json:"by_status"`
	ByFormat    map[records.Format]int64 `json:"by_format"`
	StateHidden int64                    `json:"idmp_state_hidden,omitempty"`
	Limited     bool                     `json:"limited,omitempty"` // stopped at Limit; more keys may match
}

// ScanKeys walks the keyspace with SCAN MATCH (every primary of a cluster),
// reads and decodes each batch in pipelines, and calls emit for each record
// that passes the status filter, in SCAN order. Memory stays constant: a
// node's next few batches (scanAhead) are read while emit sees this one, and
// no more are held.
//
// In a cluster the primaries are scanned concurrently; emit and Progress are
// never called concurrently, but the order across nodes is unspecified (sort
// small outputs). SCAN may return a key twice while the keyspace is being
// rehashed (repeats within a few batches are dropped), and keys that vanish
// between SCAN and the read are skipped.
// An error from emit stops the scan and is returned as is.
func ScanKeys(ctx context.Context, c *redisconn.Conn, opts ScanOptions, emit func(records.Record) error) (Summary, error) {
	// The topology first: a cluster is read node by node.
	if _, err := c.Capabilities(ctx); err != nil {
		return Summary{}, err
	}
	sum := Summary{ByStatus: map[records.Status]int64{}, ByFormat: map[records.Format]int64{}}
	want := recordStatusSet(opts.Statuses)
	var mu sync.Mutex
	var emitErr error
	ro := readOptions{maxValue: opts.MaxValueBytes, decode: opts.Decode}
	err := scanNodes(ctx, c, scanMatch(opts.Pattern, opts.Literal), opts.Count, ro, func(ctx context.Context, keys []string, reads []keyRead) error {
		mu.Lock()
		defer mu.Unlock()
		sum.Scanned += int64(len(keys))
		for _, rd := range reads {
			r := rd.rec
			if r.Format == records.FormatNone || (want != nil && (!r.IsRecord() || !want[r.Status])) {
				continue
			}
			// Healthy state is hidden; orphaned state is an operator's to see.
			if r.Format == records.FormatIDMPState && !opts.All && !r.HasFlag(records.FlagOrphanState) {
				sum.StateHidden++
				continue
			}
			if opts.Limit > 0 && sum.Matched >= opts.Limit {
				sum.Limited = true
				return errStopScan
			}
			sum.Matched++
			if r.IsRecord() {
				sum.ByStatus[r.Status]++
			}
			sum.ByFormat[r.Format]++
			if err := emit(r); err != nil {
				emitErr = err
				return errStopScan
			}
			// Cancelled while emitting (an interrupt): stop here, even in a
			// batch whose keys were all read already.
			if err := ctx.Err(); err != nil {
				return err
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

const (
	// scanReaders is how many batches of a node are read at once: while one
	// reader waits for the server, another parses and decodes, so the
	// server is kept busy.
	scanReaders = 2
	// scanAhead is how many batches of a node may wait, read or being read,
	// for the caller to handle them, in SCAN order. Memory stays bounded by
	// it (and by scanReaders).
	scanAhead = 3
	// scanWindowBatches is how many jobs back a job may still be unhandled
	// when SCAN makes a new one: those waiting in order (scanAhead), the one
	// handled, and the new one.
	scanWindowBatches = scanAhead + 2
	// readBatch is how many keys one job reads (a SCAN reply is split):
	// small enough that a key's data is still in the server's CPU caches
	// from one round to the next (SCAN, probe, value read, purge's
	// re-check), which saves more server time than the extra round trips
	// cost. SCAN itself keeps its COUNT, which selective patterns need.
	readBatch = 250
)

// scanJob is up to readBatch keys of one SCAN reply, read by a reader (done
// closed) for the caller.
type scanJob struct {
	keys  []string
	reads []keyRead
	err   error
	done  chan struct{}
}

// scanWindow drops the keys SCAN returns again within the last
// scanWindowBatches jobs (and the job being made). SCAN may return a key
// twice while the keyspace is rehashed (as a purge shrinks it), and with the
// reads running ahead, the second read of a key may come before the first
// was handled: a purge would then re-check the key, which it deleted
// meanwhile, against a read from before its deletion. A repeat from further
// back is read after its first was handled, as without read-ahead. The
// window counts jobs, not SCAN replies: a run of empty replies (a selective
// pattern) must not shrink it.
type scanWindow struct {
	seen    map[string]struct{}
	batches [scanWindowBatches][]string // ring of the last jobs' keys
	next    int
}

// filter returns keys without those of the window (nor repeats among
// keys), in place, and makes them the newest job of the window when any.
func (w *scanWindow) filter(keys []string) []string {
	if w.seen == nil {
		w.seen = make(map[string]struct{}, len(keys)*scanWindowBatches)
	}
	out := keys[:0]
	for _, k := range keys {
		if _, dup := w.seen[k]; !dup {
			w.seen[k] = struct{}{}
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return out
	}
	for _, k := range w.batches[w.next] { // none is in out: they were seen
		delete(w.seen, k)
	}
	w.batches[w.next] = out
	w.next = (w.next + 1) % len(w.batches)
	return out
}

// scanNodes runs handle on every batch of keys SCAN MATCH returns, read with
// ro, on every primary of a cluster (concurrently: handle must be safe for
// that) or on the one server. On each node, SCAN and scanReaders readers run
// ahead of handle (at most scanAhead batches), which sees the batches in
// SCAN order, one at a time. A handle returning errStopScan ends every
// node's scan quietly; scanNodes returns only once every goroutine it
// started has stopped.
func scanNodes(ctx context.Context, c *redisconn.Conn, match string, count int64, ro readOptions,
	handle func(ctx context.Context, keys []string, reads []keyRead) error) error {
	if count <= 0 {
		count = DefaultScanCount
	}
	var stopped atomic.Bool
	scanOne := func(ctx context.Context, node redis.Cmdable) error {
		ctx, cancel := context.WithCancel(ctx)
		jobs := make(chan *scanJob)             // to the readers
		order := make(chan *scanJob, scanAhead) // to handle, in SCAN order
		free := make(chan []keyRead, scanAhead+scanReaders+1)
		var wg sync.WaitGroup
		wg.Add(1 + scanReaders)
		go func() { // SCAN
			defer wg.Done()
			defer close(order)
			defer close(jobs)
			var window scanWindow
			var cursor uint64
			for !stopped.Load() {
				sctx, cancelScan := c.Ctx(ctx)
				keys, next, err := node.Scan(sctx, cursor, match, count).Result()
				cancelScan()
				if err != nil {
					job := &scanJob{err: err, done: make(chan struct{})}
					close(job.done)
					select {
					case order <- job:
					case <-ctx.Done():
					}
					return
				}
				for part := range slices.Chunk(keys, readBatch) {
					if part = window.filter(part); len(part) == 0 {
						continue
					}
					job := &scanJob{keys: part, done: make(chan struct{})}
					select {
					case order <- job:
					case <-ctx.Done():
						return
					}
					select {
					case jobs <- job:
					case <-ctx.Done():
						close(job.done) // the caller is gone: nobody reads it
						return
					}
				}
				if next == 0 {
					return
				}
				cursor = next
			}
		}()
		for range scanReaders {
			go func() {
				defer wg.Done()
				rdr := newKeyReader(c, ro)
				for job := range jobs {
					var buf []keyRead
					select {
					case buf = <-free:
					default:
					}
					job.reads, job.err = rdr.read(ctx, job.keys, buf)
					close(job.done)
				}
			}()
		}
		defer func() {
			cancel()
			for range order { // let SCAN finish
			}
			wg.Wait()
		}()
		for job := range order {
			select {
			case <-job.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if stopped.Load() {
				return nil // another node failed or hit the limit
			}
			err := job.err
			if err == nil {
				err = handle(ctx, job.keys, job.reads)
				clear(job.reads) // handle copied what it keeps
				select {
				case free <- job.reads:
				default:
				}
			}
			if err != nil {
				stopped.Store(true)
				if errors.Is(err, errStopScan) {
					return nil
				}
				return err
			}
		}
		// SCAN ends its queue at the end of the keyspace, and also when
		// the caller cancelled: that is no complete scan.
		return ctx.Err()
	}
	return c.EachPrimary(ctx, func(ctx context.Context, node redis.Cmdable, _ string) error { return scanOne(ctx, node) })
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
