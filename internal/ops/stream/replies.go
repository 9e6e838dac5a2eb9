package stream

// The adding scripts' reply, as their decoder (redisconn.NewLua) reads it.

import (
	"fmt"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// runReply is the reply of lua/stream_emu_add.lua or stream_native_add.lua:
// a refusal, nothing written, or the adds done and why the run stopped.
type runReply struct {
	// code is a refusal's: 'D' no defaults, 'C' no native defaults, 'F'
	// item has too many (nfields), 'P' the record stands at line; "" a run.
	code    string
	item    int // 'F': from 1
	nfields int
	line    int64
	done    string // the items done, comma-separated (parseDone)
	stop    string // "" every item done; 'n' no stream; 'e' an error (message)
	message string
	fourth  any // the native script's 'u'; nil without
	raw     any // the reply as it came, for errors
}

// runReplyDecoder is the decoder of a script that runs adds: what names it
// in an error for a reply of another shape.
func runReplyDecoder(what string) func(v any) (runReply, error) {
	return func(v any) (runReply, error) {
		reply, ok := v.([]any)
		bad := func() (runReply, error) { return runReply{}, exit.New(exit.Internal, what, "unexpected reply %v", v) }
		if !ok || len(reply) == 0 {
			return bad()
		}
		r := runReply{raw: v}
		code, _ := reply[0].(string)
		switch {
		case len(reply) == 1 && (code == "D" || code == "C"):
			r.code = code
			return r, nil
		case len(reply) == 3 && code == "F":
			i, err1 := strconv.Atoi(fmt.Sprint(reply[1]))
			n, err2 := strconv.Atoi(fmt.Sprint(reply[2]))
			if err1 != nil || err2 != nil || i < 1 {
				return bad()
			}
			r.code, r.item, r.nfields = code, i, n
			return r, nil
		case len(reply) == 2 && code == "P":
			text, _ := reply[1].(string)
			line, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				return bad()
			}
			r.code, r.line = code, line
			return r, nil
		case len(reply) != 3 && len(reply) != 4:
			return bad()
		}
		r.done, _ = reply[0].(string)
		r.stop, _ = reply[1].(string)
		r.message, _ = reply[2].(string)
		if len(reply) == 4 {
			r.fourth = reply[3]
		}
		return r, nil
	}
}

// unexpected is the internal error of a reply that the script makes but
// that makes no sense here.
func (r runReply) unexpected(what string) error {
	return exit.New(exit.Internal, what, "unexpected reply %v", r.raw)
}
