// Package exec runs Redis commands as Redis 8.6 would answer them, on any
// server: XADD IDMP/IDMPAUTO, XCFGSET, XINFO STREAM, CONFIG GET/SET
// stream-idmp-*, and RENAME/RENAMENX/COPY of streams are served natively by
// a server with IDMP and emulated with idmpctl's scripts elsewhere; every
// other command passes through. Commands go on one connection of its own,
// in order and pipelined; replies keep RESP's types (internal/resp) for
// output as redis-cli prints them (internal/render). It never prints.
package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// Options configure a session.
type Options struct {
	Mode  stream.Mode
	RESP3 bool // speak RESP3 (HELLO 3), for maps in -o json as redis-cli --json has them
	// Emit receives each reply in order, in the reader's goroutine; more
	// says that further replies are already read (the caller may hold its
	// output until one comes with more false).
	Emit func(r resp.Reply, more bool)
	// Depth bounds the commands in flight (default 4096).
	Depth int
	// Timeout bounds the wait for each reply (0: none).
	Timeout time.Duration
}

// Session is a connection running commands in order. Do queues a command
// (writing it, pipelined); replies reach Options.Emit in order. Close
// waits for every reply.
type Session struct {
	conn    *redisconn.Conn
	opt     Options
	mode    stream.Mode
	streams *stream.Streams
	nc      net.Conn
	w       *bufio.Writer
	rd      *bufio.Reader
	buf     []byte

	loaded  map[*redisconn.Script]bool
	inMulti bool
	// defaultsInTx: a CONFIG SET of the defaults was queued in the
	// transaction; after EXEC or DISCARD they are read again.
	defaultsInTx bool
	run          []stream.AddRequest // adds waiting to go in one call
	runBytes     int                 // their arguments' bytes
	reload       bool                // the server lost its scripts (NOSCRIPT): load them again
	// execLoaded are scripts a transaction's EXEC loaded (the reader's
	// news for the writer, under mu).
	execLoaded []*redisconn.Script

	pending  chan *pending
	readDone chan struct{}
	mu       sync.Mutex
	readErr  error
	closed   bool
}

// pending is one command sent, as the reader must read it back.
type pending struct {
	n       int                           // wire replies to read
	skip    int                           // leading replies that are the session's (SCRIPT LOAD): dropped unless errors
	combine func([]resp.Reply) resp.Reply // the command's reply from its wire replies (after skip)
	fixed   *resp.Reply                   // a reply decided without the server (n == 0), or one that replaces a stand-in's
	queued  bool                          // sent inside MULTI: answered QUEUED
	exec    bool                          // EXEC: the queued commands' replies in one array
	endTx   bool                          // EXEC, DISCARD, RESET: the transaction's queue ends
	hidden  bool                          // the session's own (AUTH, SELECT, HELLO): no output; an error ends the session
	outs    int                           // with split: the replies it makes (a run of adds)
	loads   []*redisconn.Script           // queued in MULTI: the scripts its SCRIPT LOADs load at EXEC
	barrier chan struct{}                 // closed when the reader reaches it (sync)
	split   func([]resp.Reply) []resp.Reply
}

// Open connects. Nothing is sent before the first Do (or Flush).
func Open(ctx context.Context, conn *redisconn.Conn, opt Options) (*Session, error) {
	nc, hello, err := conn.DialRaw(ctx)
	if err != nil {
		return nil, err
	}
	if opt.Depth <= 0 {
		opt.Depth = 4096
	}
	streams, err := stream.NewStreams(conn, stream.ModeEmulated)
	if err != nil {
		nc.Close()
		return nil, err
	}
	s := &Session{
		conn: conn, opt: opt, mode: opt.Mode, streams: streams, nc: nc,
		w: bufio.NewWriterSize(nc, 64<<10), rd: bufio.NewReaderSize(nc, 64<<10),
		loaded: map[*redisconn.Script]bool{}, pending: make(chan *pending, opt.Depth),
		readDone: make(chan struct{}),
	}
	go s.readLoop()
	for _, h := range hello {
		s.send(&pending{hidden: true}, cmd(h))
	}
	if opt.RESP3 {
		s.send(&pending{hidden: true}, cmd([]string{"HELLO", "3"}))
	}
	return s, nil
}

// Mode is the mode in force: auto until the first IDMP command settles it.
func (s *Session) Mode() stream.Mode { return s.mode }

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
		// They turn the connection into a stream of messages, which a
		// session of one reply per command cannot follow.
		return s.Reply(resp.ErrorOf("ERR idmpctl exec runs commands that answer once: " + c.Name + " needs redis-cli"))
	}
	if s.mode != stream.ModeNative {
		c = Parse(args)
		if c.Op != OpPass && s.mode == stream.ModeAuto {
			if err := s.resolve(ctx); err != nil {
				return err
			}
			if s.mode == stream.ModeNative {
				c = Command{Args: args, Op: OpPass, Name: c.Name}
			}
		}
	}
	if c.Op != OpXAdd || s.inMulti {
		if err := s.flushRun(); err != nil {
			return err
		}
	}
	if c.Op != OpPass && c.Op != OpError && s.streams.Defaults == nil {
		if err := s.loadDefaults(ctx); err != nil {
			return err
		}
	}
	p := &pending{queued: s.inMulti}
	switch c.Name {
	case "MULTI":
		p.queued, s.inMulti = false, true
	case "EXEC", "DISCARD", "RESET":
		p.queued, p.exec, p.endTx = false, c.Name == "EXEC" && s.inMulti, true
		s.inMulti = false
		if s.defaultsInTx {
			s.defaultsInTx = false
			s.streams.Defaults = nil // read again before the next emulated command
		}
	case "WATCH", "QUIT":
		p.queued = false
	}
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
	s.send(&pending{fixed: &r})
	return nil
}

func (s *Session) dispatch(p *pending, c Command) error {
	switch c.Op {
	case OpPass:
		s.send(p, cmd(c.Args))
	case OpError:
		r := resp.ErrorOf(c.Err)
		p.fixed = &r
		if p.queued && queueTimeError(c) {
			// Redis refuses this command when it is queued and then aborts
			// the transaction at EXEC: a stand-in the server also refuses
			// flags it, and its reply is replaced by this one.
			s.send(p, cmd([]string{"XADD"}))
			return nil
		}
		s.send(p)
	case OpXAdd:
		return s.xadd(p, c)
	case OpXCfgSet:
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
	case OpConfigGet:
		s.configGet(p, c)
	case OpConfigSet:
		s.configSet(p, c)
	case OpMove:
		op := c.Name
		call, err := s.streams.MoveCall(op, c.Move.Src, c.Move.Dst, c.Move.Replace, c.Move.DB)
		if err != nil {
			return s.local(p, err)
		}
		p.combine = func(rs []resp.Reply) resp.Reply { return rs[0] }
		s.send(p, script(call))
	}
	return nil
}

// queueTimeError is an error Redis gives when a command is queued in
// MULTI (its command table's arity), rather than when EXEC runs it.
func queueTimeError(c Command) bool {
	switch c.Name {
	case "XADD":
		return len(c.Args) < 5
	case "XCFGSET":
		return len(c.Args) < 2
	}
	return false
}

// local answers a command with an error found before sending it.
func (s *Session) local(p *pending, err error) error {
	r := resp.ErrorOf("ERR " + err.Error())
	p.fixed = &r
	s.send(p)
	return nil
}

func (s *Session) xadd(p *pending, c Command) error {
	if c.Deletion == "DELREF" || c.Deletion == "ACKED" {
		if c.Add.MaxLen > 0 || c.Add.MinID != "" {
			return s.local(p, fmt.Errorf("%s with MAXLEN or MINID is not emulated: emulated IDMP trims as KEEPREF does (Redis 8.2's DELREF and ACKED need native IDMP)", c.Deletion))
		}
		// Without trimming, KEEPREF, DELREF and ACKED do the same: nothing.
	}
	if p.queued {
		// Inside MULTI each command is queued on its own.
		return s.sendRun(p, []stream.AddRequest{c.Add})
	}
	// Consecutive adds to one stream with the same options go in one call
	// (the script's batch): the same replies, in order, and a later repeat
	// of an earlier add in the run dedupes (R11). The run goes out when
	// another command comes, when it is full, or when input pauses.
	if len(s.run) > 0 && (len(s.run) == stream.MaxRun || s.runBytes > maxRunBytes || !stream.SameRun(s.run[0], c.Add)) {
		if err := s.flushRun(); err != nil {
			return err
		}
	}
	s.run = append(s.run, c.Add)
	for _, a := range c.Args {
		s.runBytes += len(a)
	}
	return nil
}

// maxRunBytes bounds a run's arguments, so that one call of large
// messages stays far below the server's query buffer limits.
const maxRunBytes = 4 << 20

// flushRun sends the adds waiting in the run.
func (s *Session) flushRun() error {
	if len(s.run) == 0 {
		return nil
	}
	run := s.run
	s.run, s.runBytes = nil, 0
	return s.sendRun(&pending{}, run)
}

// sendRun sends one add script call for reqs, whose reply becomes one
// reply per request.
func (s *Session) sendRun(p *pending, reqs []stream.AddRequest) error {
	p.outs = len(reqs)
	call, iids, err := s.streams.AddRunCall(reqs)
	if err != nil {
		r := resp.ErrorOf("ERR " + err.Error())
		p.split = func([]resp.Reply) []resp.Reply {
			out := make([]resp.Reply, len(reqs))
			for i := range out {
				out[i] = r
			}
			return out
		}
		s.send(p)
		return nil
	}
	p.split = func(rs []resp.Reply) []resp.Reply {
		out := make([]resp.Reply, 0, len(iids))
		r := rs[0]
		if r.IsError() {
			for range iids {
				out = append(out, r)
			}
			return out
		}
		ids, noStream, err := stream.ParseAddRunReply(r.Value(), iids)
		for _, id := range ids {
			out = append(out, resp.BulkOf(id))
		}
		// The request that stopped the run and those after it: the stream
		// is missing (nil, as NOMKSTREAM replies), or XADD failed, and the
		// requests after it, of the same stream and options, would too.
		rest := resp.NilReply()
		if !noStream && err != nil {
			rest = resp.ErrorOf(strings.TrimSpace(err.Error()))
		}
		for len(out) < len(iids) {
			out = append(out, rest)
		}
		return out
	}
	s.send(p, script(call))
	return nil
}

// idmpFields are XINFO STREAM's six IDMP fields, in Redis 8.6's order.
var idmpFields = []string{"idmp-duration", "idmp-maxsize", "pids-tracked", "iids-tracked", "iids-added", "iids-duplicates"}

func (s *Session) xinfo(p *pending, c Command) error {
	call, err := s.streams.InfoCall(c.Stream)
	if err != nil {
		return s.local(p, err)
	}
	stream := c.Stream
	p.combine = func(rs []resp.Reply) resp.Reply {
		xi, ir := rs[0], rs[1]
		if xi.IsError() {
			return xi
		}
		if ir.IsError() {
			return ir
		}
		info, _, err := streamInfo(ir, stream)
		if err != nil {
			return resp.ErrorOf("ERR " + err.Error())
		}
		vals := []int64{info.IDMPDuration, info.IDMPMaxSize, info.PIDsTracked, info.IIDsTracked, info.IIDsAdded, info.IIDsDuplicates}
		extra := make([]resp.Reply, 0, 12)
		for i, f := range idmpFields {
			extra = append(extra, resp.BulkOf(f), resp.IntOf(vals[i]))
		}
		return insertFields(xi, extra)
	}
	s.send(p, cmd(c.Args), script(call))
	return nil
}

func streamInfo(r resp.Reply, name string) (stream.Info, bool, error) {
	return stream.ParseInfoCallReply(r.Value(), name)
}

// insertFields puts the IDMP fields where Redis 8.6 has them: after
// recorded-first-entry-id (Redis 7.0+), else before groups (or entries).
func insertFields(xi resp.Reply, extra []resp.Reply) resp.Reply {
	at := -1
	for i := 0; i+1 < len(xi.Elems); i += 2 {
		k := xi.Elems[i].Str
		if k == "recorded-first-entry-id" {
			at = i + 2
			break
		}
		if at < 0 && (k == "groups" || k == "entries") {
			at = i
		}
	}
	if at < 0 {
		at = len(xi.Elems)
	}
	out := xi
	out.Elems = make([]resp.Reply, 0, len(xi.Elems)+len(extra))
	out.Elems = append(out.Elems, xi.Elems[:at]...)
	out.Elems = append(out.Elems, extra...)
	out.Elems = append(out.Elems, xi.Elems[at:]...)
	return out
}

// configGet adds the stream-idmp-* parameters a pattern matches to the
// server's own CONFIG GET reply.
func (s *Session) configGet(p *pending, c Command) {
	var names []string
	for _, n := range []string{ParamDuration, ParamMaxSize} {
		for _, pat := range c.ConfigPatterns {
			if GlobMatch(pat, n, true) {
				names = append(names, n)
				break
			}
		}
	}
	if len(names) == 0 {
		s.send(p, cmd(c.Args))
		return
	}
	p.combine = func(rs []resp.Reply) resp.Reply {
		r := rs[0]
		if r.IsError() || !r.Aggregate() {
			return r
		}
		d := s.defaultsFrom(rs[1])
		out := r
		out.Elems = append([]resp.Reply(nil), r.Elems...)
		for _, n := range names {
			if hasKey(r, n) {
				continue
			}
			v := d.Duration
			if n == ParamMaxSize {
				v = d.MaxSize
			}
			out.Elems = append(out.Elems, resp.BulkOf(n), resp.BulkOf(strconv.FormatInt(v, 10)))
		}
		return out
	}
	s.send(p, cmd(c.Args), cmd([]string{"HMGET", idmp.DefaultsKey, ParamDuration, ParamMaxSize}))
}

func hasKey(r resp.Reply, k string) bool {
	for i := 0; i+1 < len(r.Elems); i += 2 {
		if r.Elems[i].Str == k {
			return true
		}
	}
	return false
}

// defaultsFrom reads HMGET idmp.DefaultsKey's reply: absent or unreadable
// values are Redis's defaults.
func (s *Session) defaultsFrom(r resp.Reply) idmp.Defaults {
	if len(r.Elems) != 2 {
		return idmp.ParseDefaults("", "")
	}
	return idmp.ParseDefaults(r.Elems[0].Str, r.Elems[1].Str)
}

// configSet writes the server-level defaults (validated by the grammar).
func (s *Session) configSet(p *pending, c Command) {
	args := []string{"HSET", idmp.DefaultsKey}
	if c.ConfigSet.Duration > 0 {
		args = append(args, ParamDuration, strconv.FormatInt(c.ConfigSet.Duration, 10))
	}
	if c.ConfigSet.MaxSize > 0 {
		args = append(args, ParamMaxSize, strconv.FormatInt(c.ConfigSet.MaxSize, 10))
	}
	p.combine = func(rs []resp.Reply) resp.Reply {
		if rs[0].IsError() {
			return rs[0]
		}
		return resp.StatusOf("OK")
	}
	s.send(p, cmd(args))
	// The commands after this one see the new defaults on the server, and
	// get them from the session too; in a transaction that may be
	// discarded, they are read again after it.
	d := *s.streams.Defaults
	if c.ConfigSet.Duration > 0 {
		d.Duration = c.ConfigSet.Duration
	}
	if c.ConfigSet.MaxSize > 0 {
		d.MaxSize = c.ConfigSet.MaxSize
	}
	s.streams.SetDefaults(d)
	if p.queued {
		s.defaultsInTx = true
	}
}

// loadDefaults reads the server-level defaults for the scripts, once the
// commands sent before have run (a transaction that set them, or not).
func (s *Session) loadDefaults(ctx context.Context) error {
	if err := s.sync(); err != nil {
		return err
	}
	return s.streams.LoadDefaults(ctx)
}

// sync sends what is written and waits for every reply before it.
func (s *Session) sync() error {
	if err := s.Flush(); err != nil {
		return err
	}
	done := make(chan struct{})
	s.pending <- &pending{barrier: done}
	select {
	case <-done:
	case <-s.readDone:
	}
	return s.err()
}

// resolve settles auto mode: native when the server has IDMP.
func (s *Session) resolve(ctx context.Context) error {
	caps, err := s.conn.Capabilities(ctx)
	if err != nil {
		return err
	}
	if caps.NativeIDMP {
		s.mode = stream.ModeNative
	} else {
		s.mode = stream.ModeEmulated
	}
	return nil
}

// wireCmd is one command on the wire: plain arguments, or a script call.
type wireCmd struct {
	args []string
	call *redisconn.Call
}

func cmd(args []string) wireCmd           { return wireCmd{args: args} }
func script(call *redisconn.Call) wireCmd { return wireCmd{call: call} }

// send writes a command's wire commands (after a SCRIPT LOAD of each
// script this connection has not run yet) and hands p to the reader.
func (s *Session) send(p *pending, cmds ...wireCmd) {
	s.mu.Lock()
	if s.reload {
		s.reload = false
		clear(s.loaded)
	}
	for _, sc := range s.execLoaded {
		s.loaded[sc] = true
	}
	s.execLoaded = nil
	s.mu.Unlock()
	for _, c := range cmds {
		if c.call != nil && !s.loaded[c.call.Script] {
			eval := c.call.Command(true)
			src, _ := eval[1].(string)
			s.buf = resp.AppendCommand(s.buf[:0], "SCRIPT", "LOAD", src)
			s.writeRaw(s.buf)
			if p.queued {
				// Queued in MULTI: loaded only if EXEC runs it (the reader
				// says so), not if the transaction is discarded.
				p.loads = append(p.loads, c.call.Script)
			} else {
				s.loaded[c.call.Script] = true
			}
			p.skip++
		}
	}
	for _, c := range cmds {
		if c.call != nil {
			s.buf = appendAnyCommand(s.buf[:0], c.call.Command(false))
		} else {
			s.buf = resp.AppendCommand(s.buf[:0], c.args...)
		}
		s.writeRaw(s.buf)
	}
	p.n = p.skip + len(cmds)
	s.pending <- p
}

func (s *Session) writeRaw(b []byte) {
	if _, err := s.w.Write(b); err != nil {
		s.fail(err)
	}
}

// Flush sends what is written. The caller flushes whenever it would wait
// for more input, so that a command is never held back.
func (s *Session) Flush() error {
	if err := s.flushRun(); err != nil {
		return err
	}
	if err := s.w.Flush(); err != nil {
		s.fail(err)
	}
	return s.err()
}

func (s *Session) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readErr == nil {
		s.readErr = err
	}
}

func (s *Session) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readErr
}

// Close flushes, waits for every reply, and closes the connection. Its
// error is the session's: a connection that failed before every reply came.
func (s *Session) Close() error {
	if s.closed {
		return s.err()
	}
	s.closed = true
	_ = s.Flush()
	close(s.pending)
	<-s.readDone
	s.nc.Close()
	return s.err()
}

// appendAnyCommand writes a script call's arguments (strings, *string,
// integers) as one command.
func appendAnyCommand(b []byte, args []any) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	var num [24]byte
	for _, a := range args {
		var s string
		switch v := a.(type) {
		case string:
			s = v
		case *string:
			s = *v
		case int:
			s = string(strconv.AppendInt(num[:0], int64(v), 10))
		case int64:
			s = string(strconv.AppendInt(num[:0], v, 10))
		default:
			s = fmt.Sprint(v)
		}
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, '\r', '\n')
		b = append(b, s...)
		b = append(b, '\r', '\n')
	}
	return b
}

// readLoop reads each pending command's replies in order and emits the
// command's reply: combined, QUEUED inside MULTI, regrouped at EXEC.
func (s *Session) readLoop() {
	defer close(s.readDone)
	var queue []*pending // the transaction's commands, in order
	for p := range s.pending {
		if p.barrier != nil {
			close(p.barrier)
			continue
		}
		if s.err() != nil {
			continue // drain: the connection failed
		}
		replies := make([]resp.Reply, p.n)
		for i := range replies {
			if s.opt.Timeout > 0 {
				_ = s.nc.SetReadDeadline(time.Now().Add(s.opt.Timeout))
			}
			r, err := resp.Read(s.rd)
			if err != nil {
				s.fail(err)
				s.nc.Close()
				break
			}
			replies[i] = r
		}
		if s.err() != nil {
			continue
		}
		if p.hidden {
			if r := replies[0]; r.IsError() {
				s.fail(exit.Wrap(errors.New(r.Str), "")) // NOAUTH, WRONGPASS: 77 with its hint
				s.nc.Close()
			}
			continue
		}
		var out resp.Reply
		switch {
		case p.queued:
			out = resp.StatusOf("QUEUED")
			for _, r := range replies {
				if !r.IsQueued() {
					out = r
					break
				}
			}
			switch {
			case p.n > 0 && p.fixed != nil && !out.IsQueued():
				out = *p.fixed // a stand-in's refusal, in the command's words
			case out.IsQueued():
				queue = append(queue, p)
			}
		case p.exec:
			out = regroup(replies[0], queue)
			for _, e := range out.Elems {
				s.noteNoScript(e)
			}
			if out.Aggregate() {
				s.mu.Lock()
				for _, q := range queue {
					s.execLoaded = append(s.execLoaded, q.loads...)
				}
				s.mu.Unlock()
			}
		case p.split != nil && p.fixed == nil:
			outs := p.splitReplies(replies)
			for _, r := range outs[:len(outs)-1] {
				s.opt.Emit(r, true)
			}
			out = outs[len(outs)-1]
		default:
			out = p.reply(replies)
		}
		if p.endTx {
			queue = nil
		}
		s.noteNoScript(out)
		s.opt.Emit(out, s.rd.Buffered() > 0)
	}
}

// reply is a command's reply from its wire replies.
func (p *pending) reply(replies []resp.Reply) resp.Reply {
	if p.fixed != nil {
		return *p.fixed
	}
	if p.split != nil {
		return p.splitReplies(replies)[0]
	}
	for _, r := range replies[:p.skip] {
		if r.IsError() {
			return r // a SCRIPT LOAD refused (NOPERM): the call cannot run
		}
	}
	rest := replies[p.skip:]
	if p.combine == nil {
		return rest[0]
	}
	return p.combine(rest)
}

// splitReplies is a run's replies, one per request.
func (p *pending) splitReplies(replies []resp.Reply) []resp.Reply {
	for _, r := range replies[:p.skip] {
		if r.IsError() {
			out := make([]resp.Reply, p.outs)
			for i := range out {
				out[i] = r
			}
			return out
		}
	}
	return p.split(replies[p.skip:])
}

// regroup turns EXEC's array, one element per wire command, into one
// element per queued command.
func regroup(r resp.Reply, queue []*pending) resp.Reply {
	total := 0
	for _, q := range queue {
		total += q.n
	}
	if !r.Aggregate() || len(r.Elems) != total {
		return r // nil (WATCH), EXECABORT, or not ours to read
	}
	out := r
	out.Elems = make([]resp.Reply, 0, len(queue))
	at := 0
	for _, q := range queue {
		out.Elems = append(out.Elems, q.reply(r.Elems[at:at+q.n]))
		at += q.n
	}
	return out
}

// noteNoScript forgets the loaded scripts when the server says it lost
// them (SCRIPT FLUSH): the next call loads its script again.
func (s *Session) noteNoScript(r resp.Reply) {
	if r.IsError() && strings.HasPrefix(r.Str, "NOSCRIPT") {
		// The map is the writer's: it clears it before its next command.
		s.mu.Lock()
		s.reload = true
		s.mu.Unlock()
	}
}

// One runs a single command and returns its reply (idmpctl exec COMMAND).
// An XADD IDMP costs one round trip, as xadd's does, even before the mode
// and the server-level defaults are known: the add script refuses,
// writing nothing, on a server with native IDMP and when the stream's
// state starts without the defaults, and the add is sent again knowing.
func (s *Session) One(ctx context.Context, args []string) (resp.Reply, error) {
	var got *resp.Reply
	s.opt.Emit = func(r resp.Reply, _ bool) { got = &r }
	if s.mode != stream.ModeNative && len(args) > 0 {
		if c := Parse(args); c.Op == OpXAdd && (c.Deletion != "DELREF" && c.Deletion != "ACKED" || c.Add.MaxLen == 0 && c.Add.MinID == "") {
			return s.oneAdd(ctx, args, c.Add)
		}
	}
	if err := s.Do(ctx, args); err != nil {
		return resp.Reply{}, err
	}
	if err := s.sync(); err != nil {
		return resp.Reply{}, err
	}
	if got == nil {
		return resp.Reply{}, exit.New(exit.Internal, "exec", "no reply")
	}
	return *got, nil
}

func (s *Session) oneAdd(ctx context.Context, args []string, req stream.AddRequest) (resp.Reply, error) {
	for range 3 {
		reqs := []stream.AddRequest{req}
		call, iids, err := s.streams.AddRunCall(reqs)
		if s.mode == stream.ModeAuto {
			call, iids, err = s.streams.AddProbeCall(reqs)
		}
		if err != nil {
			return resp.ErrorOf("ERR " + err.Error()), nil
		}
		var raw *resp.Reply
		var out resp.Reply
		p := &pending{combine: func(rs []resp.Reply) resp.Reply { raw = &rs[0]; return rs[0] }}
		s.opt.Emit = func(r resp.Reply, _ bool) { out = r }
		s.send(p, script(call))
		if err := s.sync(); err != nil {
			return resp.Reply{}, err
		}
		if raw == nil || raw.IsError() {
			return out, nil // the script's error, or a SCRIPT LOAD's
		}
		ids, noStream, err := stream.ParseAddRunReply(raw.Value(), iids)
		switch {
		case stream.NativeServer(err):
			s.mode = stream.ModeNative
			return s.One(ctx, args)
		case stream.NeedsDefaults(err):
			if err := s.streams.LoadDefaults(ctx); err != nil {
				return resp.Reply{}, err
			}
			continue
		case len(ids) == 1:
			if s.mode == stream.ModeAuto {
				s.mode = stream.ModeEmulated
			}
			return resp.BulkOf(ids[0]), nil
		case noStream:
			return resp.NilReply(), nil
		case err != nil:
			return resp.ErrorOf(strings.TrimSpace(err.Error())), nil
		}
	}
	return resp.Reply{}, exit.New(exit.Internal, "exec", "the add script kept refusing")
}
