package exec

import (
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// The ops of emulated mode that follow Redis 8.6.3 beyond XADD, XCFGSET
// and XINFO STREAM (issue 22).
const (
	OpXInfoGroups Op = iota + 64 // XINFO GROUPS key: without the liveness tokens of emulated state
	OpXIdmpRecord                // XIDMPRECORD key pid iid id
)

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
		s.txDB = s.db
	case name == "DISCARD" && len(args) == 1:
		s.db = s.txDB
	case name == "RESET" && len(args) == 1:
		s.db = 0
	case name == "SELECT" && len(args) == 2:
		if n, err := strconv.Atoi(args[1]); err == nil && n >= 0 {
			s.db = n
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
		if n, err := strconv.Atoi(db); err == nil && n == s.db {
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
		call, err = s.streams.MoveDBCall(op, m.Src, m.Dst, m.Replace, db, s.db)
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
