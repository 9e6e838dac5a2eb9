package stream

// The native path of xadd --batch (Redis 8.6+) at the server's speed: one
// script call a chunk (lua/stream_native_batch.lua), sent on the batch's
// pipe with several chunks in flight, as the emulated batch sends its own
// (runScripted). The script runs the chunk's XADD ... IDMP calls, tells
// each add from a duplicate by the ID it replies, and moves the progress
// record compare-and-set, atomically: the exactly-once resume and the
// recovery after a failure are the emulated batch's.
//
// Where the script cannot run, the batch goes on by MULTI/EXEC
// (batch_native.go), and says so (BatchSummary.Path): a user without
// scripting rights, a server with EVALSHA renamed away, and a stream that
// still holds emulated IDMP state (the script refuses to add to it, before
// it writes: its iids would not dedupe natively).

import (
	"context"
	_ "embed"
	"errors"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

//go:embed lua/stream_native_batch.lua
var nativeBatchLua string

var nativeBatchScript = redisconn.NewLua[nativeBatchArgs](runReplyDecoder("native xadd --batch"), idmp.LuaConstants(), xaddHeadLua, nativeBatchLua)

// nativeBatchArgs are the native batch script's (see
// lua/stream_native_batch.lua).
type nativeBatchArgs struct {
	Stream     string `lua:"STREAM,key"`
	Progress   string `lua:"PROGRESS,key"` // the batch's progress record
	Batches    string `lua:"BATCHES,key"`  // the stream's index of progress records
	Meta       string `lua:"META,key"`     // the meta hash of emulated IDMP state, only read
	PIDs       string `lua:"PIDS,key"`     // its pids set, only read
	Chunk      progressArgs
	NoMkStream bool `lua:"NOMK"`
	Trim       trimArgs
	Auto       bool         `lua:"AUTO"` // IDMPAUTO: the items carry no iid
	NPIDs      int          `lua:"NPIDS"`
	Items      *nativeItems `lua:"ITEMS,rest"`
}

// nativeDropArg is where in the native batch script's arguments a chunk
// names the kept replies that go (progressArgs.Drop): set when the chunk is
// sent.
func nativeDropArg() int { return nativeBatchScript.ArgIndex("Drop") }

// nativeItems are the native batch script's pids, number of items, the
// items' shape (three arguments), the shared names, and the items, packed
// or one argument a string (see lua/stream_native_batch.lua).
type nativeItems struct {
	pids     []any
	pidIndex map[string]int
	reqs     []AddRequest
	uniform  bool // one pid, and every item of the same number of fields
	named    bool // and of the same field names
	packed   bool
	size     int // the strings' bytes
}

// step is 2 when the items carry their values alone (shared names).
func (it *nativeItems) step() int {
	if it.named {
		return 2
	}
	return 1
}

func (it *nativeItems) ArgsLen() int {
	r0 := &it.reqs[0]
	n := len(it.pids) + 1 + 3
	if it.named {
		n += len(r0.Fields) / 2
	}
	if it.packed {
		return n + 2
	}
	for i := range it.reqs {
		q := &it.reqs[i]
		if !it.uniform {
			n += 2
		}
		if !q.Auto {
			n++
		}
		n += len(q.Fields) / it.step()
	}
	return n
}

func (it *nativeItems) AppendArgs(args []any) []any {
	reqs := it.reqs
	r0 := &reqs[0]
	args = append(args, it.pids...)
	args = append(args, len(reqs))
	pack := ""
	if it.packed {
		pack = "1"
	}
	switch {
	case it.named:
		args = append(args, len(r0.Fields), "1", pack)
		for k := 0; k < len(r0.Fields); k += 2 {
			args = append(args, &r0.Fields[k])
		}
	case it.uniform:
		args = append(args, len(r0.Fields), "", pack)
	default:
		args = append(args, "", "", "")
	}
	step := it.step()
	if it.packed {
		// Every string one after the other, and a byte of length each.
		big := make([]byte, 0, it.size)
		lens := make([]byte, 0, len(reqs)*(1+len(r0.Fields)))
		for i := range reqs {
			q := &reqs[i]
			if !q.Auto {
				big, lens = append(big, q.IID...), append(lens, byte(len(q.IID)))
			}
			for k := step - 1; k < len(q.Fields); k += step {
				big, lens = append(big, q.Fields[k]...), append(lens, byte(len(q.Fields[k])))
			}
		}
		return append(args, big, lens)
	}
	// Strings go in as pointers: boxing a string allocates, a pointer does
	// not (the pipe writes *string as the string).
	for i := range reqs {
		q := &reqs[i]
		if !it.uniform {
			args = append(args, it.pidIndex[q.PID])
		}
		if !q.Auto {
			args = append(args, &q.IID)
		}
		if !it.uniform {
			args = append(args, len(q.Fields))
		}
		for k := step - 1; k < len(q.Fields); k += step {
			args = append(args, &q.Fields[k])
		}
	}
	return args
}

// packedMax bounds the strings of a chunk that goes packed (a byte of
// length each; 255 is not a length).
const packedMax = 255

// nativeBatchCall prepares a chunk's call of the native batch script (see
// lua/stream_native_batch.lua for its arguments), and returns each
// request's iid ("" for IDMPAUTO: the server does not tell it).
func (r *batchRun) nativeBatchCall(c *chunk) (*redisconn.Call, []string) {
	reqs := c.reqs
	r0 := reqs[0]
	it := &nativeItems{pidIndex: map[string]int{}, reqs: reqs, uniform: true, named: true}
	short := true
	iids := make([]string, len(reqs))
	for i := range reqs {
		q := &reqs[i]
		iids[i] = q.IID
		it.uniform = it.uniform && len(q.Fields) == len(r0.Fields)
		for k := 0; it.named && it.uniform && k < len(q.Fields); k += 2 {
			it.named = q.Fields[k] == r0.Fields[k]
		}
		short = short && len(q.IID) < packedMax
		it.size += len(q.IID)
		for k := range q.Fields {
			short = short && len(q.Fields[k]) < packedMax
			it.size += len(q.Fields[k])
		}
		if _, ok := it.pidIndex[q.PID]; !ok {
			it.pidIndex[q.PID] = len(it.pids) + 1
			it.pids = append(it.pids, q.PID)
		}
	}
	it.uniform = it.uniform && len(it.pids) == 1
	it.named = it.named && it.uniform
	// Packed, each of the two arguments must fit the server's
	// proto-max-bulk-len (at least 1 MiB where it is not known), or it
	// refuses the whole command.
	bulk := r.maxBulk
	if bulk <= 0 {
		bulk = 1 << 20
	}
	strs := len(reqs) * (len(r0.Fields) + 1)
	it.packed = it.uniform && short && int64(it.size) <= bulk && int64(strs) <= bulk
	cp := &chunkProgress{From: c.from, To: c.to, Digest: c.digest, DropReplies: -1, TTL: r.spec.TTL,
		ID: r.spec.ID, PID: r.spec.Template.PID, Lines: c.lines, Run: r.run}
	call := nativeBatchScript.Call(&nativeBatchArgs{Stream: r.spec.Template.Stream, Progress: r.key, Batches: r.layout.Batches,
		Meta: r.layout.Meta, PIDs: r.layout.PIDs, Chunk: progressArgsOf(cp), NoMkStream: r0.NoMkStream, Trim: trimArgsOf(&r0), Auto: r0.Auto,
		NPIDs: len(it.pids), Items: it})
	return call, iids
}

// errFallback ends the native chunk script's part of a batch: the rest goes
// another way (runFallback), for the reason why. emulated says the stream
// holds emulated IDMP state (the script's {'E'}); otherwise the script
// cannot run (scripting rights, EVALSHA renamed away).
type errFallback struct {
	why      string
	emulated bool
}

func (e *errFallback) Error() string { return "the native batch script cannot run: " + e.why }

// emulatedStateWhy is the fallback's reason when the stream holds emulated
// IDMP state (the script's {'E'}).
const emulatedStateWhy = "the stream holds emulated IDMP state, whose iids native IDMP does not know"

// runFallback sends what the native chunk script left (left, the chunks
// read and not committed, in order, then the reader's windows) another
// way, once: by MULTI/EXEC (runNative).
//
// A stream with emulated IDMP state (fb.emulated) goes by MULTI/EXEC with
// the upgrade guard: each chunk WATCHes the state keys and, while they
// exist, its adds are one guard script in the MULTI (guard.go), which
// answers an iid that state knows with its original ID.
func (r *batchRun) runFallback(ctx context.Context, fb *errFallback, left []*chunk, windows <-chan []*chunk) error {
	r.sum.Path, r.sum.PathWhy = PathMulti, fb.why
	if r.spec.OnFallback != nil {
		r.spec.OnFallback(fb.why)
	}
	nc := &nativeBatchConn{r: r}
	defer nc.close()
	return r.runNative(ctx, nc, left, windows)
}

// errOutcomesUnknown is a chunk the native script committed whose adds'
// outcomes (new or duplicate) the server's counters did not confirm (the
// reply's 'u'): the stream's last ID was set back (XSETID) in a way that
// makes a duplicate look new.
// then is the error that stopped the chunk after those adds, if one did.
type errOutcomesUnknown struct{ then error }

func (*errOutcomesUnknown) Error() string {
	return "the adds were committed, but the stream's counters do not confirm which were duplicates"
}

// noScripting says why err (from opening the pipe, or a chunk's EVALSHA)
// means the native chunk script cannot run here, or "" when it does not.
func noScripting(err error) string {
	var reply redisconn.ReplyError
	if err == nil || !errors.As(err, &reply) {
		return ""
	}
	msg := err.Error()
	switch low := strings.ToLower(msg); {
	case exit.ScriptingDisabled(msg):
		return "EVALSHA or SCRIPT is renamed or disabled on this server"
	case strings.HasPrefix(msg, "NOPERM") && (strings.Contains(low, "'evalsha'") || strings.Contains(low, "'script")):
		return "this user may not run scripts (" + msg + ")"
	}
	return ""
}

// parseNativeBatchReply reads the native batch script's reply for n
// requests (see lua/stream_native_batch.lua).
func parseNativeBatchReply(v any, iids []string, n int) ([]AddResult, error) {
	const what = "native xadd --batch"
	r, err := nativeBatchScript.Decode(v)
	if err != nil {
		return nil, err
	}
	switch r.code {
	case "":
		if r.fourth != nil && r.fourth != "u" {
			return nil, r.unexpected(what)
		}
	case "E":
		return nil, &errFallback{why: emulatedStateWhy, emulated: true}
	case "F":
		if r.item > n {
			return nil, r.unexpected(what)
		}
		// The reader sends such lines by MULTI/EXEC: this is the second line.
		return nil, exit.New(exit.Internal, what, "item %d has %d field/value arguments, more than the chunk script takes", r.item, r.nfields)
	case "P":
		return nil, &errProgressMoved{Line: r.line}
	default:
		return nil, r.unexpected(what)
	}
	out, err := parseDone(r.done, iids, n)
	if err != nil {
		return nil, exit.New(exit.Internal, what, "%v", err)
	}
	for i := range out {
		out[i].Mode = ModeNative
	}
	stopped := r.stopped(what, len(out), n)
	if r.fourth != nil {
		return out, &errOutcomesUnknown{then: stopped}
	}
	return out, stopped
}
