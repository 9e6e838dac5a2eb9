// Package exec runs Redis commands as Redis 8.6 would answer them, on any
// server: XADD IDMP/IDMPAUTO, XCFGSET, XINFO STREAM, CONFIG GET/SET
// stream-idmp-*, and RENAME/RENAMENX/COPY of streams are served natively by
// a server with IDMP and emulated with idmpctl's scripts elsewhere; every
// other command passes through. Commands go pipelined, in order, on one
// connection of its own (a redisconn.Pipe); replies keep RESP's types
// (internal/resp) for internal/render. It never prints.
package exec

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// Options configure a session.
type Options struct {
	Mode  stream.Mode
	RESP3 bool // speak RESP3 (HELLO 3), for maps in -o json as redis-cli --json has them
	// Emit receives each reply in order, in the reader's goroutine; more:
	// further replies are already read (the caller may hold its output).
	Emit     func(r resp.Reply, more bool)
	Depth    int           // bounds the commands in flight (default 4096)
	Timeout  time.Duration // bounds the wait for each reply (0: none)
	ReadOnly bool          // refuse, before sending, every command that could write (readOnlyRefusal)
}

// Session is a connection running commands in order: Do writes a command
// (pipelined), replies reach Options.Emit in order, Close waits for all.
type Session struct {
	conn    *redisconn.Conn
	opt     Options
	streams *stream.Streams // opened in Options.Mode once a command needs it (resolve)
	native  bool            // the streams' mode is not emulated
	pipe    *redisconn.Pipe // the connection, and the scripts loaded on it

	roInfo    map[string]*commandEntry // ReadOnly: COMMAND INFO by command (nil: unknown)
	roInfoErr error                    // ReadOnly: COMMAND INFO was denied (ACL)
	inMulti   bool
	txLoads   map[*redisconn.Script]bool // the scripts whose SCRIPT LOAD the open transaction queued
	// loadAnswered: the reader read the reply of a SCRIPT LOAD of the
	// session's (loadDenied: one that was refused, an ACL without SCRIPT).
	loadAnswered, loadDenied atomic.Bool
	loadProbed               bool                // probeLoad sent its load
	cu                       catchupState        // catchup.go
	defaultsInTx             bool                // a CONFIG SET of the defaults was queued: read them again after EXEC or DISCARD
	run                      []stream.AddRequest // adds waiting to go in one call
	runBytes                 int                 // their arguments' bytes
	runReplies               []resp.Reply        // the reader's: a run's replies (sendRun)

	pending  chan *pending
	readDone chan struct{}
	failure  atomic.Pointer[error] // the session's first error (fail)
	closed   bool
}

// pending is one command sent, as the reader must read it back.
type pending struct {
	n       int                           // wire replies to read
	skip    int                           // leading replies that are the session's (SCRIPT LOAD): dropped unless errors
	combine func([]resp.Reply) resp.Reply // the command's reply from its wire replies (after skip)
	fixed   *resp.Reply                   // a reply decided without the server (n == 0), or one that replaces a stand-in's
	queued  bool                          // sent inside MULTI: answered QUEUED (if the server opened it)
	multi   bool                          // MULTI: the server opens a transaction unless it refuses
	extra   int                           // further wire replies of the (last) command: (P|S)UNSUBSCRIBE's
	// pushName: a RESP3 push of this kind (lower case) is the command's
	// reply; any other push is out of band (invalidations), not a reply.
	pushName string
	gen      int                 // the pipe's script generation when it was sent (redisconn.Pipe.ScriptGen)
	script   bool                // the session's own script call (an emulated command): its NOSCRIPT is ours to word
	exec     bool                // EXEC: the queued commands' replies in one array
	endTx    bool                // EXEC, DISCARD, RESET: the transaction's queue ends
	hidden   bool                // the session's own (AUTH, SELECT, HELLO): no output; an error ends the session
	outs     int                 // with split: the replies it makes (a run of adds)
	loads    []*redisconn.Script // queued in MULTI: the scripts its SCRIPT LOADs load at EXEC
	barrier  chan struct{}       // closed when the reader reaches it (sync)
	internal func([]resp.Reply)  // the session's own command: its replies go here, not out
	split    func([]resp.Reply) []resp.Reply
}

// Open connects. Nothing is sent before the first Do (or Flush).
func Open(ctx context.Context, conn *redisconn.Conn, opt Options) (*Session, error) {
	// The session's connection lives until Close, whatever becomes of ctx.
	pipe, hello, err := conn.DialPipe(context.WithoutCancel(ctx), opt.Timeout)
	if err != nil {
		return nil, err
	}
	if opt.Depth <= 0 {
		opt.Depth = 4096
	}
	s := &Session{
		conn: conn, opt: opt, pipe: pipe,
		pending: make(chan *pending, opt.Depth), readDone: make(chan struct{}),
	}
	go s.readLoop()
	s.cu.db = helloDB(hello)
	for _, h := range hello {
		s.send(&pending{hidden: true}, cmd(h))
	}
	// HELLO says what the server is (resolve settles the mode on it) and
	// speaks RESP3 when asked.
	proto := "2"
	if opt.RESP3 {
		proto = "3"
	}
	s.send(&pending{internal: func(rs []resp.Reply) {
		fields := map[string]string{}
		for i := 0; i+1 < len(rs[0].Elems); i += 2 {
			fields[rs[0].Elems[i].Str] = rs[0].Elems[i+1].Str
		}
		if !rs[0].IsError() {
			s.conn.LearnHello(fields)
		}
	}}, cmd([]string{"HELLO", proto}))
	if opt.Mode == stream.ModeNative {
		// Asked for, native IDMP on a server without it is a usage error
		// before the first command runs, not at the first that needs it.
		if err := s.resolve(ctx); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Do sends one command. Its reply comes to Emit in its turn. An error
// means the session cannot go on (the connection failed).
func (s *Session) Do(ctx context.Context, args []string) error {
	if err := s.err(); err != nil {
		return err
	}
	if len(args) == 0 {
		return nil
	}
	c := Command{Args: args, Op: OpPass, Name: strings.ToUpper(args[0])}
	switch c.Name {
	case "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "MONITOR", "SYNC", "PSYNC":
		// A stream of messages, which one reply per command cannot follow.
		return s.Reply(resp.ErrorOf("ERR idmpctl exec runs commands that answer once: " + c.Name + " needs redis-cli"))
	case "CLIENT":
		// The session would wait for replies that never come.
		if len(args) == 3 && strings.EqualFold(args[1], "REPLY") && (strings.EqualFold(args[2], "OFF") || strings.EqualFold(args[2], "SKIP")) {
			return s.Reply(resp.ErrorOf("ERR idmpctl exec needs a reply to every command: CLIENT REPLY " + strings.ToUpper(args[2]) + " needs redis-cli"))
		}
	}
	if s.opt.ReadOnly {
		if why := s.readOnlyRefusal(ctx, args); why != "" {
			return s.refuseReadOnly(why)
		}
	}
	if !s.native || c.Name == "XADD" {
		c.parse()
		if c.Op != OpPass {
			if err := s.resolve(ctx); err != nil {
				return err
			}
		}
		if s.native && c.Op != OpXAdd {
			// Natively the server serves every command but XADD
			// IDMP/IDMPAUTO (the upgrade guard's script), and its own errors.
			c = Command{Args: args, Op: OpPass, Name: c.Name}
		}
	}
	if c.Op != OpXAdd || s.inMulti {
		if err := s.flushRun(); err != nil {
			return err
		}
	}
	if !s.native && c.Op != OpPass && c.Op != OpError && c.CfgErr == "" && s.streams.Defaults == nil {
		// Read once the commands sent before have run (a transaction that
		// set them, or not).
		if err := s.sync(); err != nil {
			return err
		}
		if err := s.streams.LoadDefaults(ctx); err != nil {
			return err
		}
	}
	if c.Op == OpXAdd {
		return s.xadd(&c)
	}
	p := &pending{queued: s.inMulti}
	// A MULTI, DISCARD or RESET with arguments is an arity error, which
	// changes no transaction; an EXEC with arguments ends one (EXECABORT).
	// A MULTI the server refuses otherwise (ACL) the reader learns of (txOpen).
	switch {
	case c.Name == "MULTI" && len(args) == 1:
		s.probeLoad()
		p.queued, p.multi, s.inMulti = false, true, true
		clear(s.txLoads)
	case c.Name == "EXEC", (c.Name == "DISCARD" || c.Name == "RESET") && len(args) == 1:
		p.queued, p.exec, p.endTx = false, c.Name == "EXEC" && s.inMulti, true
		s.inMulti = false
		if s.defaultsInTx {
			s.defaultsInTx = false
			s.streams.Defaults = nil // read again before the next emulated command
		}
	case c.Name == "WATCH", c.Name == "QUIT":
		p.queued = false
	case c.Name == "SCRIPT" && (len(args) == 2 || len(args) == 3) && strings.EqualFold(args[1], "FLUSH"):
		// The commands after it (queued after it too) load their scripts again.
		s.pipe.ScriptsFlushed()
		clear(s.txLoads)
	case !p.queued && (c.Name == "UNSUBSCRIBE" || c.Name == "PUNSUBSCRIBE" || c.Name == "SUNSUBSCRIBE"):
		// One reply per channel named (one when none is): RESP2 arrays, RESP3 pushes.
		p.extra, p.pushName = max(len(args)-2, 0), strings.ToLower(c.Name)
		p.split = func(rs []resp.Reply) []resp.Reply { return rs }
	}
	s.noteDB(c.Name, args)
	return s.dispatch(p, c)
}

// Reply is a reply decided without the server, in its turn among the
// others (a line that cannot be split).
func (s *Session) Reply(r resp.Reply) error {
	if err := s.err(); err != nil {
		return err
	}
	if err := s.flushRun(); err != nil {
		return err
	}
	s.fixedReply(&pending{}, r, false)
	return nil
}

func (s *Session) dispatch(p *pending, c Command) error {
	switch c.Op {
	case OpPass:
		s.send(p, cmd(c.Args))
	case OpError:
		s.fixedReply(p, resp.ErrorOf(c.Err), queueTimeError(c))
	case OpXCfgSet:
		if c.CfgErr != "" {
			s.xcfgsetRefused(p, c)
			return nil
		}
		call, err := s.streams.CfgSetCall(c.Stream, c.Cfg.Duration, c.Cfg.MaxSize)
		if err != nil {
			return s.local(p, err)
		}
		p.combine = func(rs []resp.Reply) resp.Reply {
			if r := rs[0]; r.IsError() {
				return r
			}
			return resp.StatusOf("OK")
		}
		s.send(p, script(call))
	case OpXInfo:
		return s.xinfo(p, c)
	case OpXInfoGroups:
		p.combine = func(rs []resp.Reply) resp.Reply { return withoutTokens(rs[0]) }
		s.send(p, cmd(c.Args))
	case OpXIdmpRecord:
		return s.record(p, c)
	case OpDump:
		return s.dump(p, c)
	case OpRestore:
		return s.restore(p, c)
	case OpDel:
		call, err := s.streams.DelCall(c.Name, c.Args[1:])
		if err != nil {
			s.send(p, cmd(c.Args)) // a name whose state could not be named: no state
			return nil
		}
		s.send(p, script(call))
	case OpConfigGet:
		s.configGet(p, c)
	case OpConfigSet:
		return s.configSet(p, c)
	case OpMove:
		return s.move(p, c)
	}
	return nil
}
