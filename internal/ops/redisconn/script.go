package redisconn

import (
	"context"
	_ "embed"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/redis/go-redis/v9"
)

//go:embed lua/prelude.lua
var luaPrelude string

// Script is a Lua script of idmpctl: the shared prelude (lua/prelude.lua)
// and its own parts, built on first use. Building hashes the source
// (EVALSHA needs its SHA1); doing that for every script at process start
// would cost every invocation, also of commands that never run a script.
// A script is made with NewLua, and called with its typed arguments
// (Lua.Call).
type Script struct {
	script func() *redis.Script
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
	parts = sync.OnceValue(parts)
	src := sync.OnceValue(func() string { return strings.Join(parts(), "") })
	s := &Script{src: src, parts: parts, script: sync.OnceValue(func() *redis.Script {
		return redis.NewScript(src())
	})}
	scripts.Lock()
	scripts.all = append(scripts.all, s)
	scripts.Unlock()
	return s
}

// Scripts are the scripts made so far (by the packages imported), for a
// test that checks them all (the Lua linter).
func Scripts() []*Script {
	scripts.Lock()
	defer scripts.Unlock()
	return slices.Clone(scripts.all)
}

// Parts are the script's parts, the prelude first: its source is their
// concatenation.
func (s *Script) Parts() []string { return slices.Clone(s.parts()) }

// Hash is the script's SHA1, as EVALSHA takes it.
func (s *Script) Hash() string { return s.script().Hash() }

// Run runs the call with EVALSHA, and with EVAL when the server's script
// cache does not hold its script (NOSCRIPT): one round trip in the steady
// state. The reply is on cl.Cmd too.
func (cl *Call) Run(ctx context.Context, c redis.Scripter) *redis.Cmd {
	cl.mustBeMade()
	s := cl.Script
	cmd := s.script().Run(ctx, c, cl.Keys, cl.Args...)
	if evalDisabled(cmd.Err()) {
		cmd = s.loadAndRun(ctx, c, cl.Keys, cl.Args)
	}
	s.noteRun(cmd.Err())
	cl.Cmd = cmd
	return cmd
}

// evalDisabled reports EVAL's reply on a server where it is renamed or
// disabled (rename-command): EVALSHA may still be there.
func evalDisabled(err error) bool {
	return err != nil && exit.ScriptingDisabled(err.Error())
}

// loadAndRun runs the script with SCRIPT LOAD, then EVALSHA: on a server
// that renamed EVAL away but kept EVALSHA, as xadd --batch's pipe does.
func (s *Script) loadAndRun(ctx context.Context, c redis.Scripter, keys []string, args []any) *redis.Cmd {
	if err := c.ScriptLoad(ctx, s.src()).Err(); err != nil {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	return c.EvalSha(ctx, s.Hash(), keys, args...)
}

// noteRun notes a reply of the server to the script: any reply but
// NOSCRIPT (a result, or the script's own error) means the server's script
// cache holds it now; a network error says nothing.
func (s *Script) noteRun(err error) {
	var reply redis.Error
	if err == nil || errors.Is(err, redis.Nil) || errors.As(err, &reply) && !redis.HasErrorPrefix(err, "NOSCRIPT") {
		s.loaded.Store(true)
	}
}

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

// newCall is a call whose arguments are appended to Args, room for nargs
// made: they continue the command's own argument list, which is sent as it
// is. A call of thousands of arguments (a batch chunk) then costs no copy
// of them, as go-redis's Script makes, and none of the garbage.
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

// queue adds the call to p.
func (cl *Call) queue(ctx context.Context, p redis.Pipeliner, eval bool) {
	cl.Cmd = redis.NewCmd(ctx, cl.Command(eval)...)
	_ = p.Process(ctx, cl.Cmd)
}

// RunPipelined sends calls in one pipeline with EVALSHA, then once more
// with EVAL those the server answered NOSCRIPT (which it did not run), in
// order. Only a failure of a whole round trip is returned; each call's
// reply or error is on its Cmd.
func (c *Conn) RunPipelined(ctx context.Context, calls []*Call) error {
	run := func(calls []*Call, eval bool) error {
		return c.Pipelined(ctx, func(p redis.Pipeliner, ctx context.Context) {
			for _, cl := range calls {
				cl.queue(ctx, p, eval)
			}
		})
	}
	if err := run(calls, false); err != nil {
		return err
	}
	var missing []*Call
	for _, cl := range calls {
		if redis.HasErrorPrefix(cl.Cmd.Err(), "NOSCRIPT") {
			missing = append(missing, cl)
		} else {
			cl.Script.noteRun(cl.Cmd.Err())
		}
	}
	if len(missing) == 0 {
		return nil
	}
	err := run(missing, true)
	for _, cl := range missing {
		if evalDisabled(cl.Cmd.Err()) {
			cl.Cmd = cl.Script.loadAndRun(ctx, c.Client(), cl.Keys, cl.Args)
		}
		cl.Script.noteRun(cl.Cmd.Err())
	}
	return err
}
