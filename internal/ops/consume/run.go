package consume

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/claimrun"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/redis/go-redis/v9"
)

// Outcome is what became of an entry this consumer took.
type Outcome string

// The outcomes, in the order a summary gives them.
const (
	Completed    Outcome = "completed"     // ran, exit 0: COMPLETED and acknowledged, one step
	Failed       Outcome = "failed"        // ran, non-zero: FAILED, pending for a retry after --retry-delay
	DeadLettered Outcome = "dead-lettered" // out of attempts: added to --dead-letter, acknowledged
	Exhausted    Outcome = "exhausted"     // out of attempts, not dead-lettered (none given, or it failed): pending
	Skipped      Outcome = "skipped"       // its claim was COMPLETED: acknowledged, not run
	Lost         Outcome = "lost"          // the claim was lost, or its lease could not be kept: stopped, pending
	Unrecorded   Outcome = "unrecorded"    // ran, but its outcome could not be recorded: pending until the lease passes
)

// Outcomes are the outcomes in order.
var Outcomes = []Outcome{Completed, Failed, DeadLettered, Exhausted, Skipped, Lost, Unrecorded}

// Result is one entry's outcome.
type Result struct {
	ID           string
	Outcome      Outcome
	Attempt      int64
	ExitCode     int // the handler's; -1 when it did not run
	Duration     time.Duration
	Durable      bool // a completion known to be on disk (WAITAOF, or appendfsync always)
	DeadLetterID string
	Error        string
}

// Summary is what a run's outcomes do not say.
type Summary struct {
	LeftAlone  int64  // entries whose claim a live consumer holds
	Durability string // what makes completions durable: "WAITAOF", "appendfsync always", or "" (nothing known)
}

type entry struct {
	id     string
	fields []string
}

type retry struct {
	entry
	due time.Time
}

type runner struct {
	p        Params
	conn     *redisconn.Conn
	what     string
	base     string          // the claim keys' (idmp.SlotBase)
	streams  *stream.Streams // the dead-letter adds
	aof      redisconn.Durability
	always   bool // appendfsync always, without WAITAOF
	onResult func(Result)
	warn     func(string)

	dlMu    sync.Mutex // the dead-letter adds, one at a time (Streams is not for concurrent use)
	mu      sync.Mutex // what the handlers share
	sum     Summary
	done    int64 // entries reported
	retries []retry
	running map[string]bool // the entries whose handle runs
	err     error           // the first that stops the run
	cursor  string
}

// Run consumes until ctx is done (then the handlers running finish), Count
// entries, or with UntilEmpty nothing is left it may take (docs/consume.md).
// onResult and warn are called one at a time, from any goroutine.
func Run(ctx context.Context, c *redisconn.Conn, p Params, onResult func(Result), warn func(string)) (Summary, error) {
	r := &runner{p: p, conn: c, what: "consume " + strconv.Quote(p.Stream), onResult: onResult, warn: warn, cursor: "0-0",
		running: map[string]bool{}}
	err := r.prepare(ctx)
	if err == nil {
		if err = r.loop(ctx); err == nil {
			r.leave(context.WithoutCancel(ctx))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sum, err
}

func (r *runner) warnf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warn(fmt.Sprintf(format, args...))
}

func (r *runner) stop(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// loop reads, reclaims and retries entries while workers are free, each
// handled in a goroutine of its own.
func (r *runner) loop(ctx context.Context) error {
	p := r.p
	finished := make(chan struct{}, p.Workers)
	running := 0
	start := func(es []entry) {
		for _, e := range es {
			running++
			r.mu.Lock()
			r.running[e.id] = true
			r.mu.Unlock()
			go func() {
				defer func() { finished <- struct{}{} }()
				r.handle(ctx, e)
				r.mu.Lock()
				delete(r.running, e.id)
				r.mu.Unlock()
			}()
		}
	}
	reclaimEvery := max(p.Lease/2, 100*time.Millisecond)
	lastReclaim, idleSince := time.Time{}, time.Now()
	for {
		r.mu.Lock()
		err, done := r.err, r.done
		r.mu.Unlock()
		if err != nil || ctx.Err() != nil || p.Count > 0 && done >= p.Count {
			for ; running > 0; running-- {
				<-finished
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.err
		}
		room := p.Workers - running
		if p.Count > 0 {
			room = min(room, int(p.Count-done)-running)
		}
		if room <= 0 {
			select {
			case <-finished:
				running--
			case <-ctx.Done():
			}
			continue
		}
		if e, ok := r.dueRetry(); ok {
			start([]entry{e})
			continue
		}
		if time.Since(lastReclaim) >= reclaimEvery {
			lastReclaim = time.Now()
			es, err := r.reclaim(ctx, room)
			if err != nil {
				r.stop(err)
			}
			start(es)
			continue
		}
		next, _ := r.nextRetry()
		wait := min(p.Block, time.Second, r.conn.Timeout/2, time.Until(lastReclaim.Add(reclaimEvery)), next)
		es, err := r.read(ctx, room, max(wait, time.Millisecond))
		if err != nil {
			r.stop(err)
			continue
		}
		start(es)
		for ; len(finished) > 0; running-- { // only this loop receives: never blocks
			<-finished
		}
		if _, retrying := r.nextRetry(); len(es) > 0 || running > 0 || retrying {
			idleSince = time.Now() // a retry of this consumer's is to come
		} else if p.UntilEmpty && time.Since(idleSince) >= p.Block {
			// Nothing new for --block: a whole XAUTOCLAIM pass, now, says
			// whether a dead consumer left anything.
			r.cursor = "0-0"
			for {
				es, err := r.reclaim(ctx, room)
				if err != nil || len(es) > 0 || r.cursor == "0-0" {
					if err == nil && len(es) == 0 {
						return nil
					}
					r.stop(err)
					start(es)
					break
				}
			}
		}
	}
}

// leave deletes this consumer from the group when nothing is pending with
// it (the reading is over: nothing can be added), so that hostname:pid
// names do not pile up. A refusal is a warning: the entries were handled.
func (r *runner) leave(ctx context.Context) {
	p, what := r.p, "XPENDING"
	pending, err := cmd(ctx, r.conn, what, p.Stream, p.Group, "-", "+", 1, p.Consumer)
	if list, ok := pending.([]any); err == nil && ok && len(list) == 0 {
		what = "XGROUP DELCONSUMER"
		_, err = cmd(ctx, r.conn, "XGROUP", "DELCONSUMER", p.Stream, p.Group, p.Consumer)
	}
	if err != nil {
		r.warnf("%s: consumer %q stays in group %q: %s: %v", r.what, p.Consumer, p.Group, what, err)
	}
}

// dueRetry pops a retry of this consumer's that is due.
func (r *runner) dueRetry() (entry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, rt := range r.retries {
		if !rt.due.After(time.Now()) {
			r.retries = slices.Delete(r.retries, i, i+1)
			return rt.entry, true
		}
	}
	return entry{}, false
}

// nextRetry is how long until this consumer's next retry, if any.
func (r *runner) nextRetry() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := time.Duration(math.MaxInt64)
	for _, rt := range r.retries {
		next = min(next, time.Until(rt.due))
	}
	return next, len(r.retries) > 0
}

func (r *runner) later(e entry, after time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retries = append(r.retries, retry{e, time.Now().Add(after)})
}

// read is XREADGROUP of up to n new entries, waiting up to wait.
func (r *runner) read(ctx context.Context, n int, wait time.Duration) ([]entry, error) {
	v, err := r.call(ctx, "XREADGROUP", "GROUP", r.p.Group, r.p.Consumer, "COUNT", n, "BLOCK", wait.Milliseconds(), "STREAMS", r.p.Stream, ">")
	if s, _ := v.([]any); len(s) == 1 { // [[stream, entries]]
		s, _ = s[0].([]any)
		if len(s) == 2 {
			return entries(s[1]), nil
		}
	}
	return nil, err
}

// reclaim is XAUTOCLAIM of up to n entries idle longer than the lease,
// from the cursor (a pass ends when it is 0-0 again), less this consumer's
// own: a handler that runs longer than the lease renews its claim, not its
// entry's idle time, and a failed entry waits here for its retry. They are
// noted before the call: one that ends meanwhile is not taken again.
func (r *runner) reclaim(ctx context.Context, n int) ([]entry, error) {
	r.mu.Lock()
	mine := maps.Clone(r.running)
	for _, rt := range r.retries {
		mine[rt.id] = true
	}
	r.mu.Unlock()
	v, err := r.call(ctx, "XAUTOCLAIM", r.p.Stream, r.p.Group, r.p.Consumer, r.p.Lease.Milliseconds(), r.cursor, "COUNT", n)
	rep, _ := v.([]any)
	if len(rep) < 2 { // [cursor, entries, deleted IDs (7.0+)]
		return nil, err
	}
	r.cursor, _ = rep[0].(string)
	return slices.DeleteFunc(entries(rep[1]), func(e entry) bool { return mine[e.id] }), nil
}

// call sends a read of the group: nothing when interrupted; a group or a
// stream deleted meanwhile is not found (66).
func (r *runner) call(ctx context.Context, args ...any) (any, error) {
	v, err := cmd(ctx, r.conn, args...)
	switch {
	case errors.Is(err, redis.Nil), err != nil && ctx.Err() != nil:
		return nil, nil
	case err != nil && strings.HasPrefix(err.Error(), "NOGROUP"):
		return nil, &exit.Error{Code: exit.NotFound, What: r.what, Err: fmt.Errorf("%s: %w", args[0], err), Hint: "the group or the stream was deleted"}
	case err != nil:
		return nil, exit.Wrap(fmt.Errorf("%s: %w", args[0], err), r.what)
	}
	return v, nil
}

// entries reads [[id, [field, value, ...]], ...], without the entries
// deleted since delivered (nil, Redis 6.2).
func entries(v any) []entry {
	list, _ := v.([]any)
	out := make([]entry, 0, len(list))
	for _, x := range list {
		e, _ := x.([]any)
		if len(e) != 2 {
			continue
		}
		id, _ := e[0].(string)
		flat, ok := e[1].([]any)
		if id == "" || !ok {
			continue
		}
		fields := make([]string, len(flat))
		for i, f := range flat {
			fields[i], _ = f.(string)
		}
		out = append(out, entry{id, fields})
	}
	return out
}

// handle takes one entry through its claim: runs it, acknowledges it
// done, retries it later, dead-letters it, or leaves it to a live owner.
func (r *runner) handle(ctx context.Context, e entry) {
	if ctx.Err() != nil {
		return // stopped before it began: pending, unclaimed
	}
	ctx = context.WithoutCancel(ctx) // a claim taken is seen through
	p, start := r.p, time.Now()
	key := ClaimKey(r.base, p.Group, e.id)
	acking := claim.Acking(claim.Entry{Stream: p.Stream, Group: p.Group, ID: e.id})
	res, err := claim.Acquire(ctx, r.conn, claim.AcquireParams{Key: key, Owner: p.Consumer, Lease: p.Lease,
		MaxAttempts: p.MaxAttempts, RetryDelay: p.RetryDelay}, acking)
	if err != nil {
		r.stop(exit.Wrap(err, r.what+" "+e.id))
		return
	}
	out := Result{ID: e.id, Attempt: res.Record.Attempts, ExitCode: -1}
	switch res.Outcome {
	case claim.Busy:
		r.mu.Lock()
		r.sum.LeftAlone++
		r.mu.Unlock()
		return
	case claim.Delayed:
		r.later(e, time.Duration(res.LeaseLeftMs)*time.Millisecond)
		return
	case claim.Done:
		out.Outcome = Skipped
	case claim.Exhausted:
		r.deadLetter(ctx, e, res.Record.Attempts, res.Record.Error, &out)
	case claim.Mismatch:
		r.stop(exit.New(exit.Internal, r.what+" "+e.id, "a fingerprint on the claim %q, which consume never sets", key))
		return
	default:
		out.Attempt = res.Attempt
		if res.Attempt > p.MaxAttempts {
			// Taken over past the last attempt: the one before died with
			// its consumer (a poison entry that kills it ends here too).
			why := fmt.Sprintf("attempt %d, taken over from %s, is past --max-attempts %d", res.Attempt, res.PreviousOwner, p.MaxAttempts)
			if _, err := claim.Fail(ctx, r.conn, key, res.Token, why, 0, false); err != nil {
				out.Outcome, out.Error = Unrecorded, err.Error()
				break
			}
			r.deadLetter(ctx, e, res.Attempt, why, &out)
			break
		}
		r.run(ctx, e, key, res, start, acking, &out)
	}
	out.Duration = time.Since(start)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
	r.onResult(out)
}

// run runs the handler under the claim res took, as claim run does.
func (r *runner) run(ctx context.Context, e entry, key string, res claim.AcquireResult, sent time.Time, acking claim.Option, out *Result) {
	p := r.p
	g := claimrun.StartGuard(p.Output)
	defer func() { g.Release(); g.Reap() }()
	run, err := claimrun.Run(ctx, r.conn, claimrun.Params{Key: key, Token: res.Token, Attempt: res.Attempt, LeaseSent: sent,
		Lease: p.Lease, MaxResult: -1, What: r.what + " " + e.id,
		Complete: []claim.Option{acking, claim.Durably(r.aof, nil)},
		Env:      []string{"IDMPCTL_STREAM=" + p.Stream, "IDMPCTL_GROUP=" + p.Group, "IDMPCTL_ENTRY_ID=" + e.id},
		Command:  p.Command, Stdin: bytes.NewReader(entryJSON(p.Stream, e)), Stdout: p.Output, Stderr: p.Output, Guard: g})
	for _, w := range run.Warnings {
		r.warnf("%s", w)
	}
	out.ExitCode = run.ExitCode
	switch {
	case run.Recorded == claim.StatusCompleted:
		out.Outcome, out.Durable = Completed, r.always || r.aof.On() && run.Unacknowledged == ""
	case run.Recorded == claim.StatusFailed:
		out.Outcome, out.Error = Failed, fmt.Sprintf("exit status %d", run.ExitCode)
		if err != nil {
			out.Error = err.Error() // it did not start, or was stopped (SIGTTIN) and ended
		}
		if res.Attempt >= p.MaxAttempts {
			r.deadLetter(ctx, e, res.Attempt, out.Error, out)
		} else {
			r.later(e, p.RetryDelay)
		}
	case exit.Code(err) == exit.Lost:
		out.Outcome, out.Error = Lost, err.Error()
	default:
		out.Outcome, out.Error = Unrecorded, run.Unrecorded
		if err != nil {
			out.Error = err.Error()
		}
	}
}

// deadLetter adds the entry to the dead-letter stream with IDMP (pid the
// group, iid the entry's ID: a retry adds it once), then acknowledges it;
// without one it stays pending, exhausted. A failed add or XACK leaves it
// pending too, and stops the run: a refusal (NOPERM) does not pass by
// itself, and would refuse every entry out of attempts alike. Only an add
// refused for the entry's own size (stream.ErrTooBig) warns and goes on.
func (r *runner) deadLetter(ctx context.Context, e entry, attempts int64, why string, out *Result) {
	p := r.p
	out.Outcome, out.Error = Exhausted, why
	if p.DeadLetter == "" {
		r.warnf("%s: entry %s is out of attempts (%d of --max-attempts %d): it stays pending (no --dead-letter)", r.what, e.id, attempts, p.MaxAttempts)
		return
	}
	r.dlMu.Lock()
	added, err := r.streams.Add(ctx, stream.AddOptions{Retries: p.Retries}, r.deadLetterAdd(e, attempts, why))
	r.dlMu.Unlock()
	if errors.Is(err, stream.ErrTooBig) {
		// This entry's own size: the next one may go.
		r.warnf("%s: entry %s is out of attempts, and too big to dead-letter here: it stays pending (%v)", r.what, e.id, err)
		return
	}
	if err == nil {
		_, err = cmd(ctx, r.conn, "XACK", p.Stream, p.Group, e.id)
	}
	if err != nil {
		hint := "it stays pending, not acknowledged: a run that may add to --dead-letter adds it (once: IDMP) and acknowledges it, without running it again"
		if h := exit.Hint(err); h != "" {
			hint += "; " + h
		}
		r.stop(&exit.Error{Code: exit.Code(err), What: fmt.Sprintf("%s: entry %s is out of attempts", r.what, e.id), Err: err, Hint: hint})
		return
	}
	out.Outcome, out.DeadLetterID = DeadLettered, added[0].ID
}

// deadLetterAdd is the add of e to the dead-letter stream: its fields and
// where it came from, with IDMP (pid the group, iid the entry's ID).
func (r *runner) deadLetterAdd(e entry, attempts int64, why string) stream.AddRequest {
	p := r.p
	fields := append(slices.Clip(e.fields), "idmpctl-stream", p.Stream, "idmpctl-group", p.Group, "idmpctl-id", e.id,
		"idmpctl-attempts", strconv.FormatInt(attempts, 10), "idmpctl-error", why)
	return stream.AddRequest{Stream: p.DeadLetter, PID: p.Group, IID: e.id, Fields: fields}
}

// entryJSON is the handler's stdin, {"stream":...,"id":...,"fields":{...}}
// in the entry's order, in xadd --batch's JSON: a value that is not UTF-8
// is {"b64":"..."}; names that repeat or are not UTF-8 make fields pairs.
func entryJSON(name string, e entry) []byte {
	seen, pairs := map[string]bool{}, false
	for i := 0; i < len(e.fields); i += 2 {
		pairs = pairs || seen[e.fields[i]] || !utf8.ValidString(e.fields[i])
		seen[e.fields[i]] = true
	}
	form, open, close := `,%s:%s`, "{", "}"
	if pairs {
		form, open, close = `,[%s,%s]`, "[", "]"
	}
	var f []byte
	for i := 0; i+1 < len(e.fields); i += 2 {
		f = fmt.Appendf(f, form, jsonValue(e.fields[i]), jsonValue(e.fields[i+1]))
	}
	return fmt.Appendf(nil, `{"stream":%s,"id":%s,"fields":%s%s%s}`+"\n", jsonValue(name), jsonValue(e.id), open, bytes.TrimPrefix(f, []byte(",")), close)
}

func jsonValue(s string) []byte {
	if !utf8.ValidString(s) {
		return []byte(`{"b64":"` + base64.StdEncoding.EncodeToString([]byte(s)) + `"}`)
	}
	b, _ := json.Marshal(s)
	return b
}
