package exec

import (
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/resp"
)

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
	for _, l := range s.execLoaded {
		if l.gen == s.scriptGen {
			s.loaded[l.script] = true
		}
	}
	s.execLoaded = nil
	s.mu.Unlock()
	p.gen = s.scriptGen
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
			s.buf = resp.AppendArgs(s.buf[:0], c.call.Command(false))
		} else {
			s.buf = resp.AppendCommand(s.buf[:0], c.args...)
		}
		s.writeRaw(s.buf)
	}
	p.n = p.skip + len(cmds)
	if len(cmds) > 0 {
		p.n += p.extra
	}
	s.enqueue(p)
}

// enqueue hands p to the reader. When the commands in flight are at their
// bound, what is written goes out first: the reader waits for their
// replies, which never come for commands still in the write buffer.
func (s *Session) enqueue(p *pending) {
	select {
	case s.pending <- p:
		return
	default:
	}
	if err := s.w.Flush(); err != nil {
		s.fail(connErr(err))
	}
	s.pending <- p
}

// loadedScript is a script a command's SCRIPT LOAD loaded, in the writer's
// script generation gen.
type loadedScript struct {
	script *redisconn.Script
	gen    int
}

// forgetScripts is the writer's SCRIPT FLUSH: every script is loaded again.
func (s *Session) forgetScripts() {
	s.scriptGen++
	clear(s.loaded)
}

func (s *Session) writeRaw(b []byte) {
	if _, err := s.w.Write(b); err != nil {
		s.fail(connErr(err))
	}
}

// Flush sends what is written. The caller flushes whenever it would wait
// for more input, so that a command is never held back.
func (s *Session) Flush() error {
	if err := s.flushRun(); err != nil {
		return err
	}
	if err := s.w.Flush(); err != nil {
		s.fail(connErr(err))
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
