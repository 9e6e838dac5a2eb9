package redisconn

import "sync"

// pipeScripts are the scripts the server holds for a pipe, as far as its
// writer knows: those it loaded (at OpenPipe, or with WriteLoad), less
// those that a SCRIPT FLUSH it wrote (ScriptsFlushed) or a NOSCRIPT reply
// (ScriptsLost) says are gone. A load queued in a transaction counts once
// the reader says that the server ran it (ScriptsRan). The writer's
// goroutine keeps loaded and gen; the reader's news wait under mu for the
// writer's next ScriptGen.
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

// ScriptGen takes in what the reader told (ScriptsRan, ScriptsLost) and
// returns the pipe's script generation, which each SCRIPT FLUSH written
// moves on: the writer calls it before the WriteLoads of a command, and
// gives the generation to ScriptsRan with that command's deferred loads.
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

// WriteLoad writes SCRIPT LOAD of s (see WriteCommand) when the pipe has
// not loaded it, and says whether it did: its reply then comes before the
// next command's. deferred says the load is queued in a transaction
// (MULTI): it counts once the reader says the server ran it (ScriptsRan),
// not when the transaction is discarded.
func (p *Pipe) WriteLoad(s *Script, deferred bool) (bool, error) {
	if p.scripts.loaded[s] {
		return false, nil
	}
	if !deferred {
		p.scripts.loaded[s] = true
	}
	return true, p.WriteCommand("SCRIPT", "LOAD", s.src())
}

// WriteLoadAgain writes SCRIPT LOAD of s whether or not the pipe loaded
// it (see WriteCommand): queued in a transaction before a call of s, it
// makes sure that the server has s when EXEC runs the call, whatever
// another client's SCRIPT FLUSH removed since the pipe loaded it.
func (p *Pipe) WriteLoadAgain(s *Script) error {
	return p.WriteCommand("SCRIPT", "LOAD", s.src())
}

// ScriptsFlushed is the writer's note of a SCRIPT FLUSH it wrote: every
// script loads again, and loads of an earlier generation that the reader
// reports later do not count.
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

// ScriptsLost is the reader's news of a NOSCRIPT reply: the server lost
// its scripts (SCRIPT FLUSH by another client, a restart), and the writer
// loads each again before its next call.
func (p *Pipe) ScriptsLost() {
	p.scripts.mu.Lock()
	p.scripts.lost = true
	p.scripts.mu.Unlock()
}
