package exec

import (
	"strings"

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
