package exec

import (
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// readLoop reads each pending command's replies in order and emits the
// command's reply: combined, QUEUED inside MULTI, regrouped at EXEC.
func (s *Session) readLoop() {
	defer close(s.readDone)
	var queue []*pending // the transaction's commands, in order
	txOpen := false      // the server took the MULTI: the commands sent as queued are
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
			r, err := s.readReply(p)
			if err != nil {
				s.fail(err)
				s.pipe.Close()
				break
			}
			replies[i] = r
			if p.extra > 0 && r.IsError() {
				// Refused as a whole (Valkey 8 outside subscribed mode:
				// NOSUB): one reply, not one a channel.
				replies = replies[:i+1]
				break
			}
		}
		if s.err() != nil {
			continue
		}
		for _, r := range replies[:min(p.skip, len(replies))] {
			// The session's SCRIPT LOADs: queued, run, or refused.
			if r.IsError() {
				s.loadDenied.Store(true)
			}
			s.loadAnswered.Store(true)
		}
		if p.multi && !replies[0].IsError() {
			txOpen = true
		}
		queued := p.queued
		if queued && !txOpen {
			// Its MULTI was refused: it ran as it came, SCRIPT LOADs too.
			queued = false
			s.pipe.ScriptsRan(p.gen, p.loads...)
		}
		if p.internal != nil {
			p.internal(replies) // the session's own round trip (catchup.go)
			continue
		}
		if p.hidden {
			switch r := replies[0]; {
			case r.IsError() && redisconn.PasswordNotNeeded(errors.New(r.Str)):
				// AUTH on a server that asks for none: a warning, as redis-cli's.
				s.conn.NotePasswordNotNeeded(errors.New(r.Str))
			case r.IsError():
				s.fail(exit.Wrap(errors.New(r.Str), "")) // NOAUTH, WRONGPASS: 77 with its hint
				s.pipe.Close()
			}
			continue
		}
		var out resp.Reply
		switch {
		case queued:
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
				for _, q := range queue {
					s.pipe.ScriptsRan(q.gen, q.loads...)
				}
			}
		case p.split != nil && p.fixed == nil:
			outs := p.splitReplies(replies)
			for _, r := range outs[:len(outs)-1] {
				s.noteNoScript(r)
				s.opt.Emit(flushedInFlight(p, r), true)
			}
			out = outs[len(outs)-1]
		default:
			out = p.reply(replies)
		}
		if !queued && !p.exec {
			s.noteNoScript(out) // before it is worded
			out = flushedInFlight(p, out)
		}
		if p.endTx {
			queue, txOpen = nil, false
		}
		s.noteNoScript(out)
		s.opt.Emit(out, s.pipe.Buffered())
	}
}

// readReply reads p's next wire reply, skipping a RESP3 push that is not
// p's own (an invalidation), as redis-cli does when not on a terminal.
func (s *Session) readReply(p *pending) (resp.Reply, error) {
	for {
		r, err := s.pipe.RecvReply() // bounded by Options.Timeout
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = exit.New(exit.Unavailable, "", "no reply within %s (--timeout): raise --timeout for blocking commands (BLPOP, XREAD BLOCK)", s.opt.Timeout)
			}
			return r, connErr(err)
		}
		if r.Kind == resp.Push && !(p.pushName != "" && len(r.Elems) > 0 && strings.EqualFold(r.Elems[0].Str, p.pushName)) {
			continue
		}
		return r, nil
	}
}

// connErr says in words that the server closed the connection (rather
// than Go's "EOF" or "write unix ...: broken pipe").
func connErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return exit.New(exit.Unavailable, "", "the server closed the connection before every reply came")
	}
	return err
}

// reply is a command's reply from its wire replies.
func (p *pending) reply(replies []resp.Reply) resp.Reply {
	if p.fixed != nil {
		return *p.fixed
	}
	if p.split != nil {
		return p.splitReplies(replies)[0]
	}
	if r, refused := loadRefused(replies, p.skip); refused {
		return r
	}
	rest := replies[p.skip:]
	if p.combine == nil {
		return rest[0]
	}
	return p.combine(rest)
}

// loadRefused reports a SCRIPT LOAD among the first skip replies that was
// refused (NOPERM) while a call after it found no script (NOSCRIPT): the
// refusal says why it did not run. A call that found the script ran.
func loadRefused(replies []resp.Reply, skip int) (resp.Reply, bool) {
	for _, r := range replies[:skip] {
		if !r.IsError() {
			continue
		}
		for _, c := range replies[skip:] {
			if c.IsError() && strings.HasPrefix(c.Str, "NOSCRIPT") {
				return r, true
			}
		}
	}
	return resp.Reply{}, false
}

// splitReplies is a run's replies, one per request.
func (p *pending) splitReplies(replies []resp.Reply) []resp.Reply {
	if r, refused := loadRefused(replies, p.skip); refused {
		return slices.Repeat([]resp.Reply{r}, p.outs)
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

// flushedInFlight words the NOSCRIPT of the session's own script call,
// which another client's SCRIPT FLUSH caused in flight: it did not run (a
// retry would reorder it), and "Please use EVAL" would read as the user's
// mistake. A user's own EVALSHA keeps Redis's reply.
func flushedInFlight(p *pending, r resp.Reply) resp.Reply {
	if !p.script || !r.IsError() || !strings.HasPrefix(r.Str, "NOSCRIPT") {
		return r
	}
	return resp.ErrorOf("ERR idmpctl: the server's script cache was emptied (SCRIPT FLUSH by another client) while this command was in flight: it did not run, and is safe to send again")
}

// noteNoScript forgets the loaded scripts when the server says it lost
// them (SCRIPT FLUSH): the next call loads its script again.
func (s *Session) noteNoScript(r resp.Reply) {
	if r.IsError() && strings.HasPrefix(r.Str, "NOSCRIPT") {
		s.pipe.ScriptsLost()
	}
}
