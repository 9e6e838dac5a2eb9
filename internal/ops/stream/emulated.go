package stream

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

// Emulated IDMP: idmp.StateLayout kept by one Lua call per run of adds. No
// state key has a TTL (volatile-* would evict it first, and settings must
// not revert on an idle stream); the scripts expire what DURATION and
// --progress-ttl no longer cover, and drop a deleted stream's state (R13).

// The scripts' sources, embedded as strings: static data, nothing to copy
// or build at process start.
var (
	//go:embed lua/stream_common.lua
	commonLua string
	//go:embed lua/stream_emu_add.lua
	addLua string
	//go:embed lua/stream_xadd_head.lua
	xaddHeadLua string // xadd_head, a part of each script that adds
	//go:embed lua/stream_emu_cfgset.lua
	cfgsetLua string
	//go:embed lua/stream_emu_info.lua
	infoLua string
	//go:embed lua/stream_emu_clear.lua
	clearLua string
	//go:embed lua/stream_native_clear.lua
	nativeClearLua string
	//go:embed lua/stream_batch_prune.lua
	pruneLua string
)

// emulatedScript is an emulated-IDMP script (A starts with stateArgs, ends
// with defaultsArgs): the IDMP limits, lua/stream_common.lua, then sources.
func emulatedScript[A, R any](decode func(v any) (R, error), sources ...string) *redisconn.Lua[A, R] {
	return redisconn.NewLua[A](decode, append([]string{idmp.LuaConstants(), commonLua}, sources...)...)
}

var (
	addScript    = emulatedScript[addArgs](runReplyDecoder("emulated XADD"), xaddHeadLua, addLua)
	cfgsetScript = emulatedScript[cfgsetArgs](decodeCfgSetReply, cfgsetLua)
	infoScript   = emulatedScript[stateOnlyArgs](decodeInfoReply, infoLua)
	clearScript  = emulatedScript[clearArgs](redisconn.Int64Reply, clearLua) // nil: no stream
	// pruneScript runs in both modes (it touches only progress records).
	pruneScript = redisconn.NewLua[pruneArgs](redisconn.Int64Reply, pruneLua)
)

// The arguments of the scripts above (see their Lua).
type (
	// stateOnlyArgs: a script of the stream's state alone (info, dump, mark).
	stateOnlyArgs struct {
		State    stateArgs
		Defaults defaultsArgs
	}
	cfgsetArgs struct {
		State    stateArgs
		Duration int64 `lua:"DURATION"` // 0 keeps
		MaxSize  int64 `lua:"MAXSIZE"`  // 0 keeps
		Defaults defaultsArgs
	}
	clearArgs struct {
		State    stateArgs
		PIDKeys  []string `lua:"PID_KEYS,key,rest"` // the pid's ids hash and order list; none for every pid
		PID      string   `lua:"PID"`               // "" every pid
		Defaults defaultsArgs
	}
	pruneArgs struct {
		Index string `lua:"INDEX,key"`
		Limit int    `lua:"LIMIT"`
	}
	dropOrphanArgs struct {
		State    stateArgs
		Found    []string `lua:"FOUND,key,rest"` // more keys of the state, found by a scan
		NNames   int      `lua:"NNAMES"`
		Names    []any    `lua:"NAMES,rest"` // the streams the state may belong to
		Defaults defaultsArgs
	}
)

// state is the layout and the leading arguments every emulated script
// takes.
func (s *Streams) state(stream string) (idmp.StateLayout, stateArgs, error) {
	l, err := idmp.StateKeys(stream, s.Conn.Cluster())
	if err != nil {
		return l, stateArgs{}, err
	}
	return l, stateArgsOf(stream, l), nil
}

// callOf is the call mk makes of stream's state and the emulated defaults.
func (s *Streams) callOf(stream string, mk func(l idmp.StateLayout, st stateArgs, d defaultsArgs) *redisconn.Call) (*redisconn.Call, error) {
	l, st, err := s.state(stream)
	if err != nil {
		return nil, err
	}
	return mk(l, st, s.defaultArgs()), nil
}

// scriptErr gives script errors their exit codes: a state-key conflict is data.
func scriptErr(err error) error {
	if err == nil || !strings.HasPrefix(err.Error(), "IDMPCONFLICT ") {
		return err
	}
	e := exit.New(exit.Data, "", "%s", strings.TrimPrefix(err.Error(), "IDMPCONFLICT "))
	e.Hint = "two stream names map to the same state keys (\"s\" and \"{s}\"); rename one, or use native IDMP"
	return e
}

// chunkProgress is what a chunk of xadd --batch adds to its script call:
// the progress record it moves from From to To input lines (see batch.go).
type chunkProgress struct {
	Key, Index  string // the record and the stream's index of records
	ID, PID     string
	From, To    int64
	Digest      string
	DropReplies int64 // From of the chunk whose kept replies go; -1 none
	TTL         time.Duration
	Lines       []int64 // each request's input line
	Run         string  // the ID of the run that sends it (see batchRun.run)
}

// addArgs are the add script's (see lua/stream_emu_add.lua).
type addArgs struct {
	State stateArgs
	// Per pid its ids hash and order list; then, for a batch chunk, its
	// progress record and the stream's index of progress records.
	PIDKeys    []string `lua:"PID_KEYS,key,rest"`
	NoMkStream bool     `lua:"NOMK"`
	Deletion   string   `lua:"DELETION"` // KEEPREF, DELREF, ACKED or ""
	Trim       trimArgs
	Progress   progressArgs
	Dry        bool      `lua:"DRY"` // a check: nothing is added (CheckAdd)
	NPIDs      int       `lua:"NPIDS"`
	Items      *addItems `lua:"ITEMS,rest"`
	Defaults   defaultsArgs
}

// addItems are the add script's items (lua/stream_emu_add.lua). Strings go
// in as pointers: boxing a string allocates, a pointer does not.
type addItems struct {
	pids     []any // pid, number of items for it
	pidIndex map[string]int
	reqs     []AddRequest
	iids     []string
	uniform  bool
}

func (it *addItems) ArgsLen() int {
	n := len(it.pids) + 2
	for i := range it.reqs {
		n += len(it.reqs[i].Fields) + 1
		if !it.uniform {
			n += 2
		}
	}
	return n
}

func (it *addItems) AppendArgs(args []any) []any {
	args = append(args, it.pids...)
	args = append(args, len(it.reqs))
	if it.uniform {
		args = append(args, len(it.reqs[0].Fields))
	} else {
		args = append(args, "")
	}
	for i := range it.reqs {
		r := &it.reqs[i]
		if it.uniform {
			args = append(args, &it.iids[i])
		} else {
			args = append(args, it.pidIndex[r.PID], &it.iids[i], len(r.Fields))
		}
		for k := range r.Fields {
			args = append(args, &r.Fields[k])
		}
	}
	return args
}

// emulated is the backend of idmpctl's Lua emulation of IDMP.
type emulated struct{ *Streams }

func (emulated) mode() Mode { return ModeEmulated }

// iidOf is the iid an add used: for IDMPAUTO the emulation's content hash.
func (emulated) iidOf(r *AddRequest) string {
	if r.Auto {
		return AutoIID(r.Fields)
	}
	return r.IID
}

func (emulated) fits(r *AddRequest) error {
	if n := len(r.Fields); n > idmp.MaxEmulatedFieldArgs {
		return TooManyFields(n)
	}
	return nil
}

// add runs one run's call. A stream whose state starts with it needs the
// server-level defaults: read once per process, and the run sent again.
func (s emulated) add(ctx context.Context, reqs []AddRequest, o AddOptions) ([]AddResult, error) {
	if o.Durability.On() {
		// The wait is for a write: know the defaults first, so that the
		// first call writes rather than asks for them.
		if err := s.LoadDefaults(ctx); err != nil {
			return nil, err
		}
	}
	res, err := s.runCall(ctx, reqs, o)
	if errors.Is(err, errNeedDefaults) && s.Defaults == nil {
		if err := s.LoadDefaults(ctx); err != nil {
			return nil, err
		}
		res, err = s.runCall(ctx, reqs, o)
	}
	return res, err
}

func (s emulated) ready(ctx context.Context) error { return s.LoadDefaults(ctx) }

func (s emulated) check(ctx context.Context, r AddRequest) error { return s.scriptCheck(ctx, r) }

func (s emulated) defaults(ctx context.Context) (int64, int64, error) {
	if err := s.LoadDefaults(ctx); err != nil {
		return idmp.DefaultDuration, idmp.DefaultMaxSize, err
	}
	return s.Defaults.Duration, s.Defaults.MaxSize, nil
}

// addCall prepares the add script's call for one run (every emulated add
// tells its outcome: outcomes changes nothing).
func (s emulated) addCall(reqs []AddRequest, cp *chunkProgress, want reply) (*redisconn.Call, replyParser, error) {
	r0 := reqs[0]
	l, st, err := s.state(r0.Stream)
	if err != nil {
		return nil, nil, err
	}
	// Items of one pid with the same number of fields go without the pid's
	// index and the count, a third of a common line's arguments.
	it := &addItems{pidIndex: make(map[string]int), reqs: reqs, iids: make([]string, len(reqs)), uniform: true}
	var keys []string // a producer's two per pid, then the progress record's
	for i := range reqs {
		r := &reqs[i]
		it.uniform = it.uniform && len(r.Fields) == len(r0.Fields)
		j, ok := it.pidIndex[r.PID]
		if !ok {
			j = len(it.pids)/2 + 1
			it.pidIndex[r.PID] = j
			it.pids = append(it.pids, r.PID, 0)
			keys = append(keys, l.IDs(r.PID), l.Order(r.PID))
		}
		it.pids[2*j-1] = it.pids[2*j-1].(int) + 1
		it.iids[i] = r.IID
		if r.Auto {
			it.iids[i] = AutoIID(r.Fields)
		}
	}
	it.uniform = it.uniform && len(it.pids) == 2
	if cp != nil {
		keys = append(keys, cp.Key, cp.Index)
	}
	call := addScript.Call(&addArgs{State: st, PIDKeys: keys, NoMkStream: r0.NoMkStream, Trim: trimArgsOf(&r0),
		Deletion: r0.Deletion, Progress: progressArgsOf(cp), NPIDs: len(it.pids) / 2, Items: it, Defaults: s.defaultArgs(), Dry: want == replyCheck})
	return call, func(v any) ([]AddResult, error) { return parseAddReply(v, it.iids, len(it.iids)) }, nil
}

// TooManyFields refuses an add over idmp.MaxEmulatedFieldArgs: the client
// before it sends, the script before it writes.
func TooManyFields(n int) error {
	e := exit.New(exit.Data, "", "%d field/value arguments: emulated IDMP takes at most %d in one add (the script hands them to XADD with Lua's unpack, which stops near 8,000 values)",
		n, idmp.MaxEmulatedFieldArgs)
	e.Hint = "split the message's fields, or store them as one value (a JSON document); native IDMP (Redis 8.6+) has no such bound"
	e.Err = tooBig{e.Err}
	return e
}

// ErrTooBig is in the error of an add refused for its own size (its
// field/value arguments) where the mode bounds it: other adds may go.
var ErrTooBig = errors.New("an add too big for the mode")

type tooBig struct{ error }

func (tooBig) Is(target error) bool { return target == ErrTooBig }
func (t tooBig) Unwrap() error      { return t.error }

// errProgressMoved is a batch chunk the script refused: its progress record
// stands at Line input lines, not where the chunk starts.
type errProgressMoved struct{ Line int64 }

func (e *errProgressMoved) Error() string {
	return fmt.Sprintf("the batch's progress record stands at line %d", e.Line)
}

// parseAddReply reads the add script's reply for n requests (see
// lua/stream_emu_add.lua): the adds' results, and the refusal or the
// error that stopped the run.
func parseAddReply(v any, iids []string, n int) ([]AddResult, error) {
	const what = "emulated XADD"
	r, err := addScript.Decode(v)
	if err != nil {
		return nil, err
	}
	switch r.code {
	case "":
	case "D":
		return nil, errNeedDefaults
	case "F":
		if r.item > len(iids) {
			return nil, r.unexpected(what)
		}
		// The script's own refusal (the client checks first: this is the second line).
		return nil, TooManyFields(r.nfields)
	case "P":
		return nil, &errProgressMoved{Line: r.line}
	default:
		return nil, r.unexpected(what)
	}
	out, err := parseDone(r.done, iids, n)
	if err != nil {
		return nil, exit.New(exit.Internal, what, "%v", err)
	}
	return out, r.stopped(what, len(out), n)
}

// stopped is the error that stopped a run of n adds after got of them (a
// missing stream, an add's error, or replies that do not add up), or nil.
func (r runReply) stopped(what string, got, n int) error {
	switch {
	case r.stop == "n":
		return errNoStream()
	case r.stop == "e":
		return errors.New(r.message)
	case r.stop != "" || got != n:
		return exit.New(exit.Internal, what, "%d replies for %d requests (stop %q)", got, n, r.stop)
	}
	return nil
}

// parseDone reads an add reply's done items, or a chunk's kept replies:
// comma-separated, the new ID (records before 2026-11: 'a' and the ID) or
// 'd', 0|1 (the original exists) and the original's ID.
func parseDone(done string, iids []string, n int) ([]AddResult, error) {
	if done == "" {
		return nil, nil
	}
	out := make([]AddResult, 0, n)
	for item := range strings.SplitSeq(done, ",") {
		if len(out) == n {
			return nil, fmt.Errorf("more than %d replies", n)
		}
		r := AddResult{IID: iids[len(out)]}
		switch {
		case len(item) > 0 && item[0] >= '0' && item[0] <= '9':
			r.ID = item
		case len(item) > 1 && item[0] == 'a':
			r.ID = item[1:]
		case len(item) > 2 && item[0] == 'd' && (item[1] == '0' || item[1] == '1'):
			r.ID, r.Duplicate, r.OriginalExists = item[2:], true, item[1] == '1'
		default:
			return nil, fmt.Errorf("reply %q", item)
		}
		out = append(out, r)
	}
	return out, nil
}

// runState runs the emulated call mk makes of the stream's state (runKeyed),
// and returns it for its script's Reply; an error only when none could run.
func (s *Streams) runState(ctx context.Context, stream string, mk func(l idmp.StateLayout, st stateArgs, d defaultsArgs) *redisconn.Call) (*redisconn.Call, error) {
	call, _, err := s.runKeyed(ctx, redisconn.RunOpts{Key: stream}, func() (*redisconn.Call, error) {
		return s.callOf(stream, mk)
	})
	if call == nil || call.Cmd == nil {
		return nil, err
	}
	return call, nil
}

func (s emulated) info(ctx context.Context, stream string) (Info, error) {
	if s.plainReads {
		return s.emulatedInfoPlain(ctx, stream)
	}
	_ = s.LoadDefaults(ctx) // best effort: a stream without state shows them
	call, err := s.runState(ctx, stream, func(_ idmp.StateLayout, st stateArgs, d defaultsArgs) *redisconn.Call {
		return infoScript.Call(&stateOnlyArgs{State: st, Defaults: d})
	})
	if err != nil {
		return Info{}, err
	}
	reply, err := infoScript.Reply(call)
	if err != nil && (exit.Classify(err) == exit.Permission || exit.ScriptingDisabled(err.Error())) {
		// A user who may not run scripts (or this one), or a server that
		// renamed them away: the same view with plain reads, which says it
		// is not one atomic snapshot.
		s.plainReads = true
		return s.emulatedInfoPlain(ctx, stream)
	}
	if errors.Is(err, redis.Nil) || err == nil && reply == nil {
		return Info{}, errNoSuchKey()
	} else if err != nil {
		return Info{}, scriptErr(err)
	}
	info := *reply
	info.Stream = stream
	if caps, err := s.Conn.Capabilities(ctx); err == nil && caps.NativeIDMP {
		// Emulated state written on purpose to a native server: say whether the
		// server tracks iids of its own for this stream too.
		if v, err := s.Conn.Client().XInfoStream(ctx, stream).Result(); err == nil && (v.IIDsAdded > 0 || v.PIDsTracked > 0) {
			info.OtherMode = "native"
		}
	}
	return info, nil
}

// decodeInfoReply is the info script's decoder: nil for no stream, else
// the view without the stream's name.
func decodeInfoReply(v any) (*Info, error) {
	if v == nil {
		return nil, nil
	}
	reply, _ := v.([]any)
	if len(reply) < 14 || len(reply)%2 != 0 {
		return nil, exit.New(exit.Internal, "emulated XINFO", "unexpected reply %v", v)
	}
	str := func(i int) string { v, _ := reply[i].(string); return v }
	num := func(i int) int64 { v, _ := reply[i].(int64); return v }
	info := Info{
		Mode: str(0), IDMPDuration: num(1), IDMPMaxSize: num(2),
		IIDsAdded: num(3), IIDsDuplicates: num(4), ServerTimeMS: num(5), Length: num(6),
		LastGeneratedID: str(7), EntriesAdded: num(8), FirstID: str(9), LastID: str(10),
		Inconsistent: str(11), TokenGroups: num(12), Token: num(13) == 1,
	}
	for i := 14; i+1 < len(reply); i += 2 {
		p := PIDTracking{PID: str(i), IIDs: num(i + 1)}
		info.PIDs = append(info.PIDs, p)
		info.PIDsTracked++
		info.IIDsTracked += p.IIDs
	}
	slices.SortFunc(info.PIDs, func(a, b PIDTracking) int { return strings.Compare(a.PID, b.PID) })
	return &info, nil
}

func (s emulated) cfgSet(ctx context.Context, stream string, duration, maxsize int64) (CfgResult, error) {
	if err := s.LoadDefaults(ctx); err != nil {
		return CfgResult{}, err
	}
	call, err := s.runState(ctx, stream, func(_ idmp.StateLayout, st stateArgs, d defaultsArgs) *redisconn.Call {
		return cfgsetScript.Call(&cfgsetArgs{State: st, Duration: duration, MaxSize: maxsize, Defaults: d})
	})
	if err != nil {
		return CfgResult{}, notFound(scriptErr(err))
	}
	res, err := cfgsetScript.Reply(call)
	var e *exit.Error
	if err != nil && !errors.As(err, &e) {
		err = notFound(scriptErr(err))
	}
	return res, err
}

// decodeCfgSetReply is the XCFGSET script's decoder: six integers, the
// settings before and after, whether they changed, the iids cleared.
func decodeCfgSetReply(v any) (CfgResult, error) {
	list, _ := v.([]any)
	reply := make([]int64, 0, 6)
	for _, e := range list {
		if n, ok := e.(int64); ok {
			reply = append(reply, n)
		}
	}
	if len(list) != 6 || len(reply) != 6 {
		return CfgResult{}, exit.New(exit.Internal, "emulated XCFGSET", "unexpected reply %v", v)
	}
	return CfgResult{
		Before:      idmp.Config{Duration: reply[0], MaxSize: reply[1]},
		After:       idmp.Config{Duration: reply[2], MaxSize: reply[3]},
		Changed:     reply[4] == 1,
		ClearedIIDs: reply[5],
	}, nil
}

func (emulated) clearable(string) error { return nil }

func (s emulated) clear(ctx context.Context, stream, pid string) (int64, error) {
	call, err := s.runState(ctx, stream, func(l idmp.StateLayout, st stateArgs, d defaultsArgs) *redisconn.Call {
		a := clearArgs{State: st, PID: pid, Defaults: d}
		if pid != "" {
			a.PIDKeys = []string{l.IDs(pid), l.Order(pid)}
		}
		return clearScript.Call(&a)
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, scriptErr(err)
	}
	n, err := clearScript.Reply(call)
	if errors.Is(err, redis.Nil) {
		return 0, errNoSuchKey()
	}
	return n, scriptErr(err)
}

// EmulatedBytesPerIID is the memory of one tracked 36-byte iid (hash field
// and list element): BenchmarkEmulatedMemoryPerIID measured 155-162 on
// Redis 7.0 (jemalloc); TestEmulatedBytesPerIID keeps it within 30%.
const EmulatedBytesPerIID = 160

//go:embed lua/stream_emu_drop_orphan.lua
var dropOrphanLua string

var dropOrphanScript = emulatedScript[dropOrphanArgs](redisconn.Int64Reply, dropOrphanLua) // -1: a name is a stream

// DropOrphanedState drops a deleted stream's emulated state (purge
// --orphan-state): names from idmp.StateStreams, keys found by a scan. It
// deletes atomically only while no name is a stream (else kept, nothing
// deleted); a repeat is safe. Its errors name nothing: the caller does.
func (s *Streams) DropOrphanedState(ctx context.Context, names, keys []string) (deleted int64, kept bool, err error) {
	if len(names) == 0 {
		return 0, false, exit.New(exit.Internal, "purge --orphan-state", "no stream name for %q", keys)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	call, err := s.runState(ctx, names[0], func(_ idmp.StateLayout, st stateArgs, d defaultsArgs) *redisconn.Call {
		a := dropOrphanArgs{State: st, Found: keys, NNames: len(names), Defaults: d}
		for _, n := range names {
			a.Names = append(a.Names, n)
		}
		return dropOrphanScript.Call(&a)
	})
	if err != nil {
		return 0, false, err
	}
	n, err := dropOrphanScript.Reply(call)
	if err != nil {
		return 0, false, err
	}
	if n < 0 {
		return 0, true, nil
	}
	return n, false, nil
}

// runReply is the reply of lua/stream_emu_add.lua or stream_native_add.lua,
// as their decoder (redisconn.NewLua) reads it:
// a refusal, nothing written, or the adds done and why the run stopped.
type runReply struct {
	// code is a refusal's: 'D' no defaults, 'C' no native defaults, 'F'
	// item has too many (nfields), 'P' the record stands at line; "" a run.
	code    string
	item    int // 'F': from 1
	nfields int
	line    int64
	done    string // the items done, comma-separated (parseDone)
	stop    string // "" every item done; 'n' no stream; 'e' an error (message)
	message string
	fourth  any // the native script's 'u'; nil without
	raw     any // the reply as it came, for errors
}

// runReplyDecoder is the decoder of a script that runs adds: what names it
// in an error for a reply of another shape.
func runReplyDecoder(what string) func(v any) (runReply, error) {
	return func(v any) (runReply, error) {
		reply, ok := v.([]any)
		bad := func() (runReply, error) { return runReply{}, exit.New(exit.Internal, what, "unexpected reply %v", v) }
		if !ok || len(reply) == 0 {
			return bad()
		}
		r := runReply{raw: v}
		code, _ := reply[0].(string)
		switch {
		case len(reply) == 1 && (code == "D" || code == "C"):
			r.code = code
			return r, nil
		case len(reply) == 3 && code == "F":
			i, err1 := strconv.Atoi(fmt.Sprint(reply[1]))
			n, err2 := strconv.Atoi(fmt.Sprint(reply[2]))
			if err1 != nil || err2 != nil || i < 1 {
				return bad()
			}
			r.code, r.item, r.nfields = code, i, n
			return r, nil
		case len(reply) == 2 && code == "P":
			text, _ := reply[1].(string)
			line, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				return bad()
			}
			r.code, r.line = code, line
			return r, nil
		case len(reply) != 3 && len(reply) != 4:
			return bad()
		}
		r.done, _ = reply[0].(string)
		r.stop, _ = reply[1].(string)
		r.message, _ = reply[2].(string)
		if len(reply) == 4 {
			r.fourth = reply[3]
		}
		return r, nil
	}
}

// unexpected is the internal error of a reply that the script makes but
// that makes no sense here.
func (r runReply) unexpected(what string) error {
	return exit.New(exit.Internal, what, "unexpected reply %v", r.raw)
}

// Emulated server-level defaults (exec's CONFIG SET stream-idmp-*) live at
// idmp.DefaultsKey, in one cluster slot, so scripts never read it: the
// caller reads it once and sends the values. A stream keeps those of its
// state's start; a script not sent them refuses ({'D'}) only then, before
// writing, so the steady-state add stays one round trip.

// errNeedDefaults is the add script's refusal: the stream's state starts
// with this add and the server-level defaults were not sent.
var errNeedDefaults = errors.New("the add needs the server-level IDMP defaults")

// LoadDefaults reads the emulated server-level defaults once (a key that
// is absent, or a value out of range, is Redis's default).
func (s *Streams) LoadDefaults(ctx context.Context) error {
	if s.Defaults != nil {
		return nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	d, err := s.Conn.EmulatedIDMPDefaults(ctx)
	if err != nil {
		return exit.Wrap(err, "read the IDMP defaults ("+idmp.DefaultsKey+")")
	}
	s.Defaults = &d
	return nil
}

// SetDefaults tells the streams the server-level defaults (a caller that
// read or wrote them itself).
func (s *Streams) SetDefaults(d idmp.Defaults) { s.Defaults = &d }
