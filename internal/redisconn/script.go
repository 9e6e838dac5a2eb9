package redisconn

import (
	"context"
	_ "embed"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/prelude.lua
var luaPrelude string

// Script is a Lua script of idmpctl: the shared prelude (lua/prelude.lua)
// and its own parts, built on first use. Building hashes the source
// (EVALSHA needs its SHA1); doing that for every script at process start
// would cost every invocation, also of commands that never run a script.
type Script struct {
	script func() *redis.Script
	loaded atomic.Bool // this process saw a server run it (see RunDurable)
}

// NewScript makes a script of the prelude and parts, in order.
func NewScript(parts ...string) *Script {
	return &Script{script: sync.OnceValue(func() *redis.Script {
		return redis.NewScript(luaPrelude + strings.Join(parts, ""))
	})}
}

// Hash is the script's SHA1, as EVALSHA takes it.
func (s *Script) Hash() string { return s.script().Hash() }

// Run runs the script with EVALSHA, and with EVAL when the server's script
// cache does not hold it (NOSCRIPT): one round trip in the steady state.
func (s *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	cmd := s.script().Run(ctx, c, keys, args...)
	s.noteRun(cmd.Err())
	return cmd
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

// Call is one call of a script in a pipeline (RunPipelined): its keys and
// arguments in, its reply out.
type Call struct {
	Script *Script
	Keys   []string
	Args   []any
	Cmd    *redis.Cmd
}

// RunPipelined sends calls in one pipeline with EVALSHA, then once more
// with EVAL those the server answered NOSCRIPT (which it did not run), in
// order. Only a failure of a whole round trip is returned; each call's
// reply or error is on its Cmd.
func (c *Conn) RunPipelined(ctx context.Context, calls []*Call) error {
	run := func(calls []*Call, eval bool) error {
		return c.Pipelined(ctx, func(p redis.Pipeliner, ctx context.Context) {
			for _, cl := range calls {
				if eval {
					cl.Cmd = cl.Script.script().Eval(ctx, p, cl.Keys, cl.Args...)
				} else {
					cl.Cmd = cl.Script.script().EvalSha(ctx, p, cl.Keys, cl.Args...)
				}
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
		cl.Script.noteRun(cl.Cmd.Err())
	}
	return err
}
