package stream

// The native path of xadd --batch (Redis 8.6+): one MULTI/EXEC a chunk.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

// runNative commits one chunk per MULTI/EXEC on a connection of its own:
// [TIME, XINFO, XADD..., XINFO, the progress record], compare-and-set through
// WATCH (nativeChunk): the native path where the chunk script cannot run
// (see batch_native_script.go). It takes queue, the chunks read and not
// committed, then the windows the reader sends. After a network error the
// connection that may still hold a stalled chunk is waited out (CLIENT
// LIST ID) before the record is read: after that no old chunk can run, and
// the record is the truth. Its committed chunks' replies are lost (MULTI
// cannot keep what it is about to learn): their lines are reported
// committed with the ID unknown.
func (r *batchRun) runNative(ctx context.Context, nc *nativeBatchConn, queue []*chunk, windows <-chan []*chunk) error {
	for {
		for _, c := range queue {
			if err := r.sendNative(ctx, nc, c); err != nil {
				return err
			}
		}
		more := false
		select {
		case queue, more = <-windows:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !more {
			return nil
		}
	}
}

// nativeBatchConn is the one connection a native batch writes on, and its
// client ID (for the wait after a failure).
type nativeBatchConn struct {
	r  *batchRun
	cn *redis.Conn
	id int64
}

func (nc *nativeBatchConn) get(ctx context.Context) (*redis.Conn, error) {
	if nc.cn != nil {
		return nc.cn, nil
	}
	var node *redis.Client
	switch c := nc.r.s.Conn.Client().(type) {
	case *redis.ClusterClient:
		n, err := c.MasterForKey(ctx, nc.r.spec.Template.Stream)
		if err != nil {
			return nil, err
		}
		node = n
	case *redis.Client:
		node = c
	default:
		return nil, exit.New(exit.Internal, nc.r.what(), "client %T", c)
	}
	cn := node.Conn()
	// Named for another run of the batch (stoppedRun); a user who may not
	// name it goes on without.
	_ = cn.ClientSetName(ctx, batchClientName(nc.r.run)).Err()
	id, err := cn.ClientID(ctx).Result()
	var reply redis.Error
	if err != nil && !errors.As(err, &reply) {
		cn.Close()
		return nil, err
	}
	// (A server without CLIENT: id 0, and lost does not wait.)
	nc.cn, nc.id = cn, id
	return cn, nil
}

// lost gives up the connection after a failure and waits until the server
// no longer lists it, so that nothing it sent can still run (bounded; a
// user who may not run CLIENT LIST, or a server without it, goes on without
// the wait: an EXEC of it that runs late finds the record it WATCHed moved
// by the chunk sent again, and aborts).
func (nc *nativeBatchConn) lost(ctx context.Context) error {
	if nc.cn == nil {
		return nil
	}
	nc.cn.Close()
	nc.cn = nil
	if nc.id == 0 {
		return nil
	}
	deadline := time.Now().Add(10 * nc.r.s.Conn.Timeout)
	for time.Now().Before(deadline) {
		cctx, cancel := nc.r.s.Conn.Ctx(ctx)
		list, err := nc.r.s.Conn.Client().ClientList(cctx).Result()
		cancel()
		switch {
		case err != nil && (exit.Classify(err) == exit.Permission || errors.As(err, new(redis.Error)) && !exit.Migrating(err.Error())):
			return nil
		case err != nil:
			return err
		case !strings.Contains(list, "id="+strconv.FormatInt(nc.id, 10)+" "):
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return exit.New(exit.Unavailable, nc.r.what(), "the connection that failed is still open on the server")
}

func (nc *nativeBatchConn) close() {
	if nc.cn != nil {
		nc.cn.Close()
	}
}

// sendNative commits one chunk, with recovery after network errors.
func (r *batchRun) sendNative(ctx context.Context, nc *nativeBatchConn, c *chunk) error {
	recovering := false
	op := func() error {
		if recovering {
			if err := nc.lost(ctx); err != nil {
				return err
			}
			p, _, err := r.readProgress(ctx)
			if err != nil {
				return err
			}
			c.retried = true
			if done, err := r.settleNative(ctx, c, p); done || err != nil {
				return err
			}
			recovering = false
		}
		cn, err := nc.get(ctx)
		if err != nil {
			recovering = true
			return err
		}
		res, err := r.nativeChunk(ctx, cn, c)
		var moved *errProgressMoved
		switch {
		case errors.As(err, &moved):
			// Nothing ran: the record stands elsewhere. It says what is
			// committed, and whether by another run.
			p, _, err := r.readProgress(ctx)
			if err != nil {
				return err
			}
			if done, err := r.settleNative(ctx, c, p); done || err != nil {
				return err
			}
			return errRecordSettled
		case err != nil && redisconn.Retryable(err):
			recovering = true
			return err
		}
		var unknown *errOutcomesUnknown
		lost := errors.As(err, &unknown) // committed, what each was not known
		if lost {
			err = unknown.then
		}
		if cerr := r.confirm(c, res, lost); cerr != nil {
			return cerr
		}
		if d := r.spec.Durability; d.On() {
			wctx, cancel := context.WithTimeout(ctx, r.s.Conn.Timeout+d.Timeout)
			ack := r.s.Conn.WaitOn(wctx, cn, d)
			cancel()
			if serr := r.settle(ack); serr != nil {
				return serr
			}
		}
		if err != nil {
			return r.lineError(c, len(res), err)
		}
		return nil
	}
	for {
		err := redisconn.WithRetriesWithin(ctx, r.spec.Retries, r.s.Conn.Timeout, op, r.spec.OnRetry)
		if err != errRecordSettled {
			return r.unavailable(err)
		}
	}
}

// errRecordSettled: a chunk found the record moved, settled what it counts,
// and goes again with the rest.
var errRecordSettled = errors.New("the chunk was settled against its progress record")

// settleNative settles a chunk against the progress record p read before
// it goes (again): the lines p counts are committed (their IDs are not
// known: a MULTI keeps no replies), and done reports a chunk p counts
// whole; a chunk counted in part is cut to the rest. Lines committed by
// another run are taken only once that run has stopped (stoppedRun): two
// live runs of one batch are told apart, and the one behind stops with
// 75.
func (r *batchRun) settleNative(ctx context.Context, c *chunk, p Progress) (done bool, err error) {
	switch {
	case p.Line == c.from:
		return false, nil
	case p.Line < c.from:
		e := exit.New(exit.Data, r.what(), "the progress record stands at line %d, not %d", p.Line, c.from)
		e.Hint = "it was deleted or expired meanwhile, or the stream was deleted: check the stream before sending the rest"
		return false, e
	}
	if p.Run != "" && p.Run != r.run {
		ok, again, err := r.stoppedRun(ctx, p)
		if err != nil {
			return false, err
		}
		if !ok {
			return false, r.otherRunBusy(c, p)
		}
		if again.Line != p.Line {
			return r.settleNative(ctx, c, again)
		}
	}
	n := 0
	for n < len(c.lines) && c.lines[n] <= p.Line {
		n++
	}
	res := make([]AddResult, n)
	for i := range res {
		res[i] = AddResult{IID: c.reqs[i].IID, Mode: ModeNative}
	}
	if p.Line >= c.to {
		return true, r.confirm(c, res, true)
	}
	head := *c
	head.reqs, head.lines = c.reqs[:n], c.lines[:n]
	head.to = p.Line
	if err := r.confirm(&head, res, true); err != nil {
		return false, err
	}
	c.reqs, c.lines, c.from = c.reqs[n:], c.lines[n:], p.Line
	return false, nil
}

// nativeChunk sends one chunk's MULTI/EXEC and reads its adds.
//
// A MULTI cannot compare before it writes, and a command that fails in it
// at EXEC does not stop the others: the progress record's move would run
// although an add failed. So, before the MULTI, the record is WATCHed and
// must stand where the chunk starts (compare-and-set, as the emulated
// script does: another run's move aborts the EXEC), and the stream must be
// a stream (or absent, unless NOMKSTREAM): what fails at once is refused
// with nothing written. The stream itself is not WATCHed: every add of
// another producer would abort the EXEC (measured on Redis 7.0 over a
// unix socket: 1.7 aborted EXECs per chunk with others adding 1,000/s, and
// no progress at all beside a producer adding flat out). An add that fails
// at EXEC all the same (the key replaced or deleted since the check, an
// ACL changed, an exhausted ID space) has the record put back at once, to
// the last add written (restore, compare-and-set).
func (r *batchRun) nativeChunk(ctx context.Context, cn *redis.Conn, c *chunk) ([]AddResult, error) {
	cctx, cancel := r.s.bound(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		res, err := r.nativeChunkOnce(cctx, cn, c)
		if !errors.Is(err, redis.TxFailedErr) {
			return res, err
		}
		// Another client wrote the record between the check and EXEC:
		// nothing of the chunk ran.
		if attempt == maxWatchAborts {
			e := exit.New(exit.Busy, r.what(), "the progress record was written by another client between each check and EXEC of the chunk after line %d (%d tries)", c.from, attempt+1)
			e.Hint = "nothing of that chunk was written, and the progress record knows exactly how far the batch got: run the same command again to resume"
			return nil, e
		}
		select {
		case <-cctx.Done():
			return nil, cctx.Err()
		case <-time.After(time.Duration(attempt+1) * time.Millisecond):
		}
	}
}

// maxWatchAborts bounds the EXECs of one chunk that a WATCHed key aborts.
const maxWatchAborts = 50

// nativeRecordState is what the check before a native chunk reads of its
// progress record.
type nativeRecordState struct {
	line, digestLine int64
	digest, run      string
}

// nativeChunkOnce is one check and MULTI/EXEC of a chunk; redis.TxFailedErr
// when a WATCHed key changed in between (nothing ran).
func (r *batchRun) nativeChunkOnce(ctx context.Context, cn *redis.Conn, c *chunk) ([]AddResult, error) {
	stream := r.spec.Template.Stream
	var typ *redis.StatusCmd
	var rec *redis.SliceCmd
	var emulated *redis.IntCmd
	_, err := cn.Pipelined(ctx, func(p redis.Pipeliner) error {
		// The stream's emulated state keys are WATCHed too: a chunk goes
		// through the upgrade guard iff they exist (guard.go), and state
		// that appears after this check aborts the EXEC.
		p.Do(ctx, "WATCH", r.key, r.layout.Meta, r.layout.PIDs)
		typ = p.Type(ctx, stream)
		rec = p.HMGet(ctx, r.key, "line", "run", "digest", "digest-line")
		emulated = p.Exists(ctx, r.layout.Meta, r.layout.PIDs)
		return nil
	})
	if err != nil {
		r.unwatch(ctx, cn)
		return nil, err
	}
	before := recordState(rec.Val())
	refuse := func(err error) ([]AddResult, error) {
		if uerr := r.unwatch(ctx, cn); uerr != nil {
			return nil, uerr
		}
		return nil, err
	}
	switch t := typ.Val(); {
	case t != "stream" && t != "none":
		return refuse(errors.New("WRONGTYPE Operation against a key holding the wrong kind of value"))
	case t == "none" && c.reqs[0].NoMkStream:
		return refuse(errNoStream())
	case before.line != c.from:
		return refuse(&errProgressMoved{Line: before.line})
	}
	var guard *guardedChunk
	if emulated.Val() > 0 {
		g, err := r.s.guardChunk(ctx, stream, c.reqs)
		if err != nil {
			return refuse(err)
		}
		guard = g
	}
	var tm *redis.TimeCmd
	var infoBefore, infoAfter *redis.XInfoStreamCmd
	adds := make([]*redis.StringCmd, len(c.reqs))
	now := time.Now().UnixMilli() // an informational time: nothing is decided on it
	var queued []redis.Cmder
	queued, err = cn.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if guard != nil {
			// The stream holds emulated state: the upgrade guard's
			// script decides each add (guard.go).
			guard.queue(ctx, p)
		} else {
			// TIME and the IDs that * generates use one snapshot of the
			// clock in a MULTI/EXEC, as in a script: see tellNative.
			tm = p.Time(ctx)
			infoBefore = p.XInfoStream(ctx, stream)
			for i, req := range c.reqs {
				adds[i] = p.XAdd(ctx, nativeXAddArgs(req))
			}
			infoAfter = p.XInfoStream(ctx, stream)
		}
		h := []any{"line", c.to, "digest", c.digest, "digest-line", c.to, "batch", r.spec.ID, "pid", r.spec.Template.PID,
			"stream", stream, "mode", "native", "updated", now}
		if c.from == 0 {
			h = append(h, "started", now)
		}
		expires := now + r.spec.TTL.Milliseconds()
		h = append(h, "expires", expires, "run", r.run)
		p.HSet(ctx, r.key, h...)
		p.ZAdd(ctx, r.layout.Batches, redis.Z{Score: float64(expires), Member: r.key})
		return nil
	})
	if errors.Is(err, redis.TxFailedErr) {
		return nil, err
	}
	var reply redis.Error
	if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &reply) {
		return nil, err
	}
	if redis.IsExecAbortError(err) && guard != nil {
		// The guard's EVAL was refused when queued: nothing ran. (When
		// another command was, the search below names it: the record's
		// HSET meets OOM where EVAL, which checks memory as it runs, did
		// not.)
		if gerr := guard.cmd.Err(); gerr != nil && !redis.IsExecAbortError(gerr) {
			if scriptsRefused(gerr) {
				return nil, errStateNeedsScripts(stream)
			}
			return nil, scriptErr(gerr)
		}
	}
	if redis.IsExecAbortError(err) {
		// A command was refused when queued (OOM, NOPERM, MOVED): nothing
		// ran, and its own error says why. Any command of the MULTI: in a
		// slot being migrated the first (TIME aside) meets ASK or TRYAGAIN,
		// which the caller waits out.
		for _, q := range queued {
			if qerr := q.Err(); qerr != nil && !redis.IsExecAbortError(qerr) {
				return nil, qerr
			}
		}
		return nil, err
	}
	out := make([]AddResult, 0, len(c.reqs))
	var addErr error
	if guard != nil {
		// The script's error (a refusal in its first part) ran nothing
		// of the adds; its stop says which add failed and why.
		if gerr := guard.cmd.Err(); gerr != nil {
			addErr = scriptErr(gerr)
		} else {
			out, addErr = parseGuardReply(guard.cmd.Val(), guard.iids, c.reqs)
		}
		if addErr != nil {
			if rerr := r.restore(ctx, cn, c, before, len(out)); rerr != nil {
				return out, rerr
			}
		}
		return out, addErr
	}
	ids := make([]string, 0, len(c.reqs))
	for i, req := range c.reqs {
		id, err := adds[i].Result()
		if errors.Is(err, redis.Nil) {
			addErr = errNoStream()
			break
		} else if err != nil {
			addErr = err
			break
		}
		ids = append(ids, id)
		out = append(out, AddResult{ID: id, IID: req.IID, Mode: ModeNative})
	}
	if addErr != nil {
		// EXEC ran the record's move although an add failed.
		if rerr := r.restore(ctx, cn, c, before, len(out)); rerr != nil {
			return out, rerr
		}
	}
	if len(out) == 0 {
		return out, addErr
	}
	// What each add was, from the stream before and after them.
	last, added0, dups0 := "0-0", int64(0), int64(0)
	if v, err := infoBefore.Result(); err == nil {
		last, added0, dups0 = v.LastGeneratedID, v.EntriesAdded, v.IIDsDuplicates
	}
	v, err := infoAfter.Result()
	t, terr := tm.Result()
	if err = errors.Join(err, terr); err != nil {
		return out, exit.New(exit.Internal, "XINFO STREAM and TIME around the adds", "%v", err)
	}
	dup, sure := tellNative(last, t.UnixMilli(), ids, v.EntriesAdded-added0, v.IIDsDuplicates-dups0)
	for i := range out {
		out[i].Duplicate = dup[i]
	}
	if !sure {
		return out, &errOutcomesUnknown{then: addErr}
	}
	if addErr != nil {
		return out, addErr
	}
	return out, r.s.nativeOriginals(ctx, stream, out)
}

// tellNative tells which of the IDs that XADD ... IDMP * replied in one
// atomic step (a MULTI/EXEC) were of duplicates: none when the stream's
// entries-added grew by every add and its iids-duplicates did not; else
// each add that replied the ID * generates next (after the stream's
// last-generated-id last before the adds, at the step's frozen clock
// nowMS, as lua/stream_native_batch.lua tells them) made its entry, and
// the others are duplicates. sure is false when the counters do not agree
// with that (see the script's comment: the stream's last ID set back).
func tellNative(last string, nowMS int64, ids []string, added, dups int64) (dup []bool, sure bool) {
	dup = make([]bool, len(ids))
	if added == int64(len(ids)) && dups == 0 {
		return dup, true
	}
	var n int64
	expect := nextStreamID(last, nowMS)
	for i, id := range ids {
		if id == expect {
			n++
			expect = nextStreamID(id, nowMS)
		} else {
			dup[i] = true
		}
	}
	return dup, n == added && int64(len(ids))-n == dups
}

// nextStreamID is the ID XADD * generates after id at the clock nowMS
// (ms): nowMS-0 when later than id's ms, else id's next sequence, or the
// next ms's first when the sequence is at its end.
func nextStreamID(id string, nowMS int64) string {
	msS, seqS, _ := strings.Cut(id, "-")
	ms, err1 := strconv.ParseUint(msS, 10, 64)
	seq, err2 := strconv.ParseUint(seqS, 10, 64)
	switch {
	case err1 != nil || err2 != nil:
		return ""
	case nowMS >= 0 && ms < uint64(nowMS):
		return strconv.FormatInt(nowMS, 10) + "-0"
	case seq == math.MaxUint64:
		return strconv.FormatUint(ms+1, 10) + "-0"
	}
	return msS + "-" + strconv.FormatUint(seq+1, 10)
}

func recordState(v []any) nativeRecordState {
	str := func(i int) string { s, _ := v[i].(string); return s }
	num := func(i int) int64 { n, _ := strconv.ParseInt(str(i), 10, 64); return n }
	if len(v) < 4 {
		return nativeRecordState{}
	}
	return nativeRecordState{line: num(0), run: str(1), digest: str(2), digestLine: num(3)}
}

// unwatch ends a check that does not go on to a MULTI.
func (r *batchRun) unwatch(ctx context.Context, cn *redis.Conn) error {
	return cn.Do(ctx, "UNWATCH").Err()
}

// restore puts the progress record back after an EXEC whose record move
// ran although the add of item done failed: to the line of the last add
// written before it, with the digest it had (compare-and-set: only while
// the record still says what this chunk wrote).
func (r *batchRun) restore(ctx context.Context, cn *redis.Conn, c *chunk, before nativeRecordState, done int) error {
	line := c.from
	if done > 0 {
		line = c.lines[done-1]
	}
	var rec *redis.SliceCmd
	_, err := cn.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "WATCH", r.key)
		rec = p.HMGet(ctx, r.key, "line", "run", "digest", "digest-line")
		return nil
	})
	now := recordState(rec.Val())
	if err == nil && (now.line != c.to || now.run != r.run) {
		err = r.unwatch(ctx, cn)
		if err == nil {
			return nil // moved on by someone else: theirs to tell
		}
	}
	if err == nil {
		_, err = cn.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if line == 0 {
				p.Del(ctx, r.key)
				p.ZRem(ctx, r.layout.Batches, r.key)
				return nil
			}
			p.HSet(ctx, r.key, "line", line, "digest", before.digest, "digest-line", before.digestLine)
			return nil
		})
	}
	if err != nil {
		e := exit.New(exit.Internal, r.what(), "an add failed inside the MULTI of the chunk after line %d, and its progress record could not be put back from line %d to line %d: %v", c.from, c.to, line, err)
		e.Hint = fmt.Sprintf("the record counts lines that were not written: before a rerun, set field \"line\" of %s to %d by hand (HSET), or the rerun skips them", r.key, line)
		return e
	}
	return nil
}
