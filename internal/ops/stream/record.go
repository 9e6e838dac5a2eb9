package stream

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
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
	if !allDigits(t) {
		return 0, false
	}
	n, err := strconv.ParseUint(t, 10, 64)
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

// RecordIID runs XIDMPRECORD in the streams' mode; a repeat changes
// nothing. No stream or entry: exit.NotFound; the pair on another ID
// (ErrRecordConflict) or WRONGTYPE: exit.Data.
func (s *Streams) RecordIID(ctx context.Context, stream, pid, iid, id string) error {
	canon, err := ValidateRecord(pid, iid, id)
	if err != nil {
		return err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.Settle(ctx); err != nil {
		return err
	}
	if s.Mode() != ModeEmulated {
		err = s.Conn.Do(func(c redis.UniversalClient) error {
			return c.Do(ctx, "XIDMPRECORD", stream, pid, iid, canon).Err()
		})
		return recordErr(err)
	}
	for {
		call, err := s.runState(ctx, stream, func(l idmp.StateLayout, st stateArgs, d defaultsArgs) *redisconn.Call {
			return recordScript.Call(&recordArgs{State: st, IDs: l.IDs(pid), Order: l.Order(pid), PID: pid, IID: iid, ID: canon, Defaults: d})
		})
		if err == nil {
			err = call.Cmd.Err() // the script's error reply
		}
		if err != nil {
			return recordErr(scriptErr(err))
		}
		err = ParseRecordReply(call.Cmd.Val())
		if !errors.Is(err, errNeedDefaults) || s.Defaults != nil {
			return err
		}
		if err := s.loadDefaults(ctx); err != nil {
			return err
		}
	}
}

// recordErr gives XIDMPRECORD's errors their exit codes.
func recordErr(err error) error {
	var e *exit.Error
	switch {
	case err == nil || errors.As(err, &e):
		return err
	case strings.Contains(err.Error(), "no such key"), strings.Contains(err.Error(), ErrRecordNoEntry):
		return &exit.Error{Code: exit.NotFound, Err: err}
	case strings.Contains(err.Error(), ErrRecordConflict):
		return &exit.Error{Code: exit.Data, Err: err}
	}
	return err
}

// RecordCall is the record script's call for exec (id as ValidateRecord
// returns it); ParseRecordReply reads its reply.
func (s *Streams) RecordCall(stream, pid, iid, id string) (*redisconn.Call, error) {
	l, st, err := s.state(stream)
	if err != nil {
		return nil, err
	}
	return recordScript.Call(&recordArgs{State: st, IDs: l.IDs(pid), Order: l.Order(pid), PID: pid, IID: iid, ID: id, Defaults: s.defaultArgs()}), nil
}

// ParseRecordReply reads the record script's reply: nil for OK, or
// NeedsDefaults (the state starts here; nothing written).
func ParseRecordReply(v any) error {
	needs, err := recordScript.Decode(v)
	if needs {
		return errNeedDefaults
	}
	return err
}

// decodeRecordReply is the record script's decoder: OK (false), or {'D'}:
// the defaults are needed (true).
func decodeRecordReply(v any) (needsDefaults bool, err error) {
	switch r := v.(type) {
	case string:
		if r == "OK" {
			return false, nil
		}
	case []any:
		if len(r) == 1 && r[0] == "D" {
			return true, nil
		}
	}
	return false, exit.New(exit.Internal, "emulated XIDMPRECORD", "unexpected reply %s", fmt.Sprint(v))
}
