package stream

// Native IDMP (Redis 8.6+): runs of adds by lua/stream_native_add.lua,
// which tells each outcome (Redis replies the same ID for a duplicate),
// moves a chunk's record and guards emulated state (docs/upgrade.md).

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

// native is the backend of Redis 8.6's own IDMP.
type native struct{ *Streams }

func (native) mode() Mode { return ModeNative }

func (native) fits(*AddRequest) error { return nil }

// iidOf is "" for IDMPAUTO: Redis does not tell the iid it derived.
func (native) iidOf(r *AddRequest) string { return r.IID }

//go:embed lua/stream_native_add.lua
var nativeAddLua string

var nativeAddScript = emulatedScript[nativeAddArgs](runReplyDecoder("native XADD"), xaddHeadLua, nativeAddLua)

// nativeAddArgs are the native add script's (see lua/stream_native_add.lua).
type nativeAddArgs struct {
	State stateArgs // the stream, and its emulated state (only read)
	// Per pid its emulated ids hash (only read); then, for a batch chunk,
	// its progress record and the stream's index of progress records.
	PIDKeys    []string `lua:"PID_KEYS,key,rest"`
	Chunk      progressArgs
	NoState    bool   `lua:"NOSTATE"`
	NoMkStream bool   `lua:"NOMK"`
	Deletion   string `lua:"DELETION"`
	Trim       trimArgs
	Auto       bool         `lua:"AUTO"`
	Outcomes   bool         `lua:"OUTCOMES"`
	Dry        bool         `lua:"DRY"` // a check: nothing is added (CheckAdd)
	NPIDs      int          `lua:"NPIDS"`
	Items      *nativeItems `lua:"ITEMS,rest"`
	Defaults   defaultsArgs // the server's native defaults
}

// nativeItems are the native add script's items (lua/stream_native_add.lua).
// An IDMPAUTO item carries AutoIID, by which emulated state would know it.
type nativeItems struct {
	pids     []any
	pidIndex map[string]int
	reqs     []AddRequest
	iids     []string
	uniform  bool // one pid, and every item of the same number of fields
	named    bool // and of the same field names
	packed   bool
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
		if !it.uniform {
			n += 2
		}
		n += 1 + len(it.reqs[i].Fields)/it.step()
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
		var big, lens []byte
		for i := range reqs {
			q := &reqs[i]
			big, lens = append(big, it.iids[i]...), append(lens, byte(len(it.iids[i])))
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
			args = append(args, it.pidIndex[q.PID], &it.iids[i], len(q.Fields))
		} else {
			args = append(args, &it.iids[i])
		}
		for k := step - 1; k < len(q.Fields); k += step {
			args = append(args, &q.Fields[k])
		}
	}
	return args
}

// packedMax bounds the strings of a call that goes packed (a byte of
// length each; 255 is not a length).
const packedMax = 255

// addCall prepares the native add script's call for one run (each of at
// most idmp.MaxEmulatedFieldArgs field arguments).
func (s native) addCall(reqs []AddRequest, cp *chunkProgress, want reply) (*redisconn.Call, replyParser, error) {
	r0 := &reqs[0]
	l, err := idmp.StateKeys(r0.Stream, s.Conn.Cluster())
	noState := err != nil
	if noState {
		// A cluster name no state key can share a slot with holds no
		// emulated state: its keys are the stream's own.
		l = idmp.StateLayout{Meta: r0.Stream, PIDs: r0.Stream, IDsPrefix: r0.Stream, OrderPrefix: r0.Stream}
	}
	it := &nativeItems{pidIndex: map[string]int{}, reqs: reqs, iids: make([]string, len(reqs)), uniform: true, named: true}
	short, size := true, 0
	var keys []string
	for i := range reqs {
		q := &reqs[i]
		it.iids[i] = q.IID
		if q.Auto {
			it.iids[i] = AutoIID(q.Fields)
		}
		it.uniform = it.uniform && len(q.Fields) == len(r0.Fields)
		for k := 0; it.named && it.uniform && k < len(q.Fields); k += 2 {
			it.named = q.Fields[k] == r0.Fields[k]
		}
		short = short && len(it.iids[i]) < packedMax
		size += len(it.iids[i])
		for k := range q.Fields {
			short = short && len(q.Fields[k]) < packedMax
			size += len(q.Fields[k])
		}
		if _, ok := it.pidIndex[q.PID]; !ok {
			it.pidIndex[q.PID] = len(it.pids) + 1
			it.pids = append(it.pids, q.PID)
			keys = append(keys, l.IDs(q.PID))
		}
	}
	if noState {
		keys = keys[:0]
		for range it.pids {
			keys = append(keys, r0.Stream)
		}
	}
	it.uniform = it.uniform && len(it.pids) == 1
	it.named = it.named && it.uniform
	// Packed, each argument must fit proto-max-bulk-len (at least 1 MiB).
	bulk := max(s.maxBulk, minProtoMaxBulkLen)
	it.packed = it.uniform && short && int64(size) <= bulk && int64(len(reqs)*(len(r0.Fields)+1)) <= bulk
	if cp != nil {
		keys = append(keys, cp.Key, cp.Index)
	}
	call := nativeAddScript.Call(&nativeAddArgs{State: stateArgsOf(r0.Stream, l), PIDKeys: keys, Chunk: progressArgsOf(cp),
		NoState: noState, NoMkStream: r0.NoMkStream, Deletion: strings.ToUpper(r0.Deletion), Trim: trimArgsOf(r0), Auto: r0.Auto,
		Outcomes: want == replyOutcomes, NPIDs: len(it.pids), Items: it, Defaults: defaultsArgsOf(s.nativeDefaults), Dry: want == replyCheck})
	iids := make([]string, len(reqs))
	for i := range reqs {
		iids[i] = s.iidOf(&reqs[i])
	}
	return call, func(v any) ([]AddResult, error) { return parseNativeReply(v, iids) }, nil
}

// add: a single add, or a run too big for Lua's unpack, by MULTI/EXEC (tx);
// other runs, and adds to streams holding emulated state, by the script.
func (s native) add(ctx context.Context, reqs []AddRequest, o AddOptions) ([]AddResult, error) {
	big := false
	for i := range reqs {
		big = big || len(reqs[i].Fields) > idmp.MaxEmulatedFieldArgs
	}
	if big || len(reqs) == 1 {
		res, ack, err := s.tx(ctx, reqs, o, nil)
		switch {
		case !errors.Is(err, errStateHeld):
			return judge(res, err, o.Durability, ack)
		case big:
			return nil, errBigWithState(reqs[0].Stream)
		}
	}
	res, err := s.runCall(ctx, reqs, o)
	if errors.Is(err, errNeedNativeDefaults) && s.nativeDefaults == nil {
		s.loadNativeDefaults(ctx)
		res, err = s.runCall(ctx, reqs, o)
	}
	if err != nil && len(reqs) == 1 && exit.ScriptRefused(err.Error()) {
		// No script for this user: a single add needs one only where the
		// stream holds emulated state.
		err = errStateNeedsScripts(reqs[0].Stream)
	}
	return res, err
}

// check: the single add's transaction, queued and refused (checkQueued); where the
// stream holds emulated state, the guard script's check.
func (s native) check(ctx context.Context, r AddRequest) error {
	_, _, err := s.tx(ctx, []AddRequest{r}, AddOptions{check: true}, nil)
	if errors.Is(err, errStateHeld) {
		err = s.scriptCheck(ctx, r)
		if err != nil && exit.ScriptRefused(err.Error()) {
			err = errStateNeedsScripts(r.Stream) // as add says
		}
	}
	return err
}

// errBigWithState refuses an add too big for the guard script to a stream
// that holds emulated state.
func errBigWithState(stream string) error {
	e := exit.New(exit.Data, "", "an add of more field/value arguments than XADD from Lua takes (%d), to a stream that holds emulated IDMP state", idmp.MaxEmulatedFieldArgs)
	e.Hint = "the upgrade guard hands an add's fields to XADD from Lua: migrate the stream first (idmpctl migrate " + strconv.Quote(stream) + ")"
	e.Err = tooBig{e.Err}
	return e
}

// errNeedNativeDefaults is the script's 'C', nothing written: carrying
// emulated settings over needs the server's defaults.
var errNeedNativeDefaults = errors.New("the guard needs the server's IDMP defaults")

// ready reads the server's native defaults (loadNativeDefaults).
func (s native) ready(ctx context.Context) error {
	s.loadNativeDefaults(ctx)
	return nil
}

// loadNativeDefaults reads CONFIG GET stream-idmp-* once; unreadable is 0 0,
// which no stream's settings equal: nothing is carried over.
func (s *Streams) loadNativeDefaults(ctx context.Context) {
	if s.nativeDefaults == nil {
		d, m, err := native{s}.defaults(ctx)
		if err != nil {
			d, m = 0, 0
		}
		s.nativeDefaults = &idmp.Defaults{Duration: d, MaxSize: m}
	}
}

// parseNativeReply reads the native add script's reply for the requests
// of iids (see lua/stream_native_add.lua).
func parseNativeReply(v any, iids []string) ([]AddResult, error) {
	const what = "native XADD"
	n := len(iids)
	r, err := nativeAddScript.Decode(v)
	if err != nil {
		return nil, err
	}
	switch r.code {
	case "":
		if r.fourth != nil && r.fourth != "u" {
			return nil, r.unexpected(what)
		}
	case "C":
		return nil, errNeedNativeDefaults
	case "F":
		if r.item > n {
			return nil, r.unexpected(what)
		}
		return nil, exit.New(exit.Internal, what, "item %d has %d field/value arguments, more than the script takes", r.item, r.nfields)
	case "P":
		return nil, &errProgressMoved{Line: r.line}
	default:
		return nil, r.unexpected(what)
	}
	out, err := parseDone(r.done, iids, n)
	if err != nil {
		return nil, exit.New(exit.Internal, what, "%v", err)
	}
	stopped := r.stopped(what, len(out), n)
	if r.fourth != nil {
		return out, &errOutcomesUnknown{then: stopped}
	}
	return out, stopped
}

// errOutcomesUnknown is a committed run ('u') whose outcomes the counters
// do not confirm (XSETID set the last ID back); then stopped the run.
type errOutcomesUnknown struct{ then error }

func (*errOutcomesUnknown) Error() string {
	return "the adds were committed, but the stream's counters do not confirm which were duplicates"
}

// notFound gives XINFO's and XCFGSET's "ERR no such key" (kept verbatim) the
// not-found exit code.
func notFound(err error) error {
	if err != nil && strings.Contains(err.Error(), "no such key") {
		return &exit.Error{Code: exit.NotFound, Err: err}
	}
	return err
}

// errNoSuchKey is the emulated scripts' "stream missing" in the server's words.
func errNoSuchKey() error { return notFound(errors.New("ERR no such key")) }

func (s native) info(ctx context.Context, stream string) (Info, error) {
	layout, lerr := idmp.StateKeys(stream, s.Conn.Cluster())
	var xi *redis.XInfoStreamCmd
	var tm *redis.TimeCmd
	var emu *redis.IntCmd
	_, _ = s.Conn.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
		xi = p.XInfoStream(ctx, stream)
		tm = p.Time(ctx)
		if lerr == nil {
			emu = p.Exists(ctx, layout.Meta)
		}
		return nil
	})
	v, err := xi.Result()
	if err != nil {
		return Info{}, notFound(err)
	}
	info := Info{Stream: stream, Mode: "native", Length: v.Length, FirstID: v.FirstEntry.ID, LastID: v.LastEntry.ID,
		LastGeneratedID: v.LastGeneratedID, EntriesAdded: v.EntriesAdded, IDMPDuration: v.IDMPDuration,
		IDMPMaxSize: v.IDMPMaxSize, PIDsTracked: v.PIDsTracked, IIDsTracked: v.IIDsTracked,
		IIDsAdded: v.IIDsAdded, IIDsDuplicates: v.IIDsDuplicates}
	if t, err := tm.Result(); err == nil {
		info.ServerTimeMS = t.UnixMilli()
	}
	if emu != nil && emu.Val() > 0 {
		info.OtherMode = "emulated"
	}
	return info, nil
}

// nativeCfgSet reads the settings first and sends nothing when they would
// not change; otherwise MULTI [XINFO, XCFGSET, XINFO] gives exact before/after.
func (s native) cfgSet(ctx context.Context, stream string, duration, maxsize int64) (CfgResult, error) {
	cur, err := s.Conn.Client().XInfoStream(ctx, stream).Result()
	if err != nil {
		return CfgResult{}, notFound(err)
	}
	before := idmp.Config{Duration: cur.IDMPDuration, MaxSize: cur.IDMPMaxSize}
	if target := withCfg(before, duration, maxsize); target == before {
		return CfgResult{Before: before, After: before}, nil
	}
	var xb, xa *redis.XInfoStreamCmd
	var set *redis.StatusCmd
	_, _ = s.Conn.Client().TxPipelined(ctx, func(p redis.Pipeliner) error {
		xb = p.XInfoStream(ctx, stream)
		// validateCfg ruled out both zero, which go-redis would send as a bare XCFGSET.
		set = p.XCfgSet(ctx, &redis.XCfgSetArgs{Stream: stream, Duration: duration, MaxSize: maxsize})
		xa = p.XInfoStream(ctx, stream)
		return nil
	})
	if err := set.Err(); err != nil {
		return CfgResult{}, notFound(err)
	}
	b, err1 := xb.Result()
	a, err2 := xa.Result()
	if err := errors.Join(err1, err2); err != nil {
		return CfgResult{}, exit.New(exit.Internal, "XINFO STREAM around XCFGSET", "%v", err)
	}
	res := CfgResult{
		Before: idmp.Config{Duration: b.IDMPDuration, MaxSize: b.IDMPMaxSize},
		After:  idmp.Config{Duration: a.IDMPDuration, MaxSize: a.IDMPMaxSize},
	}
	if res.Changed = res.Before != res.After; res.Changed {
		res.ClearedIIDs = b.IIDsTracked
	}
	return res, nil
}

func withCfg(c idmp.Config, duration, maxsize int64) idmp.Config {
	if duration > 0 {
		c.Duration = duration
	}
	if maxsize > 0 {
		c.MaxSize = maxsize
	}
	return c
}

// nativeClearScript changes IDMP-DURATION and sets it back, atomically and on
// the value current at that moment: Redis clears every pid's iids on a change.
var nativeClearScript = redisconn.NewLua[nativeClearArgs](redisconn.Int64Reply, idmp.LuaConstants(), nativeClearLua)

type nativeClearArgs struct {
	Stream string `lua:"STREAM,key"`
}

// clearable refuses clearing one producer's iids: native IDMP clears all.
func (native) clearable(pid string) error {
	if pid == "" {
		return nil
	}
	e := exit.New(exit.Usage, "clear one producer", "native IDMP can only clear the iids of every producer at once")
	e.Hint = "omit the producer to clear all, or use --mode emulated for streams written in emulated mode"
	return e
}

func (s native) clear(ctx context.Context, stream, pid string) (int64, error) {
	if err := s.clearable(pid); err != nil {
		return 0, err
	}
	call := nativeClearScript.Call(&nativeClearArgs{Stream: stream})
	if _, err := s.Conn.Run(ctx, redisconn.RunOpts{Key: stream}, call); err != nil {
		return 0, err
	}
	n, err := nativeClearScript.Reply(call)
	return n, notFound(err)
}

func (s native) defaults(ctx context.Context) (int64, int64, error) {
	d, err := redisconn.ServerIDMPDefaults(ctx, s.Conn.Client())
	if err != nil {
		return idmp.DefaultDuration, idmp.DefaultMaxSize, exit.Wrap(err, "CONFIG GET stream-idmp-*")
	}
	return d.Duration, d.MaxSize, nil
}

// dropIndex is where in a chunk's call (native or emulated) the kept
// replies to drop go (progressArgs.Drop), set when the chunk is sent.
func dropIndex(cl *redisconn.Call) int {
	if cl.Script == nativeAddScript.Script {
		return nativeAddScript.ArgIndex("Drop")
	}
	return addScript.ArgIndex("Drop")
}
