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

// InspectKeys reads the given keys, in order, in pipelined batches; a
// missing key is a record of Status ABSENT. When every key is missing the
// records come with a not-found error (exit 66), to print and still exit 66.
func InspectKeys(ctx context.Context, c *redisconn.Conn, keys []string, decode records.DecodeOptions) ([]records.Record, error) {
	// The topology first: a cluster is read node by node.
	if _, err := c.Capabilities(ctx); err != nil {
		return nil, err
	}
	out := make([]records.Record, 0, len(keys))
	for chunk := range slices.Chunk(keys, keyBatch) {
		reads, err := newKeyReader(c, readOptions{maxValue: InspectMaxValue, fullHashes: true, decode: decode}).read(ctx, chunk, nil, 1)
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
	Pattern  string           // SCAN MATCH glob; "" is "*"
	Literal  bool             // match Pattern as a plain key name (GlobEscape)
	Statuses []records.Status // report only records of these statuses; empty: every key
	All      bool             // report idmpctl's emulated IDMP state keys too (hidden otherwise)
	Limit    int64            // stop after this many reported; 0: no limit
	Count    int64            // SCAN COUNT hint; 0: DefaultScanCount
	Decode   records.DecodeOptions
	Progress func(scanned int64) // after each batch, never concurrently
}

// Summary counts a scan. Matched counts the keys reported (records, streams,
// with All IDMP state keys); ByStatus the records among them; StateHidden
// the IDMP state keys not reported (All not set).
type Summary struct {
	Scanned     int64                    `json:"scanned"`
	Matched     int64                    `json:"matched"`
	ByStatus    map[records.Status]int64 `json:"by_status"`
	ByFormat    map[records.Format]int64 `json:"by_format"`
	StateHidden int64                    `json:"idmp_state_hidden,omitempty"`
	Limited     bool                     `json:"limited,omitempty"` // stopped at Limit; more keys may match
}

// ScanKeys walks the keyspace with SCAN MATCH (every primary of a cluster,
// concurrently: the order across nodes is unspecified), reads and decodes
// each batch, and calls emit (never concurrently) for each record that
// passes the status filter. Memory stays constant (scanNodes). Keys that
// vanish before the read are skipped; emit's error stops it, returned as is.
func ScanKeys(ctx context.Context, c *redisconn.Conn, opts ScanOptions, emit func(records.Record) error) (Summary, error) {
	// The topology first: a cluster is read node by node.
	if _, err := c.Capabilities(ctx); err != nil {
		return Summary{}, err
	}
	sum := Summary{ByStatus: map[records.Status]int64{}, ByFormat: map[records.Format]int64{}}
	want := recordStatusSet(opts.Statuses)
	var mu sync.Mutex
	var emitErr error
	ro := readOptions{decode: opts.Decode} // strings read up to ScanMaxValue
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
	// scanReaders batches of a node are read at once: while one waits for
	// the server, another decodes.
	scanReaders = 2
	// scanAhead batches of a node may wait, read or being read, for the
	// caller: what bounds memory.
	scanAhead = 3
	// scanWindowBatches jobs back a job may still be unhandled when SCAN
	// makes a new one: those waiting (scanAhead), the one handled, the new.
	scanWindowBatches = scanAhead + 2
	// readBatch keys a job reads (a SCAN reply is split): few enough that a
	// key's data stays in the server's CPU caches from SCAN to probe to value
	// read to re-check, which saves more than the extra round trips cost.
	// SCAN keeps its COUNT, which selective patterns need.
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
// scanWindowBatches jobs. SCAN repeats keys while the keyspace is rehashed
// (as a purge shrinks it), and with read-ahead the second read could come
// before the first was handled: purge would re-check a key it deleted
// against a read from before. Older repeats are read after, as without
// read-ahead. It counts jobs, not replies: empty replies must not shrink it.
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

// scanNodes runs handle on every batch SCAN MATCH returns, read with ro, on
// every primary (concurrently: handle must be safe for that). On each node,
// SCAN and scanReaders run at most scanAhead batches ahead of handle, which
// sees them in SCAN order, one at a time. errStopScan from handle ends every
// node's scan quietly; it returns once every goroutine it started stopped.
func scanNodes(ctx context.Context, c *redisconn.Conn, match string, count int64, ro readOptions,
	handle func(ctx context.Context, keys []string, reads []keyRead) error) error {
	if count <= 0 {
		count = DefaultScanCount
	}
	var stopped atomic.Bool
	return c.EachPrimary(ctx, func(ctx context.Context, node redis.Cmdable, _ string) error {
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
					job.reads, job.err = rdr.read(ctx, job.keys, buf, 1)
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
		// SCAN also ends its queue when the caller cancelled: no complete scan.
		return ctx.Err()
	})
}

// GlobEscape quotes the glob metacharacters of SCAN MATCH (* ? [ ] \) so
// that the pattern matches s literally (byte by byte: key names need not be
// UTF-8).
func GlobEscape(s string) string { return globMeta.Replace(s) }

var globMeta = strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`, `\`, `\\`)

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
