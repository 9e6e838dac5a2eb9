package stream

// Exactly-once batches (xadd --batch). Each chunk's script moves the
// batch's progress record (idmp.StateLayout.Batch) compare-and-set, in the
// same atomic step as its adds, so the record is the truth about what was
// written: after an error or a crash, a run (or a new run of the same
// stream, pid and batch ID, once the committed lines' digest matches) goes
// on exactly after the last committed line, however small IDMP-MAXSIZE is.

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/batch"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

// Batch defaults.
const (
	// DefaultProgressTTL bounds a record's life after its last chunk:
	// resumable after a weekend, yet abandoned batches leave nothing for good.
	DefaultProgressTTL = 7 * 24 * time.Hour
	// MinProgressTTL: a record that went between chunks would have the
	// rest of the batch, or a rerun, add every line again.
	MinProgressTTL = time.Minute
	// batchChunk is the adds of one emulated script call (the script runs
	// atomically: it must not block the server for long).
	batchChunk = 1000
	// batchWindow is how many chunks one send carries.
	batchWindow = 4
	// pipeDepth is the sends on the wire at once, so the server never waits
	// for a slowed client (Redis 8.6.3, 1,000,000 native lines, shared 2
	// CPUs: 2 kept it busy ~85%, below redis-cli --pipe; 4, above it).
	pipeDepth = 4
)

// BatchSpec says what to send and how.
type BatchSpec struct {
	// Template is every add's stream and options; each line gives its iid
	// and fields, and may give its own PID.
	Template AddRequest
	ID       string // the batch's identity (with the stream and Template.PID)
	// Resume says a progress record must exist (xadd --resume).
	Resume bool
	// SkipSet starts after line Skip whatever the record says (xadd --skip);
	// otherwise a run starts where the record says.
	SkipSet bool
	Skip    int64
	TTL     time.Duration // of the progress record; 0: DefaultProgressTTL
	Retries int           // after network errors
	// OnRetry hears of each retry, and (attempt 0) of a moving slot's first
	// reply, after which the batch waits while Conn.Timeout allows.
	OnRetry func(attempt int, err error)
	// Delivered, when set, runs after each committed chunk's results were
	// emitted (xadd flushes there, so a reader sees each committed line).
	Delivered func() error
	// Chunk and Window override batchChunk and batchWindow (tests).
	Chunk, Window int
	// Durability makes every round trip wait for the replicas: a line's
	// result is emitted only once its write was acknowledged.
	Durability redisconn.Durability
	// Stop, once closed (xadd's first SIGINT), sends no further chunk: the
	// replies of those sent are read and their results emitted, for at
	// most Conn.Timeout, then the run ends with the interrupted error.
	Stop <-chan struct{}
}

// BatchInput is a batch's input: Next yields each line's number (from 1)
// and bytes (valid until the next call), io.EOF at the end; Parse fills the
// zeroed req (false: a blank line); skipped lines are digested, never
// parsed. Ready: Next would not wait, so a slow producer's lines go at once.
type BatchInput interface {
	Next() (n int64, raw []byte, err error)
	Parse(n int64, raw []byte, req *AddRequest) (bool, error)
	Ready() bool
}

// BatchResult is one line's add.
type BatchResult struct {
	Line int64
	PID  string // the producer it was added under (a line may name its own)
	AddResult
	Retried   bool // it came through a recovery after a network error
	ReplyLost bool // committed, but its reply was lost and not kept (native): ID unknown
}

// BatchSummary is what a run did.
type BatchSummary struct {
	Progress  string // the progress record's key
	ResumedAt int64  // lines committed before this run (0: from the start)
	// SkippedBack is the record's line when --skip N went below it: lines
	// N+1 to SkippedBack were committed, and this run sent them again.
	SkippedBack int64
	Restarted   bool  // a record was found for a stream deleted or recreated since: started over
	Lines       int64 // lines whose adds this run committed
	Added       int64
	Duplicates  int64
	LastLine    int64 // the last line committed, by this run or before
	Mode        Mode
	// Unacked counts the adds committed on the primary but not acknowledged
	// as BatchSpec.Durability asked: not emitted, and not in Lines.
	Unacked int64
}

// Progress is a batch's progress record.
type Progress struct {
	Exists     bool
	Line       int64 // input lines committed
	DigestLine int64 // lines Digest covers (Line, unless a chunk stopped early)
	Digest     string
	Entries    int64            // the stream's entries-added after the last chunk (-1 unknown)
	Updated    int64            // when a chunk last moved it
	Run        string           // the run that wrote its last chunk
	replies    map[int64]string // kept replies by the line their chunk starts after
}

func parseProgress(h map[string]string) Progress {
	if len(h) == 0 {
		return Progress{Entries: -1}
	}
	num := func(f string, def int64) int64 {
		if n, err := strconv.ParseInt(h[f], 10, 64); err == nil {
			return n
		}
		return def
	}
	p := Progress{Exists: true, Line: num("line", 0), DigestLine: num("digest-line", 0), Digest: h["digest"],
		Entries: num("entries", -1), Updated: num("updated", 0), Run: h["run"], replies: map[int64]string{}}
	for k, v := range h {
		if from, ok := strings.CutPrefix(k, "r:"); ok {
			if n, err := strconv.ParseInt(from, 10, 64); err == nil {
				p.replies[n] = v
			}
		}
	}
	return p
}

// batchRun is one run of RunBatch.
type batchRun struct {
	s    *Streams
	spec BatchSpec
	in   BatchInput
	emit func(BatchResult) error
	// results carries the confirmed lines to the goroutine that emits them.
	results chan []BatchResult
	layout  idmp.StateLayout
	key     string
	digest  hash.Hash // over every line read so far
	sum     BatchSummary
	// kept is the from-line of confirmed chunks whose replies the record
	// still keeps, oldest first: each later chunk drops one.
	kept       []int64
	eof        bool
	pendingErr error // a read error met inside a chunk: returned after it
	// unacked holds committed results until a wait covers them.
	unacked []BatchResult
	// run names this run in the record, to tell another run's moves from
	// a chunk this run committed and lost the reply of.
	run string
	// maxBulk is the server's proto-max-bulk-len (0: unknown).
	maxBulk int64
	// busyHint says why another run was taken for live (stoppedRun).
	busyHint string
	// ghostTo is the last line sent on a pipe dropped before all its
	// replies came: until the run confirms it, lines past LastLine may
	// still be committed by that pipe's chunks.
	ghostTo int64
}

// errStopped ends a run stopped by BatchSpec.Stop with nothing on the wire
// (interrupted replaces it).
var errStopped = errors.New("stopped")

// chunk is a run of lines sent in one script call.
type chunk struct {
	from, to int64 // lines committed before it, and its last line
	digest   string
	reqs     []AddRequest
	lines    []int64
	retried  bool
	call     *redisconn.Call // its script call, once prepared
	parse    replyParser     // reads the call's reply
}

// RunBatch adds the input's lines exactly once and calls emit with each
// line's result, in order.
func (s *Streams) RunBatch(ctx context.Context, spec BatchSpec, in BatchInput, emit func(BatchResult) error) (BatchSummary, error) {
	if spec.TTL <= 0 {
		spec.TTL = DefaultProgressTTL
	}
	if spec.Chunk <= 0 {
		spec.Chunk = batchChunk
	}
	if spec.Window <= 0 {
		spec.Window = batchWindow
	}
	// Whether the server is a cluster node decides the keys: asked even in
	// --mode emulated (one round trip a run).
	if _, err := s.Conn.Capabilities(ctx); err != nil {
		return BatchSummary{Mode: s.Mode()}, err
	}
	// Chunks in flight cannot stop to ask for what their calls carry.
	if err := s.be.ready(ctx); err != nil {
		return BatchSummary{Mode: s.Mode()}, err
	}
	mode := s.Mode()
	layout, err := idmp.StateKeys(spec.Template.Stream, s.Conn.Cluster())
	if err != nil {
		// Native adds need no state keys, but the batch's progress record
		// must share the stream's slot (one script call a chunk).
		e := exit.New(exit.Usage, "xadd --batch on stream "+strconv.Quote(spec.Template.Stream),
			"the name holds '}' but no valid hash tag, so no progress record can share its cluster slot")
		e.Hint = "use a hash-tagged stream name such as " + strconv.Quote("{"+strings.ReplaceAll(spec.Template.Stream, "}", "_")+"}") +
			", or add its lines without --batch (one xadd each)"
		return BatchSummary{Mode: mode}, e
	}
	r := &batchRun{s: s, spec: spec, in: in, emit: emit, layout: layout,
		key: layout.Batch(spec.Template.PID, spec.ID), digest: sha256.New(), run: newRunID()}
	r.sum.Progress, r.sum.Mode = r.key, mode
	r.maxBulk = s.Conn.ProtoMaxBulkLen(ctx)
	s.maxBulk = r.maxBulk
	if err := r.start(ctx); err != nil {
		return r.sum, r.interrupted(ctx, err)
	}
	// Results are printed by a goroutine of their own, in order, so that the
	// next window goes to the server while this one's lines are printed.
	r.results = make(chan []BatchResult, 2)
	printed := make(chan error, 1)
	go func() {
		var perr error
		for rs := range r.results {
			for _, res := range rs {
				if perr == nil {
					perr = emit(res)
				}
			}
			if perr == nil && spec.Delivered != nil {
				perr = spec.Delivered()
			}
		}
		printed <- perr
	}()
	err = r.runScripted(ctx)
	if cerr := r.cover(ctx); cerr != nil && (err == nil || err == errStopped) {
		err = cerr
	}
	close(r.results)
	if perr := <-printed; err == nil {
		err = perr
	}
	return r.sum, r.interrupted(ctx, err)
}

// newRunID is a random name for one run of a batch.
func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// interrupted replaces a stopped or cancelled run's error (its closed
// connection says nothing) by how far it got, and that the same command
// resumes there: exactly, when every chunk sent was answered.
func (r *batchRun) interrupted(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil && !r.stopped() {
		return err
	}
	n := r.sum.LastLine
	hint := fmt.Sprintf("lines 1-%d are committed, none after them: run the same command again to resume after line %d", n, n)
	if n == 0 {
		hint = "no line is committed: run the same command again to start from line 1"
	}
	if err != errStopped || n < r.ghostTo {
		hint = fmt.Sprintf("lines 1-%d are committed; lines sent after them may be too, without their results printed, and the progress record knows exactly how far the rest got: run the same command again to resume after the last committed line", n)
	}
	var short *redisconn.NotAckedError
	if errors.As(err, &short) { // what the wait found stays said
		hint = short.Error() + ": their results were not printed; " + hint
	}
	return &exit.Error{Code: exit.Interrupted, What: r.what(), Err: context.Canceled, Hint: hint}
}

// stopped reports whether BatchSpec.Stop is closed.
func (r *batchRun) stopped() bool {
	select {
	case <-r.spec.Stop:
		return true
	default:
		return false
	}
}

// what names the batch in errors.
func (r *batchRun) what() string {
	return "xadd --batch (batch " + strconv.Quote(r.spec.ID) + " of " + strconv.Quote(r.spec.Template.Stream) + ")"
}

// start moves the input to where the run begins: after the record's line
// (checked against the digest), after --skip, or at the start.
func (r *batchRun) start(ctx context.Context) (err error) {
	p, entries, err := r.readProgress(ctx)
	if err != nil {
		return exit.Wrap(err, r.what())
	}
	defer func() {
		if err == errStopped { // while reading up to the line the record says
			r.sum.LastLine = p.Line
		}
	}()
	r.prune(ctx)
	stale := p.Exists && entries >= 0 && p.Entries >= 0 && entries < p.Entries
	switch {
	case r.spec.SkipSet:
		if p.Exists && p.Line > r.spec.Skip && !stale {
			r.sum.SkippedBack = p.Line
		}
		if err := r.advance(r.spec.Skip, 0, ""); err != nil {
			return err
		}
		return r.reset(ctx, r.spec.Skip)
	case stale, p.Exists && entries < 0 && p.Line > 0 && r.streamGone(ctx):
		// The stream was deleted (or recreated) since: its lines are gone
		// with it, so the batch starts over.
		r.sum.Restarted = true
		return r.reset(ctx, 0)
	case p.Exists:
		if err := r.advance(p.Line, p.DigestLine, p.Digest); err != nil {
			return err
		}
		r.sum.ResumedAt, r.sum.LastLine = p.Line, p.Line
		return nil
	case r.spec.Resume:
		e := exit.New(exit.NotFound, r.what(), "no progress record: nothing to resume (%s)", r.key)
		e.Hint = "it expired (--progress-ttl), the stream was deleted, or the batch ID differs (it defaults to a digest of the input's name and first line); without --resume the batch starts from its first line"
		return e
	}
	return nil
}

// pruneLimit bounds the progress records one run drops at its start.
const pruneLimit = 100

// prune drops records whose --progress-ttl is up (they have no TTL of
// their own). Best effort: the next run tries again.
func (r *batchRun) prune(ctx context.Context) {
	_, _ = r.s.Conn.Run(ctx, redisconn.RunOpts{Key: r.layout.Batches}, pruneScript.Call(&pruneArgs{Index: r.layout.Batches, Limit: pruneLimit}))
}

// streamGone reports whether the stream does not exist (a record without
// entries to compare, on a server that does not count them).
func (r *batchRun) streamGone(ctx context.Context) bool {
	n, err := r.s.Conn.Client().Exists(ctx, r.spec.Template.Stream).Result()
	return err == nil && n == 0
}

// readProgress reads the record and the stream's entries-added (-1 when
// the stream does not exist or the server does not count).
func (r *batchRun) readProgress(ctx context.Context) (Progress, int64, error) {
	var rec *redis.MapStringStringCmd
	var xi *redis.XInfoStreamCmd
	err := r.s.Conn.Pipelined(ctx, func(p redis.Pipeliner, ctx context.Context) {
		rec = p.HGetAll(ctx, r.key)
		xi = p.XInfoStream(ctx, r.spec.Template.Stream)
	})
	if err != nil {
		return Progress{}, -1, err
	}
	if err := rec.Err(); err != nil {
		return Progress{}, -1, err
	}
	entries := int64(-1)
	if v, err := xi.Result(); err == nil && v.EntriesAdded > 0 {
		entries = v.EntriesAdded
	}
	return parseProgress(rec.Val()), entries, nil
}

// advance reads the input up to line n, checking that its first digestLine
// lines are the ones whose digest the record holds.
func (r *batchRun) advance(n, digestLine int64, digest string) error {
	for r.sum.LastLine < n {
		ln, raw, err := r.next()
		if err == io.EOF && r.spec.SkipSet {
			return &exit.Error{Code: exit.Usage, What: r.what(), Err: fmt.Errorf("--skip %d: the input has only %d lines", n, r.sum.LastLine),
				Hint: "--skip N starts after line N: give at most the number of lines of the input"}
		}
		if err == io.EOF {
			return &exit.Error{Code: exit.Data, What: r.what(), Err: fmt.Errorf("the input has %d lines; %d were committed", r.sum.LastLine, n),
				Hint: "this is not the input the batch was run with: give another --batch-id to send it as a new batch"}
		}
		if err != nil {
			return err
		}
		r.digestLine(raw)
		r.sum.LastLine = ln
		if ln == digestLine && digest != "" && r.digestHex() != digest {
			return &exit.Error{Code: exit.Data, What: r.what(),
				Err:  fmt.Errorf("the first %d lines differ from those the batch committed", digestLine),
				Hint: "a changed or another input under the same batch ID: give another --batch-id to send it as a new batch (lines already added are then sent again)"}
		}
	}
	return nil
}

// next reads one line; the caller digests the lines it takes.
func (r *batchRun) next() (int64, []byte, error) {
	if r.eof {
		return 0, nil, io.EOF
	}
	n, raw, err := r.in.Next()
	if err == io.EOF {
		r.eof = true
	} else if err != nil && r.stopped() {
		err = errStopped // the input's read ended by the stop
	}
	return n, raw, err
}

// digestLine adds a line to the digest: its bytes, then a newline (lines
// come without their endings, so a last line that gains one is the same).
func (r *batchRun) digestLine(raw []byte) {
	r.digest.Write(raw)
	r.digest.Write([]byte{'\n'})
}

func (r *batchRun) digestHex() string {
	// Sum of a copy: the running hash goes on.
	m, _ := r.digest.(encoding.BinaryMarshaler).MarshalBinary()
	h := sha256.New()
	_ = h.(encoding.BinaryUnmarshaler).UnmarshalBinary(m)
	return hex.EncodeToString(h.Sum(nil))
}

// reset makes the record say line and the lines' digest (--skip, or a
// stream started over; 0: no record). With no TTL, it carries its expiry.
func (r *batchRun) reset(ctx context.Context, line int64) error {
	err := r.s.Conn.Do(func(c redis.UniversalClient) error {
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, r.key)
			if line > 0 {
				now := time.Now().UnixMilli() // informational: pruning decides on the server clock
				expires := now + r.spec.TTL.Milliseconds()
				p.HSet(ctx, r.key, "line", line, "digest", r.digestHex(), "digest-line", line, "batch", r.spec.ID,
					"pid", r.spec.Template.PID, "stream", r.spec.Template.Stream, "mode", r.sum.Mode.String(),
					"updated", now, "expires", expires, "run", r.run)
				p.ZAdd(ctx, r.layout.Batches, redis.Z{Score: float64(expires), Member: r.key})
			}
			return nil
		})
		return err
	})
	if err != nil {
		return exit.Wrap(err, r.what())
	}
	r.sum.LastLine = line
	return nil
}

// nextChunk reads up to size adds (with the blank lines between them).
func (r *batchRun) nextChunk(size int, from int64) (*chunk, error) {
	c := &chunk{from: from, to: from, reqs: make([]AddRequest, 0, size), lines: make([]int64, 0, size)}
	for len(c.reqs) < size && (len(c.reqs) == 0 || r.in.Ready()) {
		n, raw, err := r.next()
		// Parsed in place, into the chunk's next slot.
		c.reqs = append(c.reqs, AddRequest{})
		add := false
		if err == nil {
			add, err = r.in.Parse(n, raw, &c.reqs[len(c.reqs)-1])
		}
		if err == nil && add {
			// Refused like a malformed line: the lines before it go, it
			// does not, and a rerun stops at it again.
			if lerr := r.sendable(&c.reqs[len(c.reqs)-1]); lerr != nil {
				add, err = false, &batch.LineError{Line: int(n), Err: lerr}
			}
		}
		if !add {
			c.reqs = c.reqs[:len(c.reqs)-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if len(c.reqs) > 0 {
				// Send what came before it; the error comes back next time.
				r.eof, r.pendingErr = true, err
				break
			}
			return nil, err
		}
		r.digestLine(raw)
		c.to = n
		if add {
			c.lines = append(c.lines, n)
		}
	}
	if len(c.reqs) == 0 { // trailing blank lines are not worth a record
		err := cmp.Or(r.pendingErr, io.EOF)
		r.pendingErr = nil
		return nil, err
	}
	c.digest = r.digestHex()
	return c, nil
}

// sendable refuses an add the script cannot take, or one the server
// would refuse for the whole chunk (proto-max-bulk-len).
func (r *batchRun) sendable(req *AddRequest) error {
	if err := r.s.be.fits(req); err != nil {
		return err
	}
	if n := len(req.Fields); n > idmp.MaxEmulatedFieldArgs {
		e := exit.New(exit.Data, "", "%d field/value arguments: a batch's script takes at most %d in one add (it hands them to XADD with Lua's unpack, which stops near 8,000 values)", n, idmp.MaxEmulatedFieldArgs)
		e.Hint = "add this message with a single xadd (natively it has no such bound), or store its fields as one value (a JSON document)"
		return e
	}
	return bulkErr(req, r.maxBulk)
}

// fill reads chunks after from until the window is full or the input ends;
// a read error after some chunks is kept for after they are sent.
func (r *batchRun) fill(queue []*chunk, from int64) ([]*chunk, error) {
	for len(queue) < r.spec.Window && (len(queue) == 0 || r.in.Ready()) {
		if n := len(queue); n > 0 {
			from = queue[n-1].to
		}
		c, err := r.nextChunk(r.spec.Chunk, from)
		if err == io.EOF {
			break
		}
		if err != nil {
			if len(queue) == 0 {
				return nil, err
			}
			r.pendingErr = err
			break
		}
		queue = append(queue, c)
	}
	return queue, nil
}

// confirm takes a chunk's committed results: emitted at once, or with
// Durability kept until a wait covers them (see settle).
func (r *batchRun) confirm(c *chunk, res []AddResult, lost bool) {
	out := make([]BatchResult, len(res))
	for i, a := range res {
		a.Mode = r.sum.Mode
		out[i] = BatchResult{Line: c.lines[i], PID: c.reqs[i].PID, AddResult: a, Retried: c.retried, ReplyLost: lost}
	}
	if r.spec.Durability.On() {
		r.unacked = append(r.unacked, out...)
	} else {
		r.emitResults(out)
	}
	if len(res) == len(c.reqs) {
		r.sum.LastLine = c.to
		r.kept = append(r.kept, c.from)
	} else if len(res) > 0 {
		r.sum.LastLine = c.lines[len(res)-1]
	}
}

// confirmPart confirms the requests i to j of chunk c (res, one each): the
// whole chunk when they are all of it.
func (r *batchRun) confirmPart(c *chunk, i, j int, res []AddResult, lost bool) {
	if i == j {
		return
	}
	if i == 0 && j == len(c.reqs) {
		r.confirm(c, res, lost)
		return
	}
	part := &chunk{from: c.from, to: c.lines[j-1], reqs: c.reqs[i:j], lines: c.lines[i:j], retried: c.retried}
	if i > 0 {
		part.from = c.lines[i-1]
	}
	if j == len(c.reqs) {
		part.to = c.to
	}
	r.confirm(part, res, lost)
}

// emitResults counts results and hands them to the goroutine that emits
// them.
func (r *batchRun) emitResults(out []BatchResult) {
	for _, br := range out {
		if br.Duplicate {
			r.sum.Duplicates++
		} else {
			r.sum.Added++
		}
	}
	r.sum.Lines += int64(len(out))
	if len(out) > 0 {
		r.results <- out
	}
}

// lineError is a line whose add failed (the lines before it are committed).
func (r *batchRun) lineError(c *chunk, i int, err error) error {
	e := exit.Wrap(err, fmt.Sprintf("xadd --batch: line %d", c.lines[i]))
	hint := fmt.Sprintf("%d lines are committed; once it is fixed, run the same command again: it resumes after line %d", r.sum.LastLine, r.sum.LastLine)
	if h := exit.Hint(err); h != "" && exit.Code(e) != exit.Data {
		hint = h + "; " + hint
	}
	return exit.WithHint(e, hint)
}

// runScripted sends windows of chunks (sendScripted) while a goroutine
// reads and prepares the next, at most two windows ahead.
func (r *batchRun) runScripted(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// After a stop, the replies on the wire get one timeout in all (the
	// pipe closes with ctx).
	go func() {
		select {
		case <-r.spec.Stop:
			select {
			case <-time.After(r.s.Conn.Timeout + r.spec.Durability.Timeout):
				cancel()
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
	}()
	windows := make(chan []*chunk, 2)
	var readErr error
	go func() {
		defer close(windows)
		from := r.sum.LastLine
		for {
			queue, err := r.fill(nil, from)
			if err == nil && len(queue) == 0 {
				return
			}
			for _, c := range queue {
				if err == nil {
					err = r.prepare(c)
				}
			}
			if err != nil {
				readErr = err
				return
			}
			from = queue[len(queue)-1].to
			select {
			case windows <- queue:
			case <-ctx.Done():
				return
			}
		}
	}()
	if err := r.sendScripted(ctx, windows); err != nil {
		cancel()
		// Let the reader stop; a stopped run does not wait for it, which may
		// be waiting for a stalled producer's next line.
		for more := true; more; {
			select {
			case _, more = <-windows:
			case <-r.spec.Stop:
				more = false
			}
		}
		return err
	}
	if readErr != nil {
		return readErr
	}
	r.tidy(ctx)
	return nil
}

// prepare builds a chunk's call once (a chunk a recovery cuts is new);
// which kept replies it drops is set when it is sent (dropIndex).
func (r *batchRun) prepare(c *chunk) error {
	if c.call != nil {
		return nil
	}
	cp := &chunkProgress{Key: r.key, Index: r.layout.Batches, ID: r.spec.ID, PID: r.spec.Template.PID,
		From: c.from, To: c.to, Digest: c.digest, DropReplies: -1, TTL: r.spec.TTL, Lines: c.lines, Run: r.run}
	var err error
	c.call, c.parse, err = r.s.be.addCall(c.reqs, cp, replyOutcomes)
	return err
}

// sendScripted commits the windows on a pipe with up to pipeDepth sends on
// the wire; chunks after one that stopped change nothing (compare-and-set).
// After a network error, or a chunk the record says is done, the record
// tells what was committed (its kept replies are emitted) and the rest goes again.
func (r *batchRun) sendScripted(ctx context.Context, windows <-chan []*chunk) error {
	d := r.spec.Durability
	if err := r.s.Conn.CheckDurable(ctx, r.spec.Template.Stream, d); err != nil {
		return exit.Wrap(err, r.what())
	}
	// A wait that falls short stops the run: no more writes go before one
	// that did not.
	depth := pipeDepth
	if d.On() {
		depth = 1
	}
	var (
		queue      []*chunk // not confirmed, oldest first: the first onWire were sent
		groups     []int    // chunks of each send on the wire, oldest first
		onWire     int
		sentTo     int64 // the last line sent
		pipe       *redisconn.Pipe
		more       = true
		recovering bool
	)
	drop := func() { // what is on the wire is left to a recovery
		if pipe != nil {
			pipe.Close()
		}
		if onWire > 0 {
			r.ghostTo = sentTo
		}
		pipe, groups, onWire, recovering = nil, nil, 0, true
	}
	defer func() {
		if pipe != nil {
			pipe.Close()
		}
	}()
	// send sends the chunks after those on the wire.
	send := func() error {
		n := len(queue)
		if n == onWire {
			return nil
		}
		cmds := make([][]any, 0, n-onWire+1)
		for _, c := range queue[onWire:n] {
			if err := r.prepare(c); err != nil {
				return err
			}
			if pipe == nil {
				// The pipe loads the chunks' script as it opens.
				p, err := r.s.Conn.OpenPipe(ctx, r.spec.Template.Stream, batchClientName(r.run), c.call.Script)
				if err != nil {
					return r.scriptRefused(err)
				}
				if pipe = p; d.On() {
					pipe.SetTimeout(r.s.Conn.Timeout + d.Timeout)
				}
			}
			drops := dropIndex(c.call)
			c.call.Args[drops] = ""
			if len(r.kept) > 0 {
				c.call.Args[drops], r.kept = strconv.FormatInt(r.kept[0], 10), r.kept[1:]
			}
			cmds = append(cmds, c.call.Command(false))
		}
		if d.On() {
			cmds = append(cmds, redisconn.WaitCommand(d))
		}
		groups = append(groups, n-onWire)
		onWire, sentTo = n, queue[n-1].to
		return pipe.Send(cmds)
	}
	op := func() error {
		for {
			if recovering {
				q, err := r.recover(ctx, queue)
				if err != nil {
					return err
				}
				queue, recovering = q, false
			}
			// Chunks a recovery left go first, then windows as they come;
			// after a stop, none: the replies on the wire are read.
			if !r.stopped() {
				if err := send(); err != nil {
					drop()
					return err
				}
			}
			for more && len(groups) < depth && onWire == len(queue) && !r.stopped() {
				var w []*chunk
				if len(groups) == 0 {
					select {
					case w, more = <-windows:
					case <-r.spec.Stop:
					case <-ctx.Done():
						return ctx.Err()
					}
				} else {
					select {
					case w, more = <-windows:
					default: // none ready: read what is on the wire meanwhile
					}
				}
				if len(w) == 0 {
					break
				}
				queue = append(queue, w...)
				if err := send(); err != nil {
					drop()
					return err
				}
			}
			if len(groups) == 0 {
				if r.stopped() && (more || len(queue) > 0) {
					return errStopped
				}
				return nil
			}
			moved, err := r.receive(ctx, pipe, &queue, groups[0])
			switch {
			case moved:
				drop()
				continue
			case err != nil && redisconn.Retryable(err):
				drop()
				return err
			case err != nil:
				return err
			}
			onWire -= groups[0]
			groups = groups[1:]
		}
	}
	err := redisconn.WithRetriesWithin(ctx, r.spec.Retries, r.s.Conn.Timeout, func() error {
		err := op()
		if err != nil && r.stopped() && redisconn.Retryable(err) {
			return errStopped // no retry after a stop: the record has what was lost (ghostTo)
		}
		return err
	}, r.spec.OnRetry)
	return r.unavailable(err)
}

// receive reads the oldest send's n replies (and its wait), confirming
// chunks from the front of queue. moved (the record was past a chunk) and
// a retryable error leave what is on the wire to a recovery.
func (r *batchRun) receive(ctx context.Context, pipe *redisconn.Pipe, queue *[]*chunk, n int) (moved bool, err error) {
	d := r.spec.Durability
	for range n {
		c := (*queue)[0]
		v, err := pipe.Recv()
		var reply redisconn.ReplyError
		switch {
		case err != nil && !errors.As(err, &reply):
			return false, err // the connection, or the server lost the script
		case err != nil && exit.Migrating(err.Error()):
			// A moving slot: nothing of this chunk ran (the scripts check
			// before they write); the record tells the rest after the move.
			r.s.Conn.Redirected(ctx)
			return false, err
		case err != nil && redisconn.Retryable(err):
			return false, err
		case err != nil:
			return false, exit.Wrap(r.scriptRefused(err), r.what())
		}
		res, err := c.parse(v)
		var refused *errProgressMoved
		var unknown *errOutcomesUnknown
		switch {
		case errors.As(err, &refused):
			return true, nil
		case errors.As(err, &unknown):
			// Committed; what each add was, the server's counters do not
			// say: reported as a lost reply's lines are.
			err = unknown.then
			r.confirm(c, res, true)
		default:
			r.confirm(c, res, false)
		}
		*queue = (*queue)[1:]
		if err != nil {
			return false, r.lineError(c, len(res), err) // the results waiting on a wait are covered at the end (cover)
		}
	}
	if d.On() {
		v, err := pipe.Recv()
		var reply redisconn.ReplyError
		if err != nil && !errors.As(err, &reply) {
			return false, err // a later wait covers these results (see settle)
		}
		return false, r.settle(redisconn.AckOf(d, v, err))
	}
	return false, nil
}

// unavailable explains a run stopped by the network: what it confirmed,
// and that the progress record knows the rest.
func (r *batchRun) unavailable(err error) error {
	if err == nil || !redisconn.Retryable(err) {
		return err
	}
	if exit.Migrating(err.Error()) {
		return exit.WithHint(exit.Wrap(err, r.what()), fmt.Sprintf(
			"the stream's cluster slot was still moving after --timeout %s: lines 1-%d are confirmed committed, and the progress record knows exactly how far the rest got: run the same command again once the migration is done (or with a longer --timeout)",
			r.s.Conn.Timeout, r.sum.LastLine))
	}
	return exit.WithHint(exit.Wrap(err, r.what()), fmt.Sprintf(
		"lines 1-%d are confirmed committed, and the progress record knows exactly how far the rest got: run the same command again once the server is back: it resumes after the last committed line", r.sum.LastLine))
}

// recover settles the chunks in flight by the record: those it counts are
// confirmed (kept replies emitted), one counted in part is cut, the rest go again.
func (r *batchRun) recover(ctx context.Context, queue []*chunk) ([]*chunk, error) {
	p, _, err := r.readProgress(ctx)
	if err != nil {
		return queue, err
	}
	stopped := "" // a run other than this one, known to have stopped
	for len(queue) > 0 {
		c := queue[0]
		switch {
		case p.Line < c.from:
			e := exit.New(exit.Data, r.what(), "the progress record went back to line %d while lines up to %d were being sent", p.Line, c.from)
			e.Hint = "it was deleted or expired meanwhile, or the stream was deleted: check the stream before sending the rest"
			return nil, e
		case p.Line == c.from:
			for _, q := range queue {
				q.retried = true
			}
			return queue, nil
		}
		if p.Run != "" && p.Run != r.run && p.Run != stopped {
			ok, again, err := r.stoppedRun(ctx, p)
			if err != nil {
				return queue, err
			}
			if !ok {
				return nil, r.otherRunBusy(c, p)
			}
			// Stopped: what it committed is final. Settle against that.
			stopped, p = p.Run, again
			continue
		}
		// Committed, in whole or in part: its first n lines (the record
		// moves only over lines committed in order, each once).
		n := 0
		for n < len(c.lines) && c.lines[n] <= p.Line {
			n++
		}
		// Their replies as kept under c.from. None there, or not this
		// chunk's (another run cut its chunks elsewhere, e.g. where a
		// piped input waited): committed, IDs unknown.
		res, err := r.keptReplies(p.replies[c.from], c)
		switch {
		case err != nil:
			res = nil
		case len(res) > n:
			res = res[:n]
		}
		c.retried = true
		r.confirmPart(c, 0, len(res), res, false)
		// The lines committed after those, by a run that stopped, in
		// chunks of its own: committed, IDs unknown.
		lost := make([]AddResult, 0, n-len(res))
		for i := len(res); i < n; i++ {
			lost = append(lost, AddResult{IID: c.reqs[i].IID})
		}
		r.confirmPart(c, len(res), n, lost, true)
		if n < len(c.reqs) {
			queue[0] = &chunk{from: p.Line, to: c.to, digest: c.digest, reqs: c.reqs[n:], lines: c.lines[n:], retried: true}
			continue
		}
		queue = queue[1:]
	}
	// Ahead of this run's reading: a stopped run's lines settle as their
	// chunks come (each finds the record moved); a live run's stop this one.
	if p.Line > r.sum.LastLine && p.Run != stopped {
		e := exit.New(exit.Busy, r.what(), "another run of the batch is ahead of this one (line %d)", p.Line)
		e.Hint = "one run per batch at a time; this one stops"
		return nil, e
	}
	return queue, nil
}

// otherRunGrace: without CLIENT LIST, a record that stood still this long
// was moved by a run that stopped (see stoppedRun).
const otherRunGrace = 150 * time.Millisecond

// stoppedRun reports whether the run that moved the record (p) stopped, and
// the record then. A killed run's socketed chunks still run after it died,
// so its connections are named (batchClientName): none listed, it stopped
// and the record is final; moved past p by more than inFlightLines while
// listed, or still listed after --timeout, it is live (the error names the
// connection, maybe of a vanished host). Without CLIENT LIST: otherRunGrace.
// Exactly once holds either way: this only decides between going on and 75.
func (r *batchRun) stoppedRun(ctx context.Context, p Progress) (bool, Progress, error) {
	name := batchClientName(p.Run)
	deadline := time.Now().Add(max(r.s.Conn.Timeout, time.Second))
	limit := p.Line + r.inFlightLines()
	for {
		id, listed, err := r.s.Conn.ClientListed(ctx, r.spec.Template.Stream, name)
		var reply redis.Error
		if err != nil && (exit.Classify(err) == exit.Permission || errors.As(err, &reply) && !exit.Migrating(err.Error())) {
			// CLIENT LIST denied, renamed or disabled (some managed
			// services): the record standing still is all there is.
			return r.recordStill(ctx, p)
		}
		if err != nil {
			return false, p, err
		}
		if !listed {
			again, _, err := r.readProgress(ctx)
			return err == nil, again, err
		}
		line, run, err := r.recordLine(ctx)
		switch {
		case err != nil:
			return false, p, err
		case run == p.Run && line > limit:
			return false, p, nil // more than a dead run can have had in flight
		case time.Now().After(deadline):
			r.busyHint = fmt.Sprintf("its connection is open on the server (CLIENT LIST: id=%d name=%s): if that run is dead (its host gone without closing the connection), CLIENT KILL ID %d, or wait for the server to drop it (tcp-keepalive), then run the same command again", id, name, id)
			return false, p, nil
		}
		select {
		case <-ctx.Done():
			return false, p, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// inFlightLines bounds the lines a run can have sent and not seen
// committed: pipeDepth windows of the largest chunks.
func (r *batchRun) inFlightLines() int64 {
	return int64(pipeDepth * max(batchWindow, r.spec.Window) * max(batchChunk, r.spec.Chunk))
}

// recordLine reads the record's line and run alone (stoppedRun polls it).
func (r *batchRun) recordLine(ctx context.Context) (int64, string, error) {
	var v []any
	err := r.s.Conn.Do(func(c redis.UniversalClient) error {
		cctx, cancel := r.s.bound(ctx)
		defer cancel()
		var err error
		v, err = c.HMGet(cctx, r.key, "line", "run").Result()
		return err
	})
	if err != nil {
		return 0, "", err
	}
	line, _ := v[0].(string)
	run, _ := v[1].(string)
	n, _ := strconv.ParseInt(line, 10, 64)
	return n, run, nil
}

// recordStill is stoppedRun's fallback without CLIENT LIST: a run whose
// record stood still for otherRunGrace is taken for stopped.
func (r *batchRun) recordStill(ctx context.Context, p Progress) (bool, Progress, error) {
	select {
	case <-ctx.Done():
		return false, p, ctx.Err()
	case <-time.After(otherRunGrace):
	}
	again, _, err := r.readProgress(ctx)
	if err != nil {
		return false, p, err
	}
	return again.Line == p.Line && again.Run == p.Run && again.Updated == p.Updated, again, nil
}

// otherRunBusy is the 75 of a run that finds another run of its batch live.
func (r *batchRun) otherRunBusy(c *chunk, p Progress) error {
	e := exit.New(exit.Busy, r.what(), "another run of the batch moved its progress record past line %d (to line %d)", c.from, p.Line)
	e.Hint = "one run per batch at a time: this one stops; the other goes on, and the same command run again afterwards resumes after its last line"
	if r.busyHint != "" {
		e.Hint = r.busyHint + "; " + e.Hint
	}
	return e
}

// keptReplies reads a chunk's replies as its script kept them.
func (r *batchRun) keptReplies(kept string, c *chunk) ([]AddResult, error) {
	if kept == "" {
		return nil, errors.New("its replies are not kept in the progress record")
	}
	iids := make([]string, len(c.reqs))
	for i := range c.reqs {
		iids[i] = r.s.be.iidOf(&c.reqs[i])
	}
	return parseDone(kept, iids, len(c.reqs))
}

// tidy drops the replies the record still keeps once the run is done.
func (r *batchRun) tidy(ctx context.Context) {
	if len(r.kept) == 0 {
		return
	}
	fields := make([]string, len(r.kept))
	for i, from := range r.kept {
		fields[i] = "r:" + strconv.FormatInt(from, 10)
	}
	// Best effort: the record expires with them anyway.
	_ = r.s.Conn.Do(func(c redis.UniversalClient) error { return c.HDel(ctx, r.key, fields...).Err() })
	r.kept = nil
}

// scriptRefused gives a native batch whose script the server has renamed
// away what to do instead.
func (r *batchRun) scriptRefused(err error) error {
	if r.sum.Mode == ModeEmulated || !exit.ScriptingDisabled(err.Error()) {
		return scriptErr(err) // a user's refusal (77) gets the role that runs the verb (cmd)
	}
	return exit.WithHint(err, "xadd --batch moves its progress record with each chunk in one server-side script: allow EVALSHA and SCRIPT LOAD (rename-command, ACL), or add the lines one xadd at a time, which natively needs no script")
}

// batchClientName names a run's connections, for stoppedRun's CLIENT LIST.
func batchClientName(run string) string { return "idmpctl-batch-" + run }

// settle judges the results kept since the last wait by the next wait (it
// covers them all: replicas acknowledge offsets in order): emitted, or
// unprinted and the run stops (the record has them: a re-run resumes after).
func (r *batchRun) settle(ack redisconn.Ack) error {
	if len(r.unacked) == 0 {
		return nil
	}
	var na *redisconn.NotAckedError
	if errors.As(r.spec.Durability.Check(ack), &na) {
		first, last := r.unacked[0].Line, r.unacked[len(r.unacked)-1].Line
		r.sum.Unacked += int64(len(r.unacked))
		r.unacked = nil
		return &exit.Error{Code: na.Code(), What: r.what(),
			Err:  fmt.Errorf("%w: lines %d-%d are committed on the primary but could be lost in a failover, so their results are not printed", na, first, last),
			Hint: fmt.Sprintf("run the same command again once the replicas are back: it resumes after line %d (if a failover lost those lines, their progress went with them, and they are sent again)", r.sum.LastLine)}
	}
	for i := range r.unacked {
		r.unacked[i].AddResult.Ack = &ack
	}
	// The emitting goroutine owns what it is handed: a fresh slice follows.
	r.emitResults(r.unacked)
	r.unacked = nil
	return nil
}

// cover waits for results no later round trip covered (a recovery found
// them committed): a write of its own (the record's PEXPIRE), then settle.
func (r *batchRun) cover(ctx context.Context) error {
	if len(r.unacked) == 0 {
		return nil
	}
	ack, err := r.s.Conn.PipelinedDurable(ctx, r.spec.Template.Stream, r.spec.Durability, func(p redis.Pipeliner, ctx context.Context) {
		// A write the replication stream carries, which leaves the record
		// without a TTL (no state key has one: volatile-* eviction).
		p.PExpire(ctx, r.key, r.spec.TTL)
		p.Persist(ctx, r.key)
	})
	if err != nil {
		return r.unavailable(exit.Wrap(err, r.what()))
	}
	return r.settle(ack)
}

// DefaultBatchID is the batch ID without --batch-id: 16 hex digits of the
// SHA-256 of the input's absolute path ("-": stdin), newline, first line.
func DefaultBatchID(input string, firstLine []byte) string {
	if input != "-" {
		if abs, err := filepath.Abs(input); err == nil {
			input = abs
		}
	}
	h := sha256.New()
	h.Write([]byte(input + "\n"))
	h.Write(firstLine)
	return hex.EncodeToString(h.Sum(nil))[:16]
}
