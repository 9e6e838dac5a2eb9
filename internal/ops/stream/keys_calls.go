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

	markScript = emulatedScript(markLua)
	delScript  = emulatedScript(delLua)
)

// MarkCall is the call of the script that gives stream, when it has no
// emulated IDMP state, the server-level defaults d (those in force
// before a CONFIG SET changes them: natively a stream keeps the defaults
// of its creation). Its reply is 1 when it did, 0 when it had no need.
func (s *Streams) MarkCall(stream string, d idmp.Defaults) (*redisconn.Call, error) {
	_, keys, args, err := s.stateCall(stream)
	if err != nil {
		return nil, err
	}
	call := redisconn.NewCall(markScript, keys, len(args)+2)
	call.Args = append(append(call.Args, args...), d.Duration, d.MaxSize)
	return call, nil
}

// DelCall is the call of the script that runs DEL (or UNLINK, op) of keys
// and drops the emulated IDMP state of each. Its reply is the command's.
func (s *Streams) DelCall(op string, keys []string) (*redisconn.Call, error) {
	ks := make([]string, 0, 3*len(keys))
	args := make([]any, 0, 1+3*len(keys)+2)
	args = append(args, op)
	for _, k := range keys {
		_, kk, a, err := s.stateCall(k)
		if err != nil {
			return nil, err
		}
		ks = append(ks, kk...)
		args = append(args, a...)
	}
	call := redisconn.NewCall(delScript, ks, len(args)+2)
	call.Args = append(append(call.Args, args...), s.defaultArgs()...)
	return call, nil
}
