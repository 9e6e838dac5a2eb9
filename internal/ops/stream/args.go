package stream

// The argument structs several scripts share (redisconn.NewLua).

import (
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/idmp"
)

// stateArgs are what every emulated script takes first (lua/stream_common.lua).
type stateArgs struct {
	Stream      string `lua:"STREAM,key"`
	Meta        string `lua:"META,key"`
	PIDs        string `lua:"PIDS,key"`
	IDsPrefix   string `lua:"IDS_PREFIX"`
	OrderPrefix string `lua:"ORDER_PREFIX"`
	Owner       string `lua:"OWNER"`
}

// stateArgsOf are stream's state arguments in layout l.
func stateArgsOf(stream string, l idmp.StateLayout) stateArgs {
	return stateArgs{Stream: stream, Meta: l.Meta, PIDs: l.PIDs, IDsPrefix: l.IDsPrefix, OrderPrefix: l.OrderPrefix, Owner: stream}
}

// defaultsArgs are the server-level defaults, last in every emulated call
// (the guard's: the native ones); "" "" when not known.
type defaultsArgs struct {
	Duration string `lua:"SERVER_DURATION_ARG"`
	MaxSize  string `lua:"SERVER_MAXSIZE_ARG"`
}

func defaultsArgsOf(d *idmp.Defaults) defaultsArgs {
	if d == nil {
		return defaultsArgs{}
	}
	return defaultsArgs{Duration: strconv.FormatInt(d.Duration, 10), MaxSize: strconv.FormatInt(d.MaxSize, 10)}
}

// defaultArgs are the emulated defaults as the scripts take them.
func (s *Streams) defaultArgs() defaultsArgs { return defaultsArgsOf(s.Defaults) }

// trimArgs are an add's trimming, for every item of a call: MAXLEN or
// MINID (or ""), '=' or '~', the threshold, and LIMIT ("" none).
type trimArgs struct {
	Trim      string `lua:"TRIM"`
	Op        string `lua:"TRIM_OP"`
	Threshold string `lua:"THRESHOLD"`
	Limit     string `lua:"LIMIT"`
}

func trimArgsOf(r *AddRequest) trimArgs {
	t := trimArgs{Op: "="}
	switch {
	case r.MaxLen > 0:
		t.Trim, t.Threshold = "MAXLEN", strconv.FormatInt(r.MaxLen, 10)
	case r.MinID != "":
		t.Trim, t.Threshold = "MINID", r.MinID
	}
	if r.Approx {
		t.Op = "~"
	}
	switch {
	case r.Limit > 0:
		t.Limit = strconv.FormatInt(r.Limit, 10)
	case r.Limit < 0:
		t.Limit = "0"
	}
	return t
}

// progressArgs are a chunk's record move (From "": no chunk); Drop, set
// when the chunk is sent, names the kept replies that go.
type progressArgs struct {
	From   string `lua:"FROM"`
	To     string `lua:"TO"`
	Digest string `lua:"DIGEST"`
	Drop   string `lua:"DROP"`
	TTL    string `lua:"PROGRESS_TTL"`
	ID     string `lua:"BATCH_ID"`
	PID    string `lua:"BATCH_PID"`
	Lines  string `lua:"LINES"`
	Run    string `lua:"RUN"`
}

// progressArgsOf are cp's arguments (none for a nil cp).
func progressArgsOf(cp *chunkProgress) progressArgs {
	if cp == nil {
		return progressArgs{}
	}
	var lines strings.Builder
	lines.Grow(len(cp.Lines) * 7)
	var num [20]byte
	for i, n := range cp.Lines {
		if i > 0 {
			lines.WriteByte(',')
		}
		lines.Write(strconv.AppendInt(num[:0], n, 10))
	}
	p := progressArgs{From: strconv.FormatInt(cp.From, 10), To: strconv.FormatInt(cp.To, 10), Digest: cp.Digest,
		TTL: strconv.FormatInt(cp.TTL.Milliseconds(), 10), ID: cp.ID, PID: cp.PID, Lines: lines.String(), Run: cp.Run}
	if cp.DropReplies >= 0 {
		p.Drop = strconv.FormatInt(cp.DropReplies, 10)
	}
	return p
}
