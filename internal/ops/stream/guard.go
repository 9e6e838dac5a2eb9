package stream

// The upgrade guard (docs/upgrade.md): on a server with native IDMP, every
// idempotent add idmpctl makes goes through lua/stream_guard_add.lua, one
// script call per run of adds, which answers an iid that the stream's
// emulated state still knows with its original entry ID, and adds every
// other item natively. A user who may not run scripts gets the same
// guarantee from WATCH: an add goes natively, in a MULTI, only while the
// stream holds no emulated state, and is refused (78) while it does.

import (
	"cmp"
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

//go:embed lua/stream_guard_add.lua
var guardLua string

var guardScript = emulatedScript[guardArgs](runReplyDecoder("emulated XADD"), xaddHeadLua, guardLua)

// guardArgs are the guard script's (see lua/stream_guard_add.lua).
type guardArgs struct {
	State      stateArgs
	PIDKeys    []string `lua:"PID_KEYS,key,rest"` // the ids hash of each pid
	NoMkStream bool     `lua:"NOMK"`
	Deletion   string   `lua:"DELETION"` // KEEPREF, DELREF, ACKED or ""
	Trim       trimArgs
	NPIDs      int          `lua:"NPIDS"`
	Items      *guardItems  `lua:"ITEMS,rest"`
	Defaults   defaultsArgs // the server's native defaults
}

// guardItems are the guard's pids, the number of items, then per item its
// pid's index, '1' for IDMPAUTO (” for IDMP), the iid it is looked up by,
// the number of fields and the fields.
type guardItems struct {
	pids     []any
	pidIndex map[string]int
	reqs     []AddRequest
	iids     []string
}

func (it *guardItems) ArgsLen() int {
	n := len(it.pids) + 1
	for i := range it.reqs {
		n += 4 + len(it.reqs[i].Fields)
	}
	return n
}

func (it *guardItems) AppendArgs(args []any) []any {
	args = append(args, it.pids...)
	args = append(args, len(it.reqs))
	for i := range it.reqs {
		r := &it.reqs[i]
		auto := ""
		if r.Auto {
			auto = "1"
		}
		args = append(args, it.pidIndex[r.PID], auto, &it.iids[i], len(r.Fields))
		for k := range r.Fields {
			args = append(args, &r.Fields[k])
		}
	}
	return args
}

// GuardCall is the guard script's call for a run of requests that share a
// stream and options (SameRun, validated, each with at most
// idmp.MaxEmulatedFieldArgs field arguments: see GuardFits), and the iid
// each is looked up by in the emulated state (stream.AutoIID for Auto).
// Its reply reads with ParseAddRunReply; a run that stopped is answered
// as the emulated add script's is. The deletion policy (KEEPREF, DELREF,
// ACKED: idmpctl exec) goes to XADD as it is; "" sends none.
func (s *Streams) GuardCall(reqs []AddRequest, deletion string) (*redisconn.Call, []string, error) {
	r0 := reqs[0]
	l, err := idmp.StateKeys(r0.Stream, s.Conn.Cluster())
	if err != nil {
		// A name no state key can share a slot with holds no emulated
		// state in a cluster: its adds need no guard, but go as the guard
		// goes, through the script, with keys in its slot only.
		l = idmp.StateLayout{Stream: r0.Stream, Meta: r0.Stream, PIDs: r0.Stream, IDsPrefix: r0.Stream, OrderPrefix: r0.Stream}
	}
	it := &guardItems{pidIndex: make(map[string]int), reqs: reqs, iids: make([]string, len(reqs))}
	var keys []string
	for i := range reqs {
		r := &reqs[i]
		if _, ok := it.pidIndex[r.PID]; !ok {
			it.pidIndex[r.PID] = len(it.pids) + 1
			it.pids = append(it.pids, r.PID)
			keys = append(keys, l.IDs(r.PID))
		}
		it.iids[i] = r.IID
		if r.Auto {
			it.iids[i] = AutoIID(r.Fields)
		}
	}
	call := guardScript.Call(&guardArgs{State: stateArgsOf(r0.Stream, l), PIDKeys: keys, NoMkStream: r0.NoMkStream,
		Deletion: strings.ToUpper(cmp.Or(deletion, r0.Deletion)), Trim: trimArgsOf(&r0), NPIDs: len(it.pids), Items: it, Defaults: s.nativeDefaultArgs()})
	return call, it.iids, nil
}

// errNeedNativeDefaults is the guard's refusal, nothing written: it would
// carry the emulated settings over and needs the server's native defaults
// to know whether the stream's native settings are still them.
var errNeedNativeDefaults = errors.New("the guard needs the server's IDMP defaults")

// nativeDefaultArgs are the guard's last two arguments: the server's
// native defaults once read, "" "" before.
func (s *Streams) nativeDefaultArgs() defaultsArgs { return defaultsArgsOf(s.guardDefaults) }

// LoadNativeDefaults reads CONFIG GET stream-idmp-* once. A user who may
// not read them gets 0 0, which no stream's settings equal: the guard
// then never carries settings over.
func (s *Streams) LoadNativeDefaults(ctx context.Context) {
	if s.guardDefaults != nil {
		return
	}
	d, m, err := s.nativeDefaults(ctx)
	if err != nil {
		d, m = 0, 0
	}
	s.guardDefaults = &idmp.Defaults{Duration: d, MaxSize: m}
}

// GuardFits reports whether every request fits one XADD from Lua (the
// guard script hands the fields to XADD with unpack).
func GuardFits(reqs []AddRequest) bool {
	_, err := checkFieldCounts(reqs)
	return err == nil
}

// parseGuardReply reads the guard's reply: the adds are native, whoever
// answered them.
func parseGuardReply(v any, iids []string, reqs []AddRequest) ([]AddResult, error) {
	r, err := guardScript.Decode(v)
	if err != nil {
		return nil, err
	}
	if r.code == "C" {
		return nil, errNeedNativeDefaults
	}
	res, err := r.addResults("emulated XADD", iids, len(reqs))
	for i := range res {
		res[i].Mode = ModeNative
		if reqs[i].Auto {
			res[i].IID = "" // Redis does not reveal the iid it derived
		}
	}
	if errors.Is(err, errNativeServer) || errors.Is(err, errNeedDefaults) {
		err = r.unexpected("guarded XADD")
	}
	return res, err
}

// scriptsRefused reports a server that will not run idmpctl's scripts for
// this user: EVALSHA/EVAL denied by ACL, or renamed away.
func scriptsRefused(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	if exit.ScriptingDisabled(msg) {
		return true
	}
	return strings.HasPrefix(msg, "noperm") && (strings.Contains(msg, "'evalsha'") || strings.Contains(msg, "'eval'") ||
		strings.Contains(msg, "'script|load'") || strings.Contains(msg, "'script'"))
}

// guardedAddRun is one run of native adds through the guard script, or,
// for a user who may not run scripts (or an add too big for one XADD from
// Lua), through guardedTx.
func (s *Streams) guardedAddRun(ctx context.Context, reqs []AddRequest) ([]AddResult, error) {
	if s.stateless(ctx, reqs[0].Stream) {
		// No state key can share its cluster slot: it holds no emulated
		// state, and the guard's keys would span slots (CROSSSLOT).
		return s.nativeTxRun(ctx, reqs)
	}
	if s.noScripts || !GuardFits(reqs) {
		return s.guardedTx(ctx, reqs)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	for {
		var call *redisconn.Call
		var iids []string
		err := s.Conn.Do(func(c redis.UniversalClient) error {
			var err error
			if call, iids, err = s.GuardCall(reqs, ""); err != nil {
				return err
			}
			s.Conn.RunNotingEviction(ctx, c, call)
			return call.Cmd.Err()
		})
		if scriptsRefused(err) {
			s.noScripts = true
			return s.guardedTx(ctx, reqs)
		}
		if err != nil {
			return nil, scriptErr(err)
		}
		res, err := parseGuardReply(call.Cmd.Val(), iids, reqs)
		if errors.Is(err, errNeedNativeDefaults) && s.guardDefaults == nil {
			s.LoadNativeDefaults(ctx)
			continue
		}
		return res, err
	}
}

// stateless reports a cluster stream whose name holds '}' without a hash
// tag: no emulated state key can share its slot (idmp.StateKeys). Only
// such a name asks whether the server is a cluster (Capabilities) first.
func (s *Streams) stateless(ctx context.Context, stream string) bool {
	if idmp.HasHashTag(stream) || !strings.Contains(stream, "}") {
		return false
	}
	if _, err := s.Conn.Capabilities(ctx); err != nil {
		return false
	}
	_, err := idmp.StateKeys(stream, s.Conn.Cluster())
	return err != nil
}

// maxGuardAborts bounds the EXECs of one run that a write to the
// stream's emulated state keys aborts.
const maxGuardAborts = 20

// guardedTx is the guard without scripts: the stream's emulated state
// keys are WATCHed and checked absent, then the adds go in one MULTI/EXEC
// ([XINFO, (XADD, XINFO)...], nativeAddRun's), which does not run if
// state appeared since. While the stream holds such state the adds are
// refused, with nothing written.
func (s *Streams) guardedTx(ctx context.Context, reqs []AddRequest) ([]AddResult, error) {
	stream := reqs[0].Stream
	l, lerr := idmp.StateKeys(stream, s.Conn.Cluster())
	if lerr != nil {
		return s.nativeTxRun(ctx, reqs) // no state key can exist for it
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		var tx nativeTx
		var present bool
		err := s.Conn.Do(func(c redis.UniversalClient) error {
			return c.Watch(ctx, func(t *redis.Tx) error {
				n, err := t.Exists(ctx, l.Meta, l.PIDs).Result()
				if err != nil {
					return err
				}
				if present = n > 0; present {
					return nil
				}
				_, err = t.TxPipelined(ctx, func(p redis.Pipeliner) error {
					tx = queueNativeAdds(ctx, p, reqs)
					return nil
				})
				return err
			}, l.Meta, l.PIDs)
		})
		if present {
			return nil, errStateNeedsScripts(stream)
		}
		if errors.Is(err, redis.TxFailedErr) {
			if attempt < maxGuardAborts {
				continue
			}
			return nil, exit.New(exit.Busy, "", "the stream's emulated IDMP state keys kept changing between the check and the add (%d tries)", attempt+1)
		}
		var reply redis.Error
		if err != nil && (tx.adds == nil || !errors.Is(err, redis.Nil) && !errors.As(err, &reply)) {
			return nil, err // the check failed (NOPERM), or the round trip did
		}
		out, rerr := tx.read(reqs)
		if rerr != nil {
			return out, rerr
		}
		return out, s.nativeOriginals(ctx, stream, out)
	}
}

// errStateNeedsScripts refuses an add to a stream that holds emulated
// state, for a user who may not run the guard script.
func errStateNeedsScripts(stream string) error {
	e := exit.New(exit.Config, "", "stream %s holds emulated IDMP state, and this user may not run the script that keeps its iids from being added again natively: nothing was written", strconv.Quote(stream))
	// No "wait until its DURATION has passed": the state's keys have no
	// TTL and stay past it, until a script (migrate) removes them.
	e.Hint = "migrate it first with a user who may run scripts (idmpctl migrate " + strconv.Quote(stream) + ": once its DURATION has passed, that only removes it), or grant this user EVALSHA and EVAL"
	return e
}

// checkNoState refuses (78) a native add to a stream that holds emulated
// state, for a user who may not run the guard script. The caller's
// transaction WATCHes the keys (watchAbsent) so that state written after
// this check aborts it.
func (s *Streams) checkNoState(ctx context.Context, stream string) error {
	l, err := idmp.StateKeys(stream, s.Conn.Cluster())
	if err != nil {
		return nil
	}
	cctx, cancel := s.bound(ctx)
	defer cancel()
	n, err := s.Conn.Client().Exists(cctx, l.Meta, l.PIDs).Result()
	if err != nil {
		return err
	}
	if n > 0 {
		return errStateNeedsScripts(stream)
	}
	return nil
}

// watchAbsent WATCHes the stream's emulated state keys on cn and counts
// those that exist: a MULTI on cn after it runs only while none appeared.
func watchAbsent(ctx context.Context, cn *redis.Conn, l idmp.StateLayout) (int64, error) {
	var n *redis.IntCmd
	_, err := cn.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "WATCH", l.Meta, l.PIDs)
		n = p.Exists(ctx, l.Meta, l.PIDs)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n.Val(), nil
}

// guardedChunk is the guard's call inside a native batch chunk's
// MULTI/EXEC (batch_native.go): the chunk's progress record moves in the
// same transaction as the adds, as it does without emulated state.
//
// The contract of a native batch chunk with the guard: before its
// transaction it WATCHes the stream's emulated state keys (StateLayout
// Meta and PIDs) with its progress record and checks whether either
// exists; when none does, it adds natively as it likes (the WATCH aborts
// it if state appears); when one does, its adds go through the guard
// script (this call, or GuardCall in a script of its own), and without
// scripting rights it is refused (78) with nothing written.
type guardedChunk struct {
	call *redisconn.Call
	iids []string
	cmd  *redis.Cmd
}

// guardChunk prepares the guard for a chunk's requests.
func (s *Streams) guardChunk(ctx context.Context, stream string, reqs []AddRequest) (*guardedChunk, error) {
	if i, err := checkFieldCounts(reqs); err != nil {
		e := exit.New(exit.Data, "", "request %d: %v", i+1, err)
		e.Hint = "the stream holds emulated IDMP state, whose guard hands an add's fields to XADD from Lua: migrate the stream first (idmpctl migrate " + strconv.Quote(stream) + ")"
		return nil, e
	}
	s.LoadNativeDefaults(ctx)
	call, iids, err := s.GuardCall(reqs, "")
	if err != nil {
		return nil, err
	}
	return &guardedChunk{call: call, iids: iids}, nil
}

// queue adds the guard to a transaction as EVAL: an EVALSHA that the
// server's script cache lost would fail at EXEC, after the record moved.
func (g *guardedChunk) queue(ctx context.Context, p redis.Pipeliner) {
	g.cmd = redis.NewCmd(ctx, g.call.Command(true)...)
	_ = p.Process(ctx, g.cmd)
}
