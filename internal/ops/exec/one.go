package exec

import (
	"context"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// One runs a single command and returns its reply (idmpctl exec COMMAND).
func (s *Session) One(ctx context.Context, args []string) (resp.Reply, error) {
	var got *resp.Reply
	s.opt.Emit = func(r resp.Reply, _ bool) { got = &r }
	if s.opt.ReadOnly && len(args) > 0 {
		if why := s.readOnlyRefusal(ctx, args); why != "" {
			return readOnlyReply(why), nil
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
