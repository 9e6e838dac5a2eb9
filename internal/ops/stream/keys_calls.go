package stream

import (
	_ "embed"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// Calls for exec's keyspace commands in emulated mode: CONFIG SET of the
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
	_, st, err := s.state(stream)
	if err != nil {
		return nil, err
	}
	return markScript.Call(&stateOnlyArgs{State: st, Defaults: defaultsArgsOf(&d)}), nil
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
