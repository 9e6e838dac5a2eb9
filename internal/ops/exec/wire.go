package exec

import (
	"errors"
	"net"

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
// script this connection has not loaded yet) and hands p to the reader.
func (s *Session) send(p *pending, cmds ...wireCmd) {
	p.gen = s.pipe.ScriptGen()
	var eval []bool // the calls that carry their script (EVAL)
	for i, c := range cmds {
		if c.call == nil {
			continue
		}
		p.script = true
		if p.queued && !s.mayLoad() {
			// SCRIPT LOAD refused: a load queued would abort the transaction,
			// and an EVALSHA would find no script after another client's
			// SCRIPT FLUSH (half a transaction). The call carries its script.
			if eval == nil {
				eval = make([]bool, len(cmds))
			}
			eval[i] = true
			continue
		}
		// Queued in MULTI: loaded only if EXEC runs it (the reader says
		// so), not if the transaction is discarded.
		load, err := s.pipe.WriteLoad(c.call.Script, p.queued)
		s.writeErr(err)
		if !load && p.queued && !s.txLoads[c.call.Script] {
			// Another client's SCRIPT FLUSH before EXEC would leave the call
			// NOSCRIPT beside commands that run: a load queued in the
			// transaction runs at EXEC, atomically with the call.
			s.writeErr(s.pipe.WriteLoadAgain(c.call.Script))
			load = true
		}
		if load {
			if p.queued {
				p.loads = append(p.loads, c.call.Script)
				if s.txLoads == nil {
					s.txLoads = map[*redisconn.Script]bool{}
				}
				s.txLoads[c.call.Script] = true
			}
			p.skip++
		}
	}
	for i, c := range cmds {
		if c.call != nil {
			s.writeErr(s.pipe.WriteArgs(c.call.Command(eval != nil && eval[i])))
		} else {
			s.writeErr(s.pipe.WriteCommand(c.args...))
		}
	}
	p.n = p.skip + len(cmds)
	if len(cmds) > 0 {
		p.n += p.extra
	}
	select {
	case s.pending <- p:
	default:
		// The commands in flight are at their bound: what is written goes
		// out first, or the reader would wait for replies that never come.
		s.writeErr(s.pipe.Flush())
		s.pending <- p
	}
}

// probeLoad learns, before a transaction opens, whether the session's
// SCRIPT LOADs are refused (mayLoad), when no load has said so yet: inside
// it, a refused load would abort it. Redis refuses a load before it caches.
func (s *Session) probeLoad() {
	if s.loadAnswered.Load() || s.loadProbed {
		return
	}
	s.loadProbed = true
	s.send(&pending{internal: func(rs []resp.Reply) {
		if rs[0].IsError() {
			s.loadDenied.Store(true)
		}
		s.loadAnswered.Store(true)
	}}, cmd([]string{"SCRIPT", "LOAD", "return 1"}))
}

// mayLoad reports whether the session's SCRIPT LOADs are not refused (an
// ACL without SCRIPT); until one's reply is read, it waits for it.
func (s *Session) mayLoad() bool {
	if !s.loadAnswered.Load() {
		if s.sync() != nil {
			return false
		}
	}
	return !s.loadDenied.Load()
}

// writeErr notes a failure to write; a pipe the reader closed
// (net.ErrClosed) is the reader's to explain.
func (s *Session) writeErr(err error) {
	if err != nil && !errors.Is(err, net.ErrClosed) {
		s.fail(connErr(err))
	}
}

// Flush sends what is written. The caller flushes whenever it would wait
// for more input, so that a command is never held back.
func (s *Session) Flush() error {
	if err := s.flushRun(); err != nil {
		return err
	}
	s.writeErr(s.pipe.Flush())
	return s.err()
}

// fail keeps the session's first error.
func (s *Session) fail(err error) {
	if err != nil {
		s.failure.CompareAndSwap(nil, &err)
	}
}

func (s *Session) err() error {
	if err := s.failure.Load(); err != nil {
		return *err
	}
	return nil
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
	s.pipe.Close()
	return s.err()
}
