package stream

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// DUMP and RESTORE of a stream with emulated state, which a payload does
// not hold (its token group aside): DumpCall takes it with the payload,
// RestoreCall writes it back, as RESTORE carries native tracking (R15).

var (
	//go:embed lua/stream_emu_dump.lua
	dumpLua string
	//go:embed lua/stream_emu_restore.lua
	restoreLua string

	dumpScript    = emulatedScript[stateOnlyArgs](decodeDumpReply, dumpLua)
	restoreScript = emulatedScript[restoreArgsOf](redisconn.CommandReply, restoreLua) // RESTORE's
)

// restoreArgsOf are the restore script's (lua/stream_emu_restore.lua).
type restoreArgsOf struct {
	State    stateArgs
	PIDKeys  []string       `lua:"PID_KEYS,key,rest"` // per pid of the state its ids hash and order list
	NRestore int            `lua:"NRESTORE"`
	Rest     *restoredState `lua:"REST,rest"`
	Defaults defaultsArgs
}

// restoredState is a restore's arguments after NRESTORE: RESTORE's, then the state.
type restoredState struct {
	restoreArgs []string
	state       *DumpState
}

func (r *restoredState) ArgsLen() int {
	n := len(r.restoreArgs) + 7
	for _, p := range r.state.PIDs {
		n += 2 + 2*len(p.IIDs)
	}
	return n
}

func (r *restoredState) AppendArgs(args []any) []any {
	for _, a := range r.restoreArgs {
		args = append(args, a)
	}
	st := r.state
	unordered := ""
	if st.Unordered {
		unordered = "1"
	}
	args = append(args, st.Duration, st.MaxSize, st.Added, st.Duplicates, st.Gen, unordered, len(st.PIDs))
	for _, p := range st.PIDs {
		args = append(args, p.PID, len(p.IIDs))
		for i := range p.IIDs {
			args = append(args, p.IIDs[i], p.IDs[i])
		}
	}
	return args
}

// DumpState is a stream's emulated state as a DUMP took it.
type DumpState struct {
	Duration, MaxSize, Added, Duplicates int64
	Gen                                  string
	Unordered                            bool
	PIDs                                 []DumpPID
}

// DumpPID is one producer's live iids and their entry IDs, oldest first.
type DumpPID struct {
	PID       string
	IIDs, IDs []string
}

// Size is about how many bytes the state holds (for a bound on how many a
// caller keeps).
func (d *DumpState) Size() int {
	n := 64 + len(d.Gen)
	for _, p := range d.PIDs {
		n += len(p.PID)
		for i := range p.IIDs {
			n += len(p.IIDs[i]) + len(p.IDs[i]) + 32
		}
	}
	return n
}

// DumpCall is the call of the script that runs DUMP key and takes the
// emulated IDMP state of the stream it is (ParseDumpReply reads it).
func (s *Streams) DumpCall(key string) (*redisconn.Call, error) {
	return s.callOf(key, func(_ idmp.StateLayout, st stateArgs, d defaultsArgs) *redisconn.Call {
		return dumpScript.Call(&stateOnlyArgs{State: st, Defaults: d})
	})
}

// ParseDumpReply reads DumpCall's reply: the payload (ok false: no key),
// and the state (nil: no live emulated state).
func ParseDumpReply(v any) (payload string, state *DumpState, ok bool, err error) {
	r, err := dumpScript.Decode(v)
	return r.payload, r.state, r.ok, err
}

// dumpReply is the dump script's reply (ParseDumpReply).
type dumpReply struct {
	payload string
	state   *DumpState
	ok      bool
}

// decodeDumpReply is the dump script's decoder.
func decodeDumpReply(v any) (dumpReply, error) {
	r, isList := v.([]any)
	bad := func() (dumpReply, error) {
		return dumpReply{}, exit.New(exit.Internal, "emulated DUMP", "unexpected reply %s", fmt.Sprint(v))
	}
	if !isList {
		return bad()
	}
	if len(r) == 0 {
		return dumpReply{}, nil
	}
	payload, isStr := r[0].(string)
	switch {
	case !isStr:
		return bad()
	case len(r) == 1:
		return dumpReply{payload: payload, ok: true}, nil
	case len(r) < 8:
		return bad()
	}
	failed := false // a value of another type was read
	num := func(i int) int64 { n, ok := r[i].(int64); failed = failed || !ok; return n }
	str := func(i int) string { s, ok := r[i].(string); failed = failed || !ok; return s }
	d := &DumpState{Duration: num(1), MaxSize: num(2), Added: num(3), Duplicates: num(4), Gen: str(5), Unordered: str(6) == "1"}
	npids := num(7)
	at := 8
	for range npids {
		if failed || at+1 >= len(r) {
			return bad()
		}
		p := DumpPID{PID: str(at)}
		n := int(num(at + 1))
		if failed || at+2+2*n > len(r) {
			return bad()
		}
		for k := range n {
			p.IIDs, p.IDs = append(p.IIDs, str(at+2+2*k)), append(p.IDs, str(at+3+2*k))
		}
		d.PIDs = append(d.PIDs, p)
		at += 2 + 2*n
	}
	if failed || at != len(r) {
		return bad()
	}
	return dumpReply{payload, d, true}, nil
}

// RestoreCall runs RESTORE key restoreArgs... and writes state (as DumpCall
// took it) under key's names. Its reply is RESTORE's.
func (s *Streams) RestoreCall(key string, restoreArgs []string, state *DumpState) (*redisconn.Call, error) {
	return s.callOf(key, func(l idmp.StateLayout, st stateArgs, d defaultsArgs) *redisconn.Call {
		var keys []string
		for _, p := range state.PIDs {
			keys = append(keys, l.IDs(p.PID), l.Order(p.PID))
		}
		return restoreScript.Call(&restoreArgsOf{State: st, PIDKeys: keys, NRestore: len(restoreArgs),
			Rest: &restoredState{restoreArgs: restoreArgs, state: state}, Defaults: d})
	})
}

// tokenInPayload finds a token's name in a DUMP payload: an RDB compresses
// only strings over 20 bytes, and a token's name has 20.
var tokenInPayload = regexp.MustCompile(`idmpctl:[0-9a-f]{12}`)

// PayloadToken is the liveness token a stream's DUMP payload holds ("":
// none): its stream had emulated state, which the payload lacks.
func PayloadToken(payload string) string {
	if !strings.Contains(payload, tokenPrefix) {
		return ""
	}
	return tokenInPayload.FindString(payload)
}
