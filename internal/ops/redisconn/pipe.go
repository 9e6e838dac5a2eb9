package redisconn

// A pipe: commands written by one goroutine while their replies are read by
// another. go-redis's pipelines write every command, then read every reply,
// so a bulk producer that sends pipeline after pipeline leaves the server
// idle while each reply travels back and the next pipeline travels out. On a
// pipe the next commands are on the wire before the last replies are read.

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

	"github.com/idmpctl/idmpctl/internal/resp"
	"github.com/redis/go-redis/v9"
)

// Pipe is a connection of its own to the primary that holds a key. Send
// queues commands for its writer; Recv reads their replies, in order, in the
// caller's goroutine. A failure of the connection (or of the per-command
// timeout, which bounds each write and each reply) ends the pipe: every
// later call fails, and the caller opens another.
type Pipe struct {
	nc      net.Conn
	rd      *bufio.Reader
	timeout time.Duration
	out     chan [][]any
	failed  chan struct{} // closed when the writer failed, with werr
	werr    error
	closed  chan struct{} // closed by Close
	written chan struct{} // closed when the writer returns; nil before it starts
	once    sync.Once
	stop    func() bool // detaches the context that closes the pipe
}

// ReplyError is an error reply of the server (ERR, NOSCRIPT, MOVED...): the
// command failed, the pipe goes on.
type ReplyError = resp.ReplyError

// OpenPipe dials the primary that holds key as the connection's client
// would (its dialer, TLS, credentials, database), names the connection
// (CLIENT SETNAME name, unless ""; a user who may not is not refused) and
// loads scripts into its cache, so that EVALSHA finds them. The pipe is
// closed when ctx ends.
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
	p := &Pipe{nc: nc, rd: bufio.NewReaderSize(nc, 64<<10), timeout: c.Timeout,
		out: make(chan [][]any, 4), failed: make(chan struct{}), closed: make(chan struct{})}
	var hello [][]any
	db := c.db
	if c.Cluster() {
		db = 0 // a cluster node has database 0 only
	}
	for _, cmd := range openingCommands(opt, db) {
		args := make([]any, len(cmd))
		for i, a := range cmd {
			args[i] = a
		}
		hello = append(hello, args)
	}
	authed := -1 // AUTH PASSWORD: a server that asks for none refuses it, and the pipe goes on
	if len(hello) > 0 && len(hello[0]) == 2 {
		authed = 0
	}
	named := -1 // the reply that may be refused
	if name != "" {
		named = len(hello)
		hello = append(hello, []any{"client", "setname", name})
	}
	for _, s := range scripts {
		hello = append(hello, []any{"script", "load", s.src()})
	}
	w := bufio.NewWriterSize(nc, 64<<10)
	_ = nc.SetWriteDeadline(time.Now().Add(p.timeout))
	for _, cmd := range hello {
		_ = writeCommand(w, nil, cmd)
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
	p.written = make(chan struct{})
	go p.write(w)
	p.stop = context.AfterFunc(ctx, p.Close)
	return p, nil
}

// Send queues commands (each its arguments: strings, *string, []byte,
// integers), written in order after those queued before. It blocks while
// the writer is four sends behind.
func (p *Pipe) Send(cmds [][]any) error {
	select {
	case <-p.failed:
		return p.werr
	case <-p.closed:
		return net.ErrClosed
	default:
	}
	select {
	case p.out <- cmds:
		return nil
	case <-p.failed:
		return p.werr
	case <-p.closed:
		return net.ErrClosed
	}
}

// Recv reads the next reply: a string, an int64, nil, or a []any of them
// (an error reply inside an array is its ReplyError). An error reply of its
// own is returned as a ReplyError; any other error ends the pipe.
func (p *Pipe) Recv() (any, error) {
	_ = p.nc.SetReadDeadline(time.Now().Add(p.timeout))
	v, err := readReply(p.rd)
	var re ReplyError
	if err != nil && !errors.As(err, &re) {
		p.Close()
		select {
		case <-p.failed:
			if p.werr != nil { // the cause, rather than the closed connection it left
				return nil, p.werr
			}
		default:
		}
	}
	return v, err
}

// Close ends the pipe: the connection closes, and replies not read are
// lost. It returns once the writer is done with what was sent: the caller
// may then change those commands' arguments (to send them again).
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
		case cmds := <-p.out:
			_ = p.nc.SetWriteDeadline(time.Now().Add(p.timeout))
			for _, cmd := range cmds {
				buf = writeCommand(w, buf, cmd)
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

// writeCommand writes one command as a RESP array of bulk strings (see
// resp.AppendArgs), encoded into buf, which it returns for the next; the
// bufio.Writer keeps the first error, which Flush reports.
func writeCommand(w *bufio.Writer, buf []byte, args []any) []byte {
	buf = resp.AppendArgs(buf[:0], args)
	_, _ = w.Write(buf)
	return buf
}

// readReply reads one reply as go-redis gives replies (resp.Reply.Value):
// an error reply of its own is returned as the error.
func readReply(rd *bufio.Reader) (any, error) {
	r, err := resp.Read(rd)
	if err != nil {
		return nil, err
	}
	v := r.Value()
	if re, ok := v.(ReplyError); ok {
		return nil, re
	}
	return v, nil
}

// SetTimeout bounds each later write and reply by d instead of the
// connection's per-command timeout (a reply that follows a WAIT needs the
// wait's time too).
func (p *Pipe) SetTimeout(d time.Duration) { p.timeout = d }

// Redirected handles a MOVED or ASK reply that a pipe met: a plain client
// becomes a cluster client, a cluster client reads the slots again, so the
// next pipe opened goes to the key's primary.
func (c *Conn) Redirected(ctx context.Context) {
	if !c.Cluster() {
		c.useCluster()
		return
	}
	if cc, ok := c.Client().(*redis.ClusterClient); ok {
		cc.ReloadState(ctx)
	}
}

// ClientListed reports whether the primary that holds key lists a client
// connection named name (CLIENT LIST TYPE normal), and the ID of the first
// such. A connection the server no longer lists can run nothing more of
// what it sent.
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
