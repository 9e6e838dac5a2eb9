package exec

import (
	"context"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// One runs a single command and returns its reply (idmpctl exec COMMAND).
// An XADD IDMP costs one round trip, as xadd's does, even before the mode
// and the server-level defaults are known: the add script refuses,
// writing nothing, on a server with native IDMP and when the stream's
// state starts without the defaults, and the add is sent again knowing.
func (s *Session) One(ctx context.Context, args []string) (resp.Reply, error) {
	var got *resp.Reply
	s.opt.Emit = func(r resp.Reply, _ bool) { got = &r }
	if s.opt.ReadOnly && len(args) > 0 {
		if why := s.readOnlyRefusal(ctx, args); why != "" {
			return readOnlyReply(why), nil
		}
	}
	if s.mode != stream.ModeNative && len(args) > 0 {
		if c := Parse(args); c.Op == OpXAdd {
			return s.oneAdd(ctx, args, c.Add)
		}
	}
	if err := s.Do(ctx, args); err != nil {
		return resp.Reply{}, err
	}
	if err := s.sync(); err != nil {
		return resp.Reply{}, err
	}
	if got == nil {
		return resp.Reply{}, exit.New(exit.Internal, "exec", "no reply")
	}
	return *got, nil
}

func (s *Session) oneAdd(ctx context.Context, args []string, req stream.AddRequest) (resp.Reply, error) {
	for range 3 {
		reqs := []stream.AddRequest{req}
		call, iids, err := s.streams.AddRunCall(reqs)
		if s.mode == stream.ModeAuto {
			call, iids, err = s.streams.AddProbeCall(reqs)
		}
		if err != nil {
			return resp.ErrorOf("ERR " + err.Error()), nil
		}
		var raw *resp.Reply
		var out resp.Reply
		p := &pending{combine: func(rs []resp.Reply) resp.Reply { raw = &rs[0]; return rs[0] }}
		s.opt.Emit = func(r resp.Reply, _ bool) { out = r }
		s.send(p, script(call))
		if err := s.sync(); err != nil {
			return resp.Reply{}, err
		}
		if raw != nil && raw.IsError() && s.mode == stream.ModeAuto && scriptsRefusedReply(raw.Str) {
			// Auto mode's probe, refused: on a server with IDMP of its own
			// the add would go through the upgrade guard, a script too.
			// The refusal is worded as a stream of commands words it.
			if caps, err := s.conn.Capabilities(ctx); err == nil && caps.NativeIDMP {
				return guardNeedsScripts(), nil
			}
		}
		if raw == nil || raw.IsError() {
			return out, nil // the script's error, or a SCRIPT LOAD's
		}
		ids, noStream, err := stream.ParseAddRunReply(raw.Value(), iids)
		switch {
		case stream.NativeServer(err):
			s.mode = stream.ModeNative
			return s.One(ctx, args)
		case stream.NeedsDefaults(err):
			if err := s.streams.LoadDefaults(ctx); err != nil {
				return resp.Reply{}, err
			}
			continue
		case len(ids) == 1:
			if s.mode == stream.ModeAuto {
				s.mode = stream.ModeEmulated
			}
			return resp.BulkOf(ids[0]), nil
		case noStream:
			return resp.NilReply(), nil
		case err != nil:
			return resp.ErrorOf(strings.TrimSpace(err.Error())), nil
		}
	}
	return resp.Reply{}, exit.New(exit.Internal, "exec", "the add script kept refusing")
}
