package keyspace

// purge --match PATTERN: SCAN picks candidates by a client-side decode; a
// server-side script then deletes each only if it is still exactly what was
// read (docs/claim.md: never FLUSHDB/FLUSHALL).

import (
	"cmp"
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/redis/go-redis/v9"
)

//go:embed lua/purge_recheck.lua
var recheckLua string

var recheckScript = redisconn.NewLua[recheckArgs](decodeRecheckReply, recheckLua)

// decodeRecheckReply reads the re-check's reply: an integer a key.
func decodeRecheckReply(v any) ([]int64, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, exit.New(exit.Internal, "purge re-check", "unexpected reply %v", v)
	}
	out := make([]int64, len(list))
	for i, e := range list {
		n, ok := e.(int64)
		if !ok {
			return nil, exit.New(exit.Internal, "purge re-check", "unexpected reply %v", v)
		}
		out[i] = n
	}
	return out, nil
}

// recheckArgs are lua/purge_recheck.lua's (see recheckCall).
type recheckArgs struct {
	Candidates []string `lua:"CANDIDATES,key,rest"`
	NLists     int      `lua:"NLISTS"`
	Body       []any    `lua:"BODY,rest"` // the field lists, then the keys' parts
}

const (
	// deleteChunkSize is how many candidates one re-check carries.
	deleteChunkSize = 500
	// maxDigestFields bounds the hash fields a re-check compares; beyond it
	// only the fields the decoders read are compared (with HLEN).
	maxDigestFields = 256
)

// PurgeOptions selects what Purge deletes. Filters combine with AND.
type PurgeOptions struct {
	Pattern   string           // SCAN MATCH glob; required
	Literal   bool             // match Pattern as a plain key name
	Statuses  []records.Status // only these statuses; empty: any
	Stale     bool             // only records flagged stale (PROCESSING past lease or deadline)
	OlderThan time.Duration    // only records whose updated (else created) time is at least this old; records without one never match
	NoTTL     bool             // only keys without a TTL
	AnyType   bool             // also keys that are not recognised records (unknown, streams, whole Camel sets)
	Force     bool             // also live records and locks whose TTL still runs (records.PurgeLive, records.PurgeBlocked)
	DryRun    bool             // delete nothing, report what would be deleted
	Limit     int64            // stop after this many candidates; 0: no limit
	MaxRate   float64          // deletions per second; 0: unlimited
	Count     int64            // SCAN COUNT hint; 0: DefaultScanCount
	// MaxValueBytes caps the read of a string; longer ones decode as
	// unknown and are deleted only with AnyType. 0: ScanMaxValue.
	MaxValueBytes int64
	Decode        records.DecodeOptions
	// Progress, when set, gets the running counts after each batch (never
	// concurrently).
	Progress func(PurgeSummary)
	// Backup, when set, durably saves each chunk before its delete is sent
	// (backup.go).
	Backup PurgeBackup
	// BeforeDelete, a test seam, sees each chunk's keys between the choice
	// and the server's re-check.
	BeforeDelete func(keys []string)
}

// Validate checks the options without a server (usage errors, 64).
func (o PurgeOptions) Validate() error {
	switch {
	case o.Pattern == "":
		return exit.Usagef("purge needs a pattern (--match)")
	case o.Limit < 0:
		return exit.Usagef("--limit must not be negative")
	case o.MaxRate < 0:
		return exit.Usagef("--max-rate must not be negative")
	case o.OlderThan < 0:
		return exit.Usagef("--older-than must not be negative")
	case slices.Contains(o.Statuses, records.Absent):
		return exit.Usagef("--status ABSENT matches nothing a purge can delete")
	}
	return nil
}

// PurgeOutcome is what happened to one candidate.
type PurgeOutcome string

// Outcomes.
const (
	PurgeDeleted     PurgeOutcome = "deleted"
	PurgeChanged     PurgeOutcome = "changed"      // changed or gone since it was read: kept
	PurgeLive        PurgeOutcome = "kept-live"    // live on the server's clock at the re-check: kept
	PurgeWouldDelete PurgeOutcome = "would-delete" // dry run
	purgeRefused     PurgeOutcome = "refused"      // its re-check answered an error (NOPERM): kept, its error reported
)

// PurgeItem is one candidate and its outcome.
type PurgeItem struct {
	Record  records.Record `json:"record"`
	Outcome PurgeOutcome   `json:"outcome"`
}

// PurgeSummary counts a purge. Scanned = Kept + Matched + PastLimit; without DryRun,
// Matched = Deleted + Changed (Changed counts the candidates the re-check
// kept: changed since they were read, or live on the server's clock).
type PurgeSummary struct {
	Scanned int64 `json:"scanned"` // keys SCAN returned
	Matched int64 `json:"matched"` // candidates: recognised and passing every filter
	Deleted int64 `json:"deleted"`
	Kept    int64 `json:"kept"`    // scanned but not candidates (filtered out, unrecognised, gone)
	Changed int64 `json:"changed"` // candidates the server re-check refused (changed, or live)
	// Unknown counts candidates whose re-check was sent but never answered
	// (a timeout, an interrupt): deleted or not, the purge did not learn.
	Unknown int64 `json:"unknown,omitempty"`
	// Limited says the scan stopped at Limit; PastLimit counts the
	// candidates it had read past it, left as they are.
	Limited   bool  `json:"limited,omitempty"`
	PastLimit int64 `json:"past_limit,omitempty"`
	// LocksKept counts the locks records.PurgeBlocked kept, LiveKept the
	// records records.PurgeLive kept (at the scan or the re-check); each
	// reason is the first one's.
	LocksKept  int64  `json:"locks_kept,omitempty"`
	LockReason string `json:"lock_reason,omitempty"`
	LiveKept   int64  `json:"live_kept"`
	LiveReason string `json:"live_reason,omitempty"`
}

// Purge deletes the records opts selects and calls emit for every candidate
// with its outcome (never concurrently, though a cluster's primaries are
// scanned concurrently). Stopped by an error, the summary counts what was done.
func Purge(ctx context.Context, c *redisconn.Conn, opts PurgeOptions, emit func(PurgeItem)) (PurgeSummary, error) {
	if err := opts.Validate(); err != nil {
		return PurgeSummary{}, err
	}
	if _, err := c.Capabilities(ctx); err != nil { // a cluster is purged node by node
		return PurgeSummary{}, err
	}
	p := &purger{c: c, opts: opts, emit: emit, want: recordStatusSet(opts.Statuses), chunk: deleteChunkSize,
		decoded: records.DecodedFieldsWith(opts.Decode)}
	if opts.MaxRate > 0 {
		p.limiter = &deleteLimiter{rate: opts.MaxRate}
		// Several small chunks a second rather than one burst a chunk.
		p.chunk = min(deleteChunkSize, max(1, int(opts.MaxRate/4)))
	}
	ro := readOptions{maxValue: opts.MaxValueBytes, decode: opts.Decode}
	err := scanNodes(ctx, c, scanMatch(opts.Pattern, opts.Literal), opts.Count, ro, p.batch)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sum.LiveKept > 1 {
		// One record's reason (its time left) would speak for all of them.
		p.sum.LiveReason = "PROCESSING within their lease or deadline: their workers may be running; --force deletes them now"
	}
	return p.sum, exit.Wrap(err, "purge")
}

type purger struct {
	c       *redisconn.Conn
	opts    PurgeOptions
	emit    func(PurgeItem)
	want    map[records.Status]bool
	chunk   int
	limiter *deleteLimiter
	decoded []string

	mu  sync.Mutex
	sum PurgeSummary
}

// batch handles one SCAN batch as read: choose, re-check and delete.
func (p *purger) batch(ctx context.Context, keys []string, reads []keyRead) error {
	cands := reads[:0] // chosen in place: the batch's reads are this call's
	var locks, live int64
	var lockReason, liveReason string
	for i := range reads {
		switch ok, kept, reason := p.selects(&reads[i]); {
		case ok:
			cands = append(cands, reads[i])
		case kept == keptLock:
			locks++
			lockReason = cmp.Or(lockReason, reason)
		case kept == keptLive:
			live++
			liveReason = cmp.Or(liveReason, reason)
		}
	}
	p.mu.Lock()
	p.sum.Scanned += int64(len(keys))
	p.sum.LocksKept += locks
	p.sum.LockReason = cmp.Or(p.sum.LockReason, lockReason)
	p.sum.LiveKept += live
	p.sum.LiveReason = cmp.Or(p.sum.LiveReason, liveReason)
	p.sum.Kept += int64(len(keys) - len(cands))
	if l := p.opts.Limit; l > 0 && p.sum.Matched+int64(len(cands)) >= l {
		p.sum.PastLimit += p.sum.Matched + int64(len(cands)) - l
		cands = cands[:l-p.sum.Matched]
		p.sum.Limited = true
	}
	p.sum.Matched += int64(len(cands))
	if p.opts.DryRun {
		for _, rd := range cands {
			p.report(PurgeItem{Record: rd.rec, Outcome: PurgeWouldDelete})
		}
	}
	limited := p.sum.Limited
	p.mu.Unlock()

	if !p.opts.DryRun {
		for chunk := range slices.Chunk(cands, p.chunk) {
			if err := p.deleteChunk(ctx, chunk); err != nil {
				return err
			}
		}
	}
	p.mu.Lock()
	if p.opts.Progress != nil {
		p.opts.Progress(p.sum)
	}
	p.mu.Unlock()
	if limited {
		return errStopScan
	}
	return nil
}

// keptKind says why a candidate stays.
type keptKind int

const (
	keptFiltered keptKind = iota // it did not pass the filters
	keptLock                     // a lock (records.PurgeBlocked)
	keptLive                     // live work (records.PurgeLive)
)

// selects is the client-side choice of a candidate, at the server time of
// its read; one kept only by the lock or the live rule says which, and why.
func (p *purger) selects(rd *keyRead) (bool, keptKind, string) {
	r, o := rd.rec, p.opts
	last := r.LastActivityMs()
	switch {
	case r.Format == records.FormatNone, // gone since SCAN
		r.Key == "", // restore refuses the empty name: its backup could not undo it
		!o.AnyType && !r.Recognised(),
		p.want != nil && !p.want[r.Status] && r.Status != records.Locked,
		o.Stale && !r.HasFlag(records.FlagStale),
		o.NoTTL && r.TTLms != -1,
		o.OlderThan > 0 && (last <= 0 || rd.nowMs-last < o.OlderThan.Milliseconds()):
		return false, keptFiltered, ""
	}
	flags := records.PurgeFlags{Locked: p.want[records.Locked], Stale: o.Stale, Force: o.Force, OlderThan: o.OlderThan > 0}
	if reason, blocked := r.PurgeBlocked(flags); blocked {
		return false, keptLock, reason
	}
	if reason, blocked := r.PurgeLive(flags); blocked {
		return false, keptLive, reason
	}
	return true, keptFiltered, ""
}

// report calls emit; p.mu is held.
func (p *purger) report(it PurgeItem) {
	if p.emit != nil {
		p.emit(it)
	}
}

// deleteChunk re-checks and deletes one chunk of candidates.
func (p *purger) deleteChunk(ctx context.Context, chunk []keyRead) error {
	if err := p.limiter.wait(ctx, len(chunk)); err != nil {
		return err
	}
	if p.opts.BeforeDelete != nil {
		p.opts.BeforeDelete(keysOf(chunk))
	}
	if err := p.saveBackup(ctx, chunk); err != nil {
		return err
	}
	outcomes, err := p.recheck(ctx, chunk)
	// The re-check's error is the one to report; a failed mark fails the
	// backup's Close, leaving the file without its end line.
	err = cmp.Or(err, p.markKept(chunk, outcomes))
	p.mu.Lock()
	defer p.mu.Unlock()
	if outcomes == nil {
		p.sum.Unknown += int64(len(chunk))
		return err
	}
	for i, outcome := range outcomes {
		switch outcome {
		case purgeRefused:
			continue
		case PurgeDeleted:
			p.sum.Deleted++
		case PurgeLive:
			p.sum.Changed++
			p.sum.LiveKept++
			p.sum.LiveReason = cmp.Or(p.sum.LiveReason, "live on the server's clock at the re-check; --force deletes it")
		default:
			p.sum.Changed++
		}
		p.report(PurgeItem{Record: chunk[i].rec, Outcome: outcome})
	}
	return err
}

// recheckOutcomes are the re-check's replies but 0 (changed).
var recheckOutcomes = map[int64]PurgeOutcome{1: PurgeDeleted, 2: PurgeLive}

// recheck runs the re-check script on the chunk (pipelined calls of
// perCall keys): each key's outcome is deleted, changed, or live; refused
// where its call answered an error, which is then returned with the
// outcomes. No outcomes: a call's reply never came.
func (p *purger) recheck(ctx context.Context, chunk []keyRead) ([]PurgeOutcome, error) {
	var calls []*recheckCall
	var pipe []*redisconn.Call
	n := p.perCall(chunk)
	for part := range slices.Chunk(chunk, n) {
		cl := &recheckCall{keys: make([]string, 0, len(part)), body: make([]any, 0, 2*len(part)+16), decoded: p.decoded}
		for i := range part {
			cl.add(&part[i], p.opts.NoTTL, p.opts.Force)
		}
		cl.finish()
		calls = append(calls, cl)
		pipe = append(pipe, recheckScript.Call(&recheckArgs{Candidates: cl.keys, NLists: len(cl.lists), Body: cl.args}))
	}
	_, err := p.c.Run(ctx, redisconn.RunOpts{}, pipe...)
	outcomes := make([]PurgeOutcome, len(chunk))
	for i, cl := range calls {
		vals, rerr := recheckScript.Reply(pipe[i])
		if errors.As(rerr, new(redis.Error)) { // answered: the script's one write, its last command, did not run
			for j := range cl.keys {
				outcomes[i*n+j] = purgeRefused
			}
			err = cmp.Or(err, rerr)
			continue
		}
		if rerr != nil {
			return nil, rerr
		}
		if len(vals) != len(cl.keys) {
			return nil, exit.New(exit.Internal, "purge re-check", "%d replies for %d keys", len(vals), len(cl.keys))
		}
		for j, v := range vals {
			outcomes[i*n+j] = cmp.Or(recheckOutcomes[v], PurgeChanged)
		}
	}
	return outcomes, err
}

const (
	// recheckInlineValue is the longest hash field value the re-check
	// compares as is; a hash with a longer one (or one holding a NUL) is
	// compared by a digest.
	recheckInlineValue = 256
	// recheckInlineString is the longest string compared as is.
	recheckInlineString = 1024
)

// recheckCall is one re-check call: its keys and ARGV (field lists, then
// runs of keys compared alike, lua/purge_recheck.lua). Keys of one format
// share a field list and, in a run, the rest: each adds one value to ARGV.
type recheckCall struct {
	decoded []string // the fields the decoders read (compared in a huge hash)
	keys    []string
	lists   [][]string
	list    map[string]int // the joined names of lists[i] -> i+1
	last    int            // the list the previous hash used
	fields  []string       // a buffer for one key's field names
	vals    []string       // and one for their values
	run     recheckRun     // the current run's header
	runAt   int            // where in body its count is
	body    []any
	args    []any
}

// recheckRun is what the keys of a run share.
type recheckRun struct {
	kind  string
	ttl   string
	size  int64 // hash kinds: HLEN
	list  int   // hash kinds: the field list
	count int
}

// open makes the next key part of a run headed by r: the current one when
// alike, else a new one.
func (cl *recheckCall) open(r recheckRun) {
	cur := cl.run
	if cur.count > 0 && cur.kind == r.kind && cur.ttl == r.ttl && cur.size == r.size && cur.list == r.list {
		cl.run.count++
		cl.body[cl.runAt] = cl.run.count
		return
	}
	r.count = 1
	cl.run, cl.runAt = r, len(cl.body)
	cl.body = append(cl.body, 1, r.kind, r.ttl)
	if r.kind == "hash" || r.kind == "hashd" {
		cl.body = append(cl.body, r.size, r.list)
	}
}

// add appends one key: the kind of comparison and what it compares with,
// as the value was read, and (unless force) until when it is live: the
// server keeps it while its clock is before that instant.
func (cl *recheckCall) add(rd *keyRead, noTTL, force bool) {
	cl.keys = append(cl.keys, rd.rec.Key)
	ttl := "0"
	if noTTL {
		ttl = "1"
	}
	live := int64(0)
	if !force {
		live = rd.rec.LiveUntilMs()
	}
	// Every kind's own part ends with it.
	defer func() { cl.body = append(cl.body, live) }()
	switch rd.rec.Type {
	case "string":
		if int64(len(rd.str)) == rd.size && len(rd.str) <= recheckInlineString {
			cl.open(recheckRun{kind: "string", ttl: ttl})
			cl.body = append(cl.body, rd.str)
			return
		}
		cl.open(recheckRun{kind: "strd", ttl: ttl})
		sum := sha1.Sum([]byte(rd.str))
		cl.body = append(cl.body, rd.size, len(rd.str), hex.EncodeToString(sum[:]))
		return
	case "hash":
		fields := cl.fields[:0]
		inline := true
		for f, v := range rd.raw.Hash {
			fields = append(fields, f)
			inline = inline && len(v) <= recheckInlineValue && strings.IndexByte(v, 0) < 0
		}
		if len(fields) > maxDigestFields {
			fields = fields[:0]
			for _, f := range cl.decoded {
				if _, ok := rd.raw.Hash[f]; ok {
					fields = append(fields, f)
				}
			}
		}
		slices.Sort(fields)
		cl.fields = fields
		list := cl.fieldList(fields)
		if inline {
			cl.open(recheckRun{kind: "hash", ttl: ttl, size: rd.size, list: list})
			vals := cl.vals[:0]
			for _, f := range fields {
				vals = append(vals, rd.raw.Hash[f])
			}
			cl.vals = vals
			cl.body = append(cl.body, strings.Join(vals, "\x00"))
			return
		}
		cl.open(recheckRun{kind: "hashd", ttl: ttl, size: rd.size, list: list})
		h := sha1.New()
		for _, f := range fields {
			v := rd.raw.Hash[f]
			h.Write([]byte(strconv.Itoa(len(v)) + ":" + v))
		}
		cl.body = append(cl.body, hex.EncodeToString(h.Sum(nil)))
		return
	}
	size := ""
	if rd.size >= 0 {
		size = strconv.FormatInt(rd.size, 10)
	}
	cl.open(recheckRun{kind: "type", ttl: ttl})
	cl.body = append(cl.body, rd.rec.Type, size)
}

// fieldList is the 1-based number of the list of these field names (sorted),
// added to the header when new. Candidates of one format share one: the
// last list is tried first.
func (cl *recheckCall) fieldList(fields []string) int {
	if n := len(cl.lists); n > 0 && slices.Equal(cl.lists[n-1], fields) {
		return n
	}
	if cl.last > 0 && slices.Equal(cl.lists[cl.last-1], fields) {
		return cl.last
	}
	name := strings.Join(fields, "\x00")
	n, ok := cl.list[name]
	if !ok {
		if cl.list == nil {
			cl.list = map[string]int{}
		}
		cl.lists = append(cl.lists, slices.Clone(fields))
		n = len(cl.lists)
		cl.list[name] = n
	}
	cl.last = n
	return n
}

// finish assembles the arguments after the number of field lists: the
// field lists, then the keys' parts.
func (cl *recheckCall) finish() {
	n := len(cl.body)
	for _, l := range cl.lists {
		n += 1 + len(l)
	}
	cl.args = make([]any, 0, n)
	for _, l := range cl.lists {
		cl.args = append(cl.args, len(l))
		for _, f := range l {
			cl.args = append(cl.args, f)
		}
	}
	cl.args = append(cl.args, cl.body...)
	cl.body = nil
}

// perCall is how many keys of chunk one script call carries: all on a
// single server, one in a cluster (keys of one call must share a slot).
func (p *purger) perCall(chunk []keyRead) int {
	if p.c.Cluster() {
		return 1
	}
	return len(chunk)
}

// keysOf is the keys of reads.
func keysOf(reads []keyRead) []string {
	keys := make([]string, len(reads))
	for i := range reads {
		keys[i] = reads[i].rec.Key
	}
	return keys
}

// deleteLimiter spaces deletions to rate per second (virtual scheduling: each
// chunk of n may start n/rate seconds after the previous one), shared by the
// nodes of a cluster.
type deleteLimiter struct {
	rate float64
	mu   sync.Mutex
	next time.Time
}

func (l *deleteLimiter) wait(ctx context.Context, n int) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	at := l.next
	l.next = l.next.Add(time.Duration(float64(n) / l.rate * float64(time.Second)))
	l.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
