package exec

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// The ops of emulated mode that follow Redis 8.6.3 beyond XADD, XCFGSET
// and XINFO STREAM (issue 22).
const (
	OpXInfoGroups Op = iota + 64 // XINFO GROUPS key: without the liveness tokens of emulated state
	OpXIdmpRecord                // XIDMPRECORD key pid iid id
	OpDump                       // DUMP key: the payload, and the state of the stream it is
	OpRestore                    // RESTORE key ttl payload ...: with the state its DUMP took
	OpDel                        // DEL or UNLINK key...: with the keys' emulated state
)

// parseCatchup reads the commands of these ops.
func parseCatchup(c *Command) {
	switch c.Name {
	case "XIDMPRECORD":
		parseXIdmpRecord(c)
	case "DUMP", "RESTORE":
		parseDumpRestore(c)
	case "DEL", "UNLINK":
		if len(c.Args) >= 2 {
			c.Op = OpDel
		}
	}
}

// catchupState is the session's own of these ops.
type catchupState struct {
	// db is the database the connection is in, as its SELECTs say
	// (noteDB); txDB what it was at MULTI.
	db, txDB int
	dumps    dumpCache
}

// catchup dispatches these ops.
func (s *Session) catchup(p *pending, c Command) error {
	switch c.Op {
	case OpXIdmpRecord:
		return s.record(p, c)
	case OpXInfoGroups:
		p.combine = func(rs []resp.Reply) resp.Reply { return withoutTokens(rs[0]) }
		s.send(p, cmd(c.Args))
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
		p.combine = func(rs []resp.Reply) resp.Reply { return rs[0] }
		s.send(p, script(call))
	default:
		s.send(p, cmd(c.Args))
	}
	return nil
}

// RecordRequest is an XIDMPRECORD: ID as Redis writes it (ms-seq).
type RecordRequest struct{ Stream, PID, IID, ID string }

// parseXIdmpRecord follows xidmprecordCommand: exactly four arguments
// (the command table's arity), the ID first, then the pid, then the iid;
// the key is looked up only then (the script: no such key, WRONGTYPE, No
// such message in stream, the conflict).
func parseXIdmpRecord(c *Command) {
	a := c.Args
	if len(a) != 5 {
		c.fail(arity("xidmprecord"))
		return
	}
	id, err := stream.ValidateRecord(a[2], a[3], a[4])
	if err != nil {
		c.fail(strings.TrimSpace(err.Error()))
		return
	}
	c.Op, c.Record = OpXIdmpRecord, RecordRequest{Stream: a[1], PID: a[2], IID: a[3], ID: id}
}

// record sends an emulated XIDMPRECORD.
func (s *Session) record(p *pending, c Command) error {
	r := c.Record
	call, err := s.streams.RecordCall(r.Stream, r.PID, r.IID, r.ID)
	if err != nil {
		return s.local(p, err)
	}
	p.combine = func(rs []resp.Reply) resp.Reply {
		if rs[0].IsError() {
			return rs[0]
		}
		if err := stream.ParseRecordReply(rs[0].Value()); err != nil {
			return resp.ErrorOf("ERR " + err.Error())
		}
		return resp.StatusOf("OK")
	}
	s.send(p, script(call))
	return nil
}

// helloDB is the database the session's opening commands select.
func helloDB(hello [][]string) int {
	for _, h := range hello {
		if len(h) == 2 && strings.EqualFold(h[0], "SELECT") {
			if n, err := strconv.Atoi(h[1]); err == nil {
				return n
			}
		}
	}
	return 0
}

// noteDB follows the database the connection is in: SELECT n (as sent: a
// SELECT the server refuses leaves it wrong, which the MOVE script finds
// out), RESET (0), and inside MULTI until EXEC (DISCARD goes back). The
// MOVE and COPY ... DB scripts need it to come back from the other
// database.
func (s *Session) noteDB(name string, args []string) {
	switch {
	case name == "MULTI" && len(args) == 1:
		s.cu.txDB = s.cu.db
	case name == "DISCARD" && len(args) == 1:
		s.cu.db = s.cu.txDB
	case name == "RESET" && len(args) == 1:
		s.cu.db = 0
	case name == "SELECT" && len(args) == 2:
		if n, err := strconv.Atoi(args[1]); err == nil && n >= 0 {
			s.cu.db = n
		}
	}
}

// move sends RENAME, RENAMENX, COPY or MOVE of a key that may be a
// stream with emulated IDMP state, which the script carries: within the
// database, or to another (MOVE, COPY ... DB).
func (s *Session) move(p *pending, c Command) error {
	m := c.Move
	db := m.DB
	if c.Name == "COPY" && db != "" {
		if n, err := strconv.Atoi(db); err == nil && n == s.cu.db {
			db = "" // COPY within the database it is in
		}
	}
	var call *redisconn.Call
	var err error
	if c.Name == "MOVE" || db != "" {
		op := "MOVE"
		if c.Name == "COPY" {
			op = "COPY"
		}
		call, err = s.streams.MoveDBCall(op, m.Src, m.Dst, m.Replace, db, s.cu.db)
	} else {
		call, err = s.streams.MoveCall(c.Name, m.Src, m.Dst, m.Replace, "")
	}
	if err != nil {
		return s.local(p, err)
	}
	p.combine = func(rs []resp.Reply) resp.Reply { return rs[0] }
	s.send(p, script(call))
	return nil
}

// parseDumpRestore picks DUMP key and RESTORE key ttl payload [options];
// any other shape is the server's.
func parseDumpRestore(c *Command) {
	a := c.Args
	switch {
	case c.Name == "DUMP" && len(a) == 2:
		c.Op, c.Stream = OpDump, a[1]
	case c.Name == "RESTORE" && len(a) >= 4:
		c.Op, c.Stream = OpRestore, a[1]
	}
}

// dumpCache keeps the emulated state of the streams the session DUMPed,
// by their payload, for a RESTORE of it: the 16 latest, and at most 64 MiB.
type dumpCache struct {
	mu    sync.Mutex
	order [][32]byte
	state map[[32]byte]*stream.DumpState
	size  int
}

const (
	maxDumps     = 16
	maxDumpBytes = 64 << 20
)

func (d *dumpCache) put(payload string, st *stream.DumpState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state == nil {
		d.state = map[[32]byte]*stream.DumpState{}
	}
	k := sha256.Sum256([]byte(payload))
	if _, ok := d.state[k]; !ok {
		d.order = append(d.order, k)
	}
	d.state[k] = st
	d.size += st.Size()
	for len(d.order) > maxDumps || d.size > maxDumpBytes && len(d.order) > 1 {
		old := d.order[0]
		d.order = d.order[1:]
		if o := d.state[old]; o != nil {
			d.size -= o.Size()
		}
		delete(d.state, old)
	}
}

func (d *dumpCache) get(payload string) *stream.DumpState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state[sha256.Sum256([]byte(payload))]
}

// dump sends DUMP through the script that takes the stream's emulated
// state with the payload; the reply is the payload, as DUMP's.
func (s *Session) dump(p *pending, c Command) error {
	call, err := s.streams.DumpCall(c.Stream)
	if err != nil {
		return s.local(p, err)
	}
	p.combine = func(rs []resp.Reply) resp.Reply {
		if rs[0].IsError() {
			return rs[0]
		}
		payload, st, ok, err := stream.ParseDumpReply(rs[0].Value())
		switch {
		case err != nil:
			return resp.ErrorOf("ERR " + err.Error())
		case !ok:
			return resp.NilReply()
		}
		if st != nil {
			s.cu.dumps.put(payload, st)
		}
		return resp.BulkOf(payload)
	}
	s.send(p, script(call))
	return nil
}

// restore sends RESTORE: with the state of the stream whose DUMP this
// session served, by the script; a payload of a stream that had emulated
// state this session did not DUMP is refused (the payload does not hold
// the state, and a stream restored without it would silently lose its
// tracking); any other passes.
func (s *Session) restore(p *pending, c Command) error {
	payload := c.Args[3]
	if st := s.cu.dumps.get(payload); st != nil {
		call, err := s.streams.RestoreCall(c.Stream, c.Args[2:], st)
		if err != nil {
			return s.local(p, err)
		}
		p.combine = func(rs []resp.Reply) resp.Reply { return rs[0] }
		s.send(p, script(call))
		return nil
	}
	if tok := stream.PayloadToken(payload); tok != "" {
		return s.local(p, fmt.Errorf("idmpctl: this DUMP payload is of a stream with emulated IDMP state (its token %s), "+
			"which a payload does not hold: RESTORE it in the idmpctl exec session that took the DUMP, or COPY, RENAME or MOVE the stream "+
			"on the server; to restore the stream without its IDMP state, use redis-cli", tok))
	}
	s.send(p, cmd(c.Args))
	return nil
}

// markStreams gives every stream of the database that has no emulated
// state of its own the server-level defaults old, before a CONFIG SET
// changes them to new: natively a stream keeps the defaults in force when
// it was created (streamNew), and a stream made by any client counts. It
// SCANs the database the session is in (TYPE stream) and runs the mark
// script for each, in round trips of its own; msg is an error reply for
// the CONFIG SET (a refused SCAN or script), which then changes nothing.
func (s *Session) markStreams(old, new idmp.Defaults) (msg string, err error) {
	if old == new {
		return "", nil
	}
	cursor := "0"
	for {
		var keys []string
		var scanErr string
		next := "0"
		s.send(&pending{internal: func(rs []resp.Reply) {
			r := rs[0]
			switch {
			case r.IsError():
				scanErr = r.Str
			case len(r.Elems) == 2:
				next = r.Elems[0].Str
				for _, k := range r.Elems[1].Elems {
					keys = append(keys, k.Str)
				}
			default:
				scanErr = "ERR idmpctl: unexpected SCAN reply"
			}
		}}, cmd([]string{"SCAN", cursor, "COUNT", "1000", "TYPE", "stream"}))
		if err := s.sync(); err != nil {
			return "", err
		}
		if scanErr != "" {
			return markRefused(scanErr), nil
		}
		var markErr string
		for _, k := range keys {
			call, err := s.streams.MarkCall(k, old)
			if err != nil {
				continue // a name without state keys of its own here: nothing to keep
			}
			s.send(&pending{internal: func(rs []resp.Reply) {
				for _, r := range rs {
					if r.IsError() && markErr == "" {
						markErr = r.Str
					}
				}
			}}, script(call))
		}
		if err := s.sync(); err != nil {
			return "", err
		}
		if markErr != "" {
			return markRefused(markErr), nil
		}
		if cursor = next; cursor == "0" {
			return "", nil
		}
	}
}

// markRefused is CONFIG SET's reply when the streams could not keep their
// defaults: nothing was changed.
func markRefused(why string) string {
	return "ERR idmpctl: CONFIG SET of the IDMP defaults first gives each stream of the database the defaults it was created with " +
		"(a stream keeps them, as in Redis 8.6), and that failed, so nothing was changed: " + why
}
