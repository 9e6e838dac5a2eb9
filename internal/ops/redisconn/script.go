package redisconn

import (
	"context"
	_ "embed"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/redis/go-redis/v9"
)

//go:embed lua/prelude.lua
var luaPrelude string

// Script is the prelude (lua/prelude.lua) and its parts, made by NewLua and
// built on first use: hashing every script at start would cost every run.
type Script struct {
	hash   func() string
	src    func() string
	parts  func() []string
	loaded atomic.Bool // this process saw a server run it (see RunDurable)
}

// scripts are the scripts made, in order (Scripts).
var scripts struct {
	sync.Mutex
	all []*Script
}

// newScript makes a script of parts, in order (the prelude first).
func newScript(parts func() []string) *Script {
	s := &Script{parts: sync.OnceValue(parts)}
	s.src = sync.OnceValue(func() string { return strings.Join(s.parts(), "") })
	s.hash = sync.OnceValue(func() string { return redis.NewScript(s.src()).Hash() })
	scripts.Lock()
	scripts.all = append(scripts.all, s)
	scripts.Unlock()
	return s
}

// Scripts are the scripts made so far, for the test that lints them all.
func Scripts() []*Script {
	scripts.Lock()
	defer scripts.Unlock()
	return slices.Clone(scripts.all)
}

// Parts are the script's parts, the prelude first, that its source joins.
func (s *Script) Parts() []string { return slices.Clone(s.parts()) }

// Hash is the script's SHA1, as EVALSHA takes it.
func (s *Script) Hash() string { return s.hash() }

// noteRun: any reply but NOSCRIPT means the server's cache holds the
// script; a network error says nothing.
func (s *Script) noteRun(err error) {
	var reply redis.Error
	if err == nil || errors.Is(err, redis.Nil) || errors.As(err, &reply) && !noScript(err) {
		s.loaded.Store(true)
	}
}

// noScript reports the server's NOSCRIPT: the call did not run.
func noScript(err error) bool { return redis.HasErrorPrefix(err, "NOSCRIPT") }

// Call is one call of a script (Lua.Call): its keys and arguments in, its
// reply out (Cmd, once run).
type Call struct {
	Script *Script
	Keys   []string
	Args   []any
	Cmd    *redis.Cmd
	// whole is the command's argument list (EVALSHA, the SHA, the number of
	// keys, the keys), which Args continues in place (newCall).
	whole []any
}

// newCall's Args continue the command's own argument list (room for
// nargs), so a batch chunk's thousands cost no copy, unlike go-redis's Script.
func newCall(s *Script, keys []string, nargs int) *Call {
	n := 3 + len(keys)
	whole := make([]any, n, n+nargs)
	whole[2] = len(keys)
	for i, k := range keys {
		whole[3+i] = k
	}
	return &Call{Script: s, Keys: keys, Args: whole[n:], whole: whole}
}

// mustBeMade holds the rule that every script call goes through its typed
// arguments: a Call not made by Lua.Call is a programming error.
func (cl *Call) mustBeMade() {
	if cl.whole == nil {
		panic("redisconn: a script call not made by Lua.Call")
	}
}

// Command is the call as one command's arguments: EVALSHA (or EVAL), the
// SHA (or the source), the number of keys, the keys, the arguments.
func (cl *Call) Command(eval bool) []any {
	cl.mustBeMade()
	n := 3 + len(cl.Keys)
	var args []any
	// Args still continues whole unless an append outgrew the room made.
	if len(cl.Args) > 0 && cap(cl.whole)-n >= len(cl.Args) && &cl.whole[n : n+1][0] == &cl.Args[0] {
		args = cl.whole[:n+len(cl.Args)]
	} else {
		args = make([]any, n, n+len(cl.Args))
		args[2] = len(cl.Keys)
		for i, k := range cl.Keys {
			args[3+i] = k
		}
		args = append(args, cl.Args...)
	}
	if eval {
		args[0], args[1] = "eval", cl.Script.src()
	} else {
		args[0], args[1] = "evalsha", cl.Script.Hash()
	}
	return args
}

// RunOpts say where and how Run sends its calls.
type RunOpts struct {
	Key        string     // a key of the calls: its primary runs them, and the wait
	Durability Durability // the wait after the calls, in their round trip
	Eviction   bool       // read the eviction settings in the round trip, once per Conn
}

// how a round of Run sends a call.
const (
	bySHA  = iota // EVALSHA (EVAL for a script not seen loaded when a wait follows)
	byEval        // EVAL: the server answered NOSCRIPT
	byLoad        // SCRIPT LOAD, then EVALSHA: EVAL is renamed away or disabled
)

// Run runs calls in one round trip, the one place that knows how a script
// reaches the server: EVALSHA, then EVAL after NOSCRIPT, then SCRIPT LOAD
// where EVAL is renamed away. Replies are on each Cmd; Run returns the
// weakest Ack of the round trips that wrote, and only a round trip's
// failure. With a wait, an unseen script goes as EVAL: a NOSCRIPT's wait
// would block for nothing written.
func (c *Conn) Run(ctx context.Context, o RunOpts, calls ...*Call) (Ack, error) {
	var ack Ack
	acked := false
	how := bySHA
	for _, cl := range calls {
		cl.Cmd = nil
	}
	for len(calls) > 0 {
		note := func() {}
		a, err := c.PipelinedDurable(ctx, o.Key, o.Durability, func(p redis.Pipeliner, ctx context.Context) {
			if o.Eviction {
				note = c.QueueEviction(ctx, p)
			}
			for _, cl := range calls {
				cl.mustBeMade()
				if how == byLoad {
					p.ScriptLoad(ctx, cl.Script.src())
				}
				eval := how == byEval || how == bySHA && o.Durability.On() && !cl.Script.loaded.Load()
				cl.Cmd = redis.NewCmd(ctx, cl.Command(eval)...)
				_ = p.Process(ctx, cl.Cmd)
			}
		})
		note()
		var again []*Call
		ran, next := false, how+1
		for _, cl := range calls {
			if cl.Cmd == nil { // refused before it was queued (CheckDurable)
				cl.Cmd = redis.NewCmd(ctx)
			}
			e := cl.Cmd.Err()
			if e == nil && err != nil && cl.Cmd.Val() == nil {
				cl.Cmd.SetErr(err) // the round trip failed before its reply
			}
			switch {
			case how == bySHA && noScript(e):
				again = append(again, cl)
			case how != byLoad && e != nil && exit.ScriptingDisabled(e.Error()) && cl.Cmd.Name() == "eval":
				// Sent as EVAL (after a NOSCRIPT, or with a wait after it).
				again, next = append(again, cl), byLoad
			default:
				cl.Script.noteRun(cl.Cmd.Err())
				ran = ran || e == nil || !noScript(e)
			}
		}
		if ran && o.Durability.On() {
			if acked { // the weaker of the round trips' acknowledgements
				a = ack.Min(a)
			}
			ack, acked = a, true
		}
		if err != nil || len(again) == 0 || how == byLoad {
			if !acked {
				ack = a
			}
			return ack, err
		}
		calls, how = again, next
	}
	return ack, nil
}

// scriptPlace is what Redis 7+ appends to an error raised in a script.
var scriptPlace = regexp.MustCompile(` script: ([0-9a-f]{40}), on @user_script:\d+\.$`)

// unknownArgs starts the server's list of the first arguments of a command
// it does not know (EVALSHA or EVAL renamed away).
const unknownArgs = ", with args beginning with: '"

// ownError is msg without the place (" script: SHA, on @user_script:N.")
// when it is an error of one of idmpctl's scripts, or without the
// arguments (the SHA or source, the state keys) of a call of one the server
// does not know: the server's words, as its command gives them natively.
// Other scripts' errors (exec's EVAL) keep theirs, as redis-cli shows them.
func ownError(msg string) (string, bool) {
	if i := strings.Index(msg, unknownArgs); i >= 0 && exit.Renamed(msg, "evalsha", "eval") {
		args := msg[i+len(unknownArgs):]
		if strings.HasPrefix(args, luaPrelude[:min(40, len(luaPrelude))]) ||
			slices.ContainsFunc(Scripts(), func(s *Script) bool { return strings.HasPrefix(args, s.Hash()+"'") }) {
			return msg[:i], true
		}
	}
	m := scriptPlace.FindStringSubmatchIndex(msg)
	if m == nil || !slices.ContainsFunc(Scripts(), func(s *Script) bool { return s.Hash() == msg[m[2]:m[3]] }) {
		return msg, false
	}
	return msg[:m[0]], true
}
