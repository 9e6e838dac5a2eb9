package redisconn

// A pipe: a raw RESP connection written by one goroutine while another
// reads. go-redis's pipelines write all, then read all, so the server idles
// between them; on a pipe the next commands are on the wire meanwhile
// (xadd --batch: OpenPipe; exec: DialPipe, keeping the reply types).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/resp"
	"github.com/redis/go-redis/v9"
)

// Pipe is a connection of its own to one server: one goroutine writes
// (Send, or Write... then Flush), one reads (Recv). A failure or timeout
// ends it: every later call fails. It knows which scripts it loaded.
type Pipe struct {
	nc       net.Conn
	rd       *bufio.Reader
	rtimeout time.Duration // each reply (0: none)
	wtimeout time.Duration // each write (0: none)
	out      chan pipeSend
	free     chan []byte   // Write's buffers, back from the writer
	wbuf     []byte        // Write's commands, not yet handed to the writer
	failed   chan struct{} // closed when the writer failed, with werr
	werr     error
	closed   chan struct{} // closed by Close
	written  chan struct{} // closed when the writer returns; nil before it starts
	once     sync.Once
	stop     func() bool // detaches the context that closes the pipe
	scripts  pipeScripts
}

// pipeSend is one hand-over to the writer: commands to encode, or commands
// encoded already (Write).
type pipeSend struct {
	cmds [][]any
	raw  []byte
}

// flushAt is the size of Write's buffer that goes to the writer without
// waiting for Flush.
const flushAt = 64 << 10

// ReplyError is an error reply of the server (ERR, NOSCRIPT, MOVED...): the
// command failed, the pipe goes on.
type ReplyError = resp.ReplyError

func newPipe(nc net.Conn, timeout time.Duration) *Pipe {
	return &Pipe{nc: nc, rd: bufio.NewReaderSize(nc, 64<<10), rtimeout: timeout, wtimeout: timeout,
		out: make(chan pipeSend, 4), free: make(chan []byte, 6), failed: make(chan struct{}), closed: make(chan struct{}),
		scripts: pipeScripts{loaded: map[*Script]bool{}}}
}

// start starts the writer, and ties the pipe to ctx (closed when it ends).
func (p *Pipe) start(ctx context.Context, w *bufio.Writer) {
	p.written = make(chan struct{})
	go p.write(w)
	p.stop = context.AfterFunc(ctx, p.Close)
}

// OpenPipe dials key's primary as the client would, names the connection
// (unless ""; a refusal is no error) and loads scripts for EVALSHA. The
// connection's timeout bounds each write and reply; ctx's end closes it.
func (c *Conn) OpenPipe(ctx context.Context, key, name string, scripts ...*Script) (*Pipe, error) {
	var node *redis.Client
	err := c.Do(func(uc redis.UniversalClient) error {
		var err error
		node, err = nodeFor(ctx, uc, key)
		return err
	})
	if err != nil {
		return nil, err
	}
	opt := node.Options()
	dctx, cancel := context.WithTimeout(ctx, opt.DialTimeout)
	nc, err := opt.Dialer(dctx, opt.Network, opt.Addr)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", c.Display, err)
	}
	p := newPipe(nc, c.Timeout)
	db := c.db
	if c.Cluster() {
		db = 0 // a cluster node has database 0 only
	}
	hello := openingCommands(opt, db)
	authed := -1 // AUTH PASSWORD: a server that asks for none refuses it, and the pipe goes on
	if len(hello) > 0 && len(hello[0]) == 2 {
		authed = 0
	}
	named := -1 // the reply that may be refused
	if name != "" {
		named = len(hello)
		hello = append(hello, []string{"client", "setname", name})
	}
	for _, s := range scripts {
		hello = append(hello, []string{"script", "load", s.src()})
		p.scripts.loaded[s] = true
	}
	w := bufio.NewWriterSize(nc, 64<<10)
	_ = nc.SetWriteDeadline(time.Now().Add(p.wtimeout))
	for _, cmd := range hello {
		_, _ = w.Write(resp.AppendCommand(nil, cmd...))
	}
	if err := w.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	for i := range hello {
		var re ReplyError
		_, err := p.Recv()
		switch {
		case err == nil, i == named && errors.As(err, &re):
		case i == authed && errors.As(err, &re) && PasswordNotNeeded(err):
			c.NotePasswordNotNeeded(err)
		default:
			nc.Close()
			return nil, err
		}
	}
	p.start(ctx, w)
	return p, nil
}

// DialPipe connects to the URL's node (as redis-cli without -c) for exec,
// sending nothing: it returns the AUTH and SELECT to send first. timeout
// (0: none) bounds each reply, not writes; ctx's end closes it.
func (c *Conn) DialPipe(ctx context.Context, timeout time.Duration) (*Pipe, [][]string, error) {
	opt := c.opt
	dctx, cancel := context.WithTimeout(ctx, opt.DialTimeout)
	defer cancel()
	nc, err := opt.Dialer(dctx, opt.Network, opt.Addr)
	if err != nil {
		return nil, nil, err // the dialer's error names the URL
	}
	p := newPipe(nc, timeout)
	p.wtimeout = 0
	p.start(ctx, bufio.NewWriterSize(nc, 64<<10))
	return p, openingCommands(opt, c.db), nil
}

// openingCommands open a pipe: AUTH as the URL's user (an empty password
// too: never the default user), SELECT db.
func openingCommands(opt *redis.Options, db int) [][]string {
	var cmds [][]string
	switch {
	case opt.Username != "":
		cmds = append(cmds, []string{"AUTH", opt.Username, opt.Password})
	case opt.Password != "":
		cmds = append(cmds, []string{"AUTH", opt.Password})
	}
	if db != 0 {
		cmds = append(cmds, []string{"SELECT", strconv.Itoa(db)})
	}
	return cmds
}

// Send queues commands (strings, *string, []byte, integers) in order; it
// blocks while the writer is four sends behind.
func (p *Pipe) Send(cmds [][]any) error {
	if err := p.Flush(); err != nil {
		return err
	}
	return p.hand(pipeSend{cmds: cmds})
}

// hand gives the writer what goes next.
func (p *Pipe) hand(ps pipeSend) error {
	select {
	case <-p.failed:
		return p.werr
	case <-p.closed:
		return net.ErrClosed
	default:
	}
	select {
	case p.out <- ps:
		return nil
	case <-p.failed:
		return p.werr
	case <-p.closed:
		return net.ErrClosed
	}
}

// WriteCommand encodes a command of plain arguments after those written
// before; it goes once Flush is called, or sooner when they are many.
func (p *Pipe) WriteCommand(args ...string) error {
	p.wbuf = resp.AppendCommand(p.buffer(), args...)
	return p.flushFull()
}

// WriteArgs is WriteCommand for arguments as Send takes them.
func (p *Pipe) WriteArgs(args []any) error {
	p.wbuf = resp.AppendArgs(p.buffer(), args)
	return p.flushFull()
}

// buffer is Write's buffer, one the writer gave back when it has none.
func (p *Pipe) buffer() []byte {
	if p.wbuf == nil {
		select {
		case b := <-p.free:
			p.wbuf = b[:0]
		default:
			p.wbuf = make([]byte, 0, flushAt+4<<10)
		}
	}
	return p.wbuf
}

func (p *Pipe) flushFull() error {
	if len(p.wbuf) < flushAt {
		return nil
	}
	return p.Flush()
}

// Flush hands what Write encoded to the writer.
func (p *Pipe) Flush() error {
	if len(p.wbuf) == 0 {
		return nil
	}
	b := p.wbuf
	p.wbuf = nil
	return p.hand(pipeSend{raw: b})
}

// Recv reads the next reply (string, int64, nil or []any; ReplyError inside
// arrays); its own error reply is a ReplyError, other errors end the pipe.
func (p *Pipe) Recv() (any, error) {
	r, err := p.RecvReply()
	if err != nil {
		return nil, err
	}
	v := r.Value()
	if re, ok := v.(ReplyError); ok {
		if strings.HasPrefix(string(re), "NOSCRIPT") {
			return nil, ErrScriptLost
		}
		return nil, re
	}
	return v, nil
}

// ErrScriptLost is Recv's NOSCRIPT: nothing of the call ran, and a new
// pipe loads the script again (retryable).
var ErrScriptLost = exit.New(exit.Unavailable, "", "the server lost idmpctl's script (SCRIPT FLUSH, a restart)")

// RecvReply reads the next reply as RESP has it (an error reply is a
// reply, not an error). Any error ends the pipe.
func (p *Pipe) RecvReply() (resp.Reply, error) {
	if p.rtimeout > 0 {
		_ = p.nc.SetReadDeadline(time.Now().Add(p.rtimeout))
	}
	r, err := resp.Read(p.rd)
	if err == nil {
		ownReply(&r)
	}
	if err != nil {
		p.Close()
		select {
		case <-p.failed:
			if p.werr != nil { // the cause, rather than the closed connection it left
				return r, p.werr
			}
		default:
		}
	}
	return r, err
}

// ownReply drops the script's place from r's errors of idmpctl's scripts
// (ownError), an EXEC's among them.
func ownReply(r *resp.Reply) {
	if r.Kind == resp.Error {
		r.Str, _ = ownError(r.Str)
	}
	for i := range r.Elems {
		ownReply(&r.Elems[i])
	}
}

// Buffered reports whether a further reply is read already, at least in
// part (the caller may hold its output until one is not).
func (p *Pipe) Buffered() bool { return p.rd.Buffered() > 0 }

// Close ends the pipe, losing unread replies; it returns once the writer is
// done, so the caller may change the commands' arguments to resend them.
func (p *Pipe) Close() {
	p.once.Do(func() {
		if p.stop != nil {
			p.stop()
		}
		close(p.closed)
		p.nc.Close()
	})
	if p.written != nil {
		<-p.written
	}
}

// write writes what Send queues until Close or a failure.
func (p *Pipe) write(w *bufio.Writer) {
	defer close(p.written)
	var buf []byte // one command's encoding, reused
	for {
		select {
		case <-p.closed:
			return
		case ps := <-p.out:
			if p.wtimeout > 0 {
				_ = p.nc.SetWriteDeadline(time.Now().Add(p.wtimeout))
			}
			for _, cmd := range ps.cmds {
				buf = writeCommand(w, buf, cmd)
			}
			if ps.raw != nil {
				_, _ = w.Write(ps.raw)
				select {
				case p.free <- ps.raw:
				default:
				}
			}
			if err := w.Flush(); err != nil {
				p.werr = err
				close(p.failed)
				p.nc.Close()
				return
			}
		}
	}
}

// writeCommand encodes args into buf (returned for reuse) and writes it;
// the bufio.Writer keeps the first error for Flush.
func writeCommand(w *bufio.Writer, buf []byte, args []any) []byte {
	buf = resp.AppendArgs(buf[:0], args)
	_, _ = w.Write(buf)
	return buf
}

// SetTimeout bounds each later write and reply by d (a WAIT's reply needs more).
func (p *Pipe) SetTimeout(d time.Duration) { p.rtimeout, p.wtimeout = d, d }

// Redirected handles a pipe's MOVED or ASK: the next pipe goes to the key's
// primary (a cluster client, with the slots read again).
func (c *Conn) Redirected(ctx context.Context) {
	if !c.Cluster() {
		c.useCluster()
		return
	}
	if cc, ok := c.Client().(*redis.ClusterClient); ok {
		cc.ReloadState(ctx)
	}
}

// ClientListed reports whether key's primary lists a connection named name,
// and its ID: one not listed can run nothing more of what it sent.
func (c *Conn) ClientListed(ctx context.Context, key, name string) (id int64, listed bool, err error) {
	var list string
	err = c.Do(func(uc redis.UniversalClient) error {
		node, err := nodeFor(ctx, uc, key)
		if err != nil {
			return err
		}
		cctx, cancel := c.Ctx(ctx)
		defer cancel()
		list, err = node.Do(cctx, "CLIENT", "LIST", "TYPE", "normal").Text()
		return err
	})
	if err != nil {
		return 0, false, err
	}
	for line := range strings.SplitSeq(list, "\n") {
		fields := strings.Fields(line)
		if !slices.Contains(fields, "name="+name) {
			continue
		}
		for _, f := range fields {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				id, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		return id, true, nil
	}
	return 0, false, nil
}

// pipeScripts are the scripts the server holds for a pipe, as its writer
// knows: loaded, less those flushed or lost; a load in a MULTI counts once
// the reader says it ran. The writer owns loaded and gen; the reader's
// news wait under mu for its next ScriptGen.
type pipeScripts struct {
	loaded map[*Script]bool
	gen    int // the SCRIPT FLUSHes written

	mu   sync.Mutex
	lost bool        // the reader saw NOSCRIPT: every script loads again
	ran  []genScript // loads the reader says the server ran
}

// genScript is a script loaded in the writer's script generation gen.
type genScript struct {
	s   *Script
	gen int
}

// ScriptGen takes in the reader's news and returns the generation (moved
// by each SCRIPT FLUSH written), for ScriptsRan of a command's deferred loads.
func (p *Pipe) ScriptGen() int {
	ps := &p.scripts
	ps.mu.Lock()
	if ps.lost {
		ps.lost = false
		clear(ps.loaded)
	}
	for _, l := range ps.ran {
		if l.gen == ps.gen {
			ps.loaded[l.s] = true
		}
	}
	ps.ran = nil
	ps.mu.Unlock()
	return ps.gen
}

// WriteLoad writes SCRIPT LOAD of s unless loaded, and says whether it did.
// deferred (in a MULTI): it counts once ScriptsRan says so, not if discarded.
func (p *Pipe) WriteLoad(s *Script, deferred bool) (bool, error) {
	if p.scripts.loaded[s] {
		return false, nil
	}
	if !deferred {
		p.scripts.loaded[s] = true
	}
	return true, p.WriteCommand("SCRIPT", "LOAD", s.src())
}

// WriteLoadAgain writes SCRIPT LOAD of s regardless: in a MULTI before a
// call, the server has s at EXEC whatever another client's FLUSH did.
func (p *Pipe) WriteLoadAgain(s *Script) error {
	return p.WriteCommand("SCRIPT", "LOAD", s.src())
}

// ScriptsFlushed notes a SCRIPT FLUSH written: everything loads again, and
// older generations' loads no longer count.
func (p *Pipe) ScriptsFlushed() {
	p.scripts.gen++
	clear(p.scripts.loaded)
}

// ScriptsRan is the reader's news that the server ran deferred loads,
// written in generation gen.
func (p *Pipe) ScriptsRan(gen int, ss ...*Script) {
	p.scripts.mu.Lock()
	for _, s := range ss {
		p.scripts.ran = append(p.scripts.ran, genScript{s, gen})
	}
	p.scripts.mu.Unlock()
}

// ScriptsLost is the reader's news of a NOSCRIPT: the writer loads each
// script again before its next call.
func (p *Pipe) ScriptsLost() {
	p.scripts.mu.Lock()
	p.scripts.lost = true
	p.scripts.mu.Unlock()
}
