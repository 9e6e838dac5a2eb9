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

// The ops of emulated mode beyond XADD, XCFGSET and XINFO STREAM (issue 22).
const (
	OpXInfoGroups Op = iota + 64 // XINFO GROUPS key: without the liveness tokens of emulated state
	OpXIdmpRecord                // XIDMPRECORD key pid iid id
	OpDump                       // DUMP key: the payload, and the state of the stream it is
	OpRestore                    // RESTORE key ttl payload ...: with the state its DUMP took
	OpDel                        // DEL or UNLINK key...: with the keys' emulated state
)

// catchupState is the session's own of these ops.
type catchupState struct {
	db, txDB int // the database the connection is in (noteDB); txDB: at MULTI
	dumps    dumpCache
}

// RecordRequest is an XIDMPRECORD: ID as Redis writes it (ms-seq).
type RecordRequest struct{ Stream, PID, IID, ID string }

// parseXIdmpRecord follows xidmprecordCommand: the arity, the ID, the pid,
// the iid; the key is looked up only then (by the script).
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

// noteDB follows the database the connection is in, which the MOVE and
// COPY ... DB scripts come back to: SELECT n (as sent: a refused one leaves
// it wrong, which the MOVE script finds out), RESET, DISCARD.
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

// move sends RENAME, RENAMENX, COPY or MOVE through the script that carries
// a stream's emulated IDMP state: within the database, or to another.
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
	if c.Name == "MOVE" || db != "" { // MOVE, or COPY ... DB to another database
		call, err = s.streams.MoveDBCall(c.Name, m.Src, m.Dst, m.Replace, db, s.cu.db)
	} else {
		call, err = s.streams.MoveCall(c.Name, m.Src, m.Dst, m.Replace, "")
	}
	if err != nil {
		return s.local(p, err)
	}
	s.send(p, script(call))
	return nil
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
// session served, by the script. A payload of a stream with emulated state
// this session did not DUMP is refused: the stream would lose its tracking.
func (s *Session) restore(p *pending, c Command) error {
	payload := c.Args[3]
	if st := s.cu.dumps.get(payload); st != nil {
		call, err := s.streams.RestoreCall(c.Stream, c.Args[2:], st)
		if err != nil {
			return s.local(p, err)
		}
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

// markStreams gives every stream of the database without emulated state of
// its own the defaults old before a CONFIG SET changes them to new: natively
// a stream keeps the defaults of its creation (streamNew). msg is an error
// reply for the CONFIG SET (a refused SCAN or script), which changes nothing.
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
