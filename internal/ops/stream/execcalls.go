package stream

import (
	"context"
	_ "embed"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// The scripts' calls for a caller that sends them and reads their replies
// itself (idmpctl exec), the ones Add, CfgSet and Info make.

// AddCall is the call of one run (SameRun, validated, at most MaxRun), and
// its reader: the IDs done, then what stopped the run (noStream, or XADD's
// error verbatim). Emulated, call Ready first.
func (s *Streams) AddCall(reqs []AddRequest) (*redisconn.Call, func(v any) (ids []string, noStream bool, err error), error) {
	call, parse, err := s.be.addCall(reqs, nil, replyIDs)
	if err != nil {
		return nil, nil, err
	}
	return call, func(v any) ([]string, bool, error) {
		res, err := parse(v)
		ids := make([]string, len(res))
		for i, r := range res {
			ids[i] = r.ID
		}
		if exit.Code(err) == exit.NotFound {
			return ids, true, nil
		}
		return ids, false, err
	}, nil
}

// Ready learns what calls made for a caller that sends them itself must
// carry (emulated: the server-level defaults; native: its own).
func (s *Streams) Ready(ctx context.Context) error { return s.be.ready(ctx) }

// CfgSetCall is the XCFGSET script's call (0 keeps a value). Its reply is
// six integers, or the script's error (ERR no such key, WRONGTYPE).
func (s *Streams) CfgSetCall(stream string, duration, maxsize int64) (*redisconn.Call, error) {
	return s.callOf(stream, func(_ idmp.StateLayout, st stateArgs, d defaultsArgs) *redisconn.Call {
		return cfgsetScript.Call(&cfgsetArgs{State: st, Duration: duration, MaxSize: maxsize, Defaults: d})
	})
}

// InfoCall is the XINFO view script's call; ParseInfoCallReply reads it.
func (s *Streams) InfoCall(stream string) (*redisconn.Call, error) {
	return s.callOf(stream, func(_ idmp.StateLayout, st stateArgs, d defaultsArgs) *redisconn.Call {
		return infoScript.Call(&stateOnlyArgs{State: st, Defaults: d})
	})
}

// ParseInfoCallReply reads an InfoCall's reply: ok false when the stream
// does not exist.
func ParseInfoCallReply(v any, stream string) (Info, bool, error) {
	info, err := infoScript.Decode(v)
	if info == nil || err != nil {
		return Info{}, false, err
	}
	info.Stream = stream
	return *info, true, nil
}

//go:embed lua/stream_emu_move.lua
var moveLua string

var moveScript = emulatedScript[moveArgs](redisconn.CommandReply, moveLua) // the command's

// dstArgs are a destination stream's state, as stateArgs are the source's.
type dstArgs struct {
	Stream      string `lua:"DST,key"`
	Meta        string `lua:"DST_META,key"`
	PIDs        string `lua:"DST_PIDS,key"`
	IDsPrefix   string `lua:"DST_IDS"`
	OrderPrefix string `lua:"DST_ORDER"`
	Owner       string `lua:"DST_OWNER"`
}

// movePair are the state arguments of a move's source and destination.
func (s *Streams) movePair(src, dst string) (stateArgs, dstArgs, error) {
	_, st, err := s.state(src)
	if err != nil {
		return st, dstArgs{}, err
	}
	_, dt, err := s.state(dst)
	return st, dstArgs(dt), err
}

// moveArgs are the move script's (see lua/stream_emu_move.lua).
type moveArgs struct {
	State    stateArgs // the source's
	Dst      dstArgs
	Op       string `lua:"OP"`      // RENAME, RENAMENX or COPY
	Replace  bool   `lua:"REPLACE"` // COPY ... REPLACE
	DB       string `lua:"DB"`      // COPY's DB ("" none)
	Defaults defaultsArgs
}

// moveDBArgs are the script's of MOVE and COPY ... DB (see
// lua/stream_emu_movedb.lua).
type moveDBArgs struct {
	State    stateArgs // the source's
	Dst      dstArgs   // in database DB
	Op       string    `lua:"OP"` // MOVE or COPY
	Replace  bool      `lua:"REPLACE"`
	DB       string    `lua:"DB"`
	From     int       `lua:"FROM_DB"` // the database the connection is in
	Defaults defaultsArgs
}

// MoveCall runs RENAME, RENAMENX or COPY (op) and takes the source's
// emulated state along (lua/stream_emu_move.lua); the reply is the command's.
func (s *Streams) MoveCall(op, src, dst string, replace bool, db string) (*redisconn.Call, error) {
	st, dt, err := s.movePair(src, dst)
	if err != nil {
		return nil, err
	}
	return moveScript.Call(&moveArgs{State: st, Dst: dt, Op: op, Replace: replace, DB: db, Defaults: s.defaultArgs()}), nil
}

//go:embed lua/stream_emu_movedb.lua
var moveDBLua string

var moveDBScript = emulatedScript[moveDBArgs](redisconn.CommandReply, moveDBLua) // the command's

// MoveDBCall runs MOVE src db (dst = src) or COPY src dst DB db and takes
// the emulated state to db along; from, the connection's database as the
// caller knows it, is checked by the script. The reply is the command's.
func (s *Streams) MoveDBCall(op, src, dst string, replace bool, db string, from int) (*redisconn.Call, error) {
	st, dt, err := s.movePair(src, dst)
	if err != nil {
		return nil, err
	}
	return moveDBScript.Call(&moveDBArgs{State: st, Dst: dt, Op: op, Replace: replace, DB: db, From: from,
		Defaults: s.defaultArgs()}), nil
}

// Exec's keyspace commands in emulated mode: CONFIG SET of the
// server-level defaults (MarkCall) and DEL/UNLINK (DelCall).
var (
	//go:embed lua/stream_emu_mark.lua
	markLua string
	//go:embed lua/stream_emu_del.lua
	delLua string

	markScript = emulatedScript[stateOnlyArgs](redisconn.Int64Reply, markLua)
	delScript  = emulatedScript[delArgs](redisconn.CommandReply, delLua) // the command's
)

// delArgs are the DEL script's (lua/stream_emu_del.lua).
type delArgs struct {
	State    stateArgs
	MoreKeys []string `lua:"MORE_KEYS,key,rest"`
	More     []any    `lua:"MORE,rest"`
	Op       string   `lua:"OP"`
	Defaults defaultsArgs
}

// MarkCall gives stream without emulated state the defaults d in force
// before a CONFIG SET (natively a stream keeps its creation's); reply 1 or 0.
func (s *Streams) MarkCall(stream string, d idmp.Defaults) (*redisconn.Call, error) {
	return s.callOf(stream, func(_ idmp.StateLayout, st stateArgs, _ defaultsArgs) *redisconn.Call {
		return markScript.Call(&stateOnlyArgs{State: st, Defaults: defaultsArgsOf(&d)})
	})
}

// DelCall is the call of the script that runs DEL (or UNLINK, op) of keys
// and drops the emulated IDMP state of each. Its reply is the command's.
func (s *Streams) DelCall(op string, keys []string) (*redisconn.Call, error) {
	a := delArgs{Op: op, Defaults: s.defaultArgs()}
	for i, k := range keys {
		_, st, err := s.state(k)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			a.State = st
			continue
		}
		a.MoreKeys = append(a.MoreKeys, st.Stream, st.Meta, st.PIDs)
		a.More = append(a.More, st.IDsPrefix, st.OrderPrefix, st.Owner)
	}
	return delScript.Call(&a), nil
}
