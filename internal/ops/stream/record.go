package stream

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// XIDMPRECORD (R14): attach (pid, iid) to an existing entry. Natively Redis
// 8.6.2+'s; emulated lua/stream_emu_record.lua, with the same grammar and errors.

//go:embed lua/stream_emu_record.lua
var recordLua string

var recordScript = emulatedScript[recordArgs](decodeRecordReply, recordLua)

// recordArgs are the record script's (see lua/stream_emu_record.lua).
type recordArgs struct {
	State    stateArgs
	IDs      string `lua:"IDS,key"`   // the pid's ids hash
	Order    string `lua:"ORDER,key"` // and order list
	PID      string `lua:"PID"`
	IID      string `lua:"IID"`
	ID       string `lua:"ID"`
	Defaults defaultsArgs
}

// Errors of XIDMPRECORD in Redis 8.6.3's words (t_stream.c,
// xidmprecordCommand).
const (
	ErrRecordEmptyPID  = "ERR producer ID must be non-empty"
	ErrRecordEmptyIID  = "ERR idempotent ID must be non-empty"
	ErrRecordNoEntry   = "ERR No such message in stream"
	ErrRecordConflict  = "ERR IID already exists for this producer with a different stream ID"
	ErrInvalidStreamID = "ERR Invalid stream ID specified as stream command argument"
)

// ParseEntryID reads a stream entry ID as Redis's strict parser does
// (streamParseStrictIDOrReply with a missing sequence of 0): "ms" or
// "ms-seq", each an unsigned 64-bit integer as strtoull reads it (so
// "007" and "+7" are 7), no "-" or "+" alone, at most 127 bytes. It
// returns the ID as Redis writes it (ms-seq, no leading zeros).
func ParseEntryID(s string) (string, bool) {
	if len(s) > 127 || s == "-" || s == "+" {
		return "", false
	}
	msText, seqText, dash := strings.Cut(s, "-")
	ms, ok := parseULL(msText)
	if !ok {
		return "", false
	}
	var seq uint64
	if dash {
		if seq, ok = parseULL(seqText); !ok {
			return "", false
		}
	}
	return strconv.FormatUint(ms, 10) + "-" + strconv.FormatUint(seq, 10), true
}

// parseULL is Redis's string2ull: a signed 64-bit integer as string2ll
// reads it (refused when negative), else strtoull's whole-string read
// (leading white space, a sign, any zeros: " -5" wraps around as C's does,
// and Redis takes it as it comes).
func parseULL(s string) (uint64, bool) {
	if n, ok := idmp.ParseInt(s); ok {
		return uint64(n), n >= 0 // a negative integer is out of range
	}
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	n, err := strconv.ParseUint(t, 10, 64) // digits only: no sign, no '_'
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// ValidateRecord checks XIDMPRECORD's arguments in Redis's order (ID, pid,
// iid) with its texts (64), and returns the ID as Redis writes it.
func ValidateRecord(pid, iid, id string) (string, error) {
	usage := func(msg string) error { return exit.New(exit.Usage, "", "%s", msg) }
	canon, ok := ParseEntryID(id)
	switch {
	case !ok:
		return "", usage(ErrInvalidStreamID)
	case pid == "":
		return "", usage(ErrRecordEmptyPID)
	case iid == "":
		return "", usage(ErrRecordEmptyIID)
	}
	return canon, nil
}

// RecordCall is the record script's call for exec (id as ValidateRecord
// returns it); ParseRecordReply reads its reply.
func (s *Streams) RecordCall(stream, pid, iid, id string) (*redisconn.Call, error) {
	return s.callOf(stream, func(l idmp.StateLayout, st stateArgs, d defaultsArgs) *redisconn.Call {
		return recordScript.Call(&recordArgs{State: st, IDs: l.IDs(pid), Order: l.Order(pid), PID: pid, IID: iid, ID: id, Defaults: d})
	})
}

// ParseRecordReply reads the record script's reply: nil for OK, or
// errNeedDefaults (the state starts here; nothing written).
func ParseRecordReply(v any) error {
	_, err := recordScript.Decode(v)
	return err
}

// decodeRecordReply is the record script's decoder: OK, or {'D'}: the
// defaults are needed.
func decodeRecordReply(v any) (struct{}, error) {
	switch r := v.(type) {
	case string:
		if r == "OK" {
			return struct{}{}, nil
		}
	case []any:
		if len(r) == 1 && r[0] == "D" {
			return struct{}{}, errNeedDefaults
		}
	}
	return struct{}{}, exit.New(exit.Internal, "emulated XIDMPRECORD", "unexpected reply %s", fmt.Sprint(v))
}
