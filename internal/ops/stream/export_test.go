package stream

import (
	"context"
	"errors"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

// NewStreams opens streams in mode m (Open, for the tests).
func NewStreams(c *redisconn.Conn, m Mode) (*Streams, error) {
	return Open(context.Background(), c, m)
}

// Resolved is the mode the streams were opened in.
func (s *Streams) Resolved(context.Context) (Mode, error) { return s.Mode(), nil }

// add1 is Add of one request: its result.
func (s *Streams) add1(ctx context.Context, req AddRequest) (AddResult, error) {
	res, err := s.Add(ctx, AddOptions{}, req)
	if len(res) == 0 {
		return AddResult{}, err
	}
	return res[0], err
}

// AddBatch is Add of requests without options, whose error says the
// request that failed (a *BatchError) also for one request.
func (s *Streams) AddBatch(ctx context.Context, reqs []AddRequest) ([]AddResult, error) {
	res, err := s.Add(ctx, AddOptions{}, reqs...)
	if be := (*BatchError)(nil); err != nil && !errors.As(err, &be) {
		err = &BatchError{Index: len(res), Err: err}
	}
	return res, err
}

// addDurably is a durable Add of one request, and its acknowledgement.
func (s *Streams) addDurably(ctx context.Context, req AddRequest, d redisconn.Durability) (AddResult, redisconn.Ack, error) {
	res, err := s.Add(ctx, AddOptions{Durability: d}, req)
	if len(res) == 0 || res[0].Ack == nil {
		return AddResult{}, redisconn.Ack{}, err
	}
	return res[0], *res[0].Ack, err
}

// addRetrying is Add of one request with retries.
func (s *Streams) addRetrying(ctx context.Context, req AddRequest, d redisconn.Durability, retries int, onRetry func(int, error)) (AddResult, error) {
	res, err := s.Add(ctx, AddOptions{Durability: d, Retries: retries, OnRetry: onRetry}, req)
	if len(res) == 0 {
		return AddResult{}, err
	}
	return res[0], err
}

// rawRun runs script s with keys and args as given, not through its typed
// call: for tests that send a call as the client builds it, or a malformed
// one on purpose.
func rawRun(s *redisconn.Script, ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return redis.NewScript(strings.Join(s.Parts(), "")).Run(ctx, c, keys, args...)
}

// stateCall is the state's keys and leading arguments as a call has them
// (stateArgs), for tests that build a call by hand.
func (s *Streams) stateCall(stream string) (idmp.StateLayout, []string, []any, error) {
	l, st, err := s.state(stream)
	return l, []string{st.Stream, st.Meta, st.PIDs}, []any{st.IDsPrefix, st.OrderPrefix, st.Owner}, err
}

// streamsOf is streams of mode m on conn without asking the server, with
// the emulated defaults d (nil: not read).
func streamsOf(c *redisconn.Conn, m Mode, d *idmp.Defaults) *Streams {
	s := &Streams{Conn: c, Defaults: d}
	switch m {
	case ModeNative:
		s.be = native{s}
	default:
		s.be = emulated{s}
	}
	return s
}

// nativeBatchCall is the native add script's call for a chunk of the run,
// and each request's iid ("" for IDMPAUTO).
func (r *batchRun) nativeBatchCall(c *chunk) (*redisconn.Call, []string) {
	s := *r.s // a copy: the run's own calls read maxBulk meanwhile
	s.maxBulk = r.maxBulk
	cp := &chunkProgress{Key: r.key, Index: r.layout.Batches, From: c.from, To: c.to, Digest: c.digest, DropReplies: -1, TTL: r.spec.TTL,
		ID: r.spec.ID, PID: r.spec.Template.PID, Lines: c.lines, Run: r.run}
	call, _, _ := native{&s}.addCall(c.reqs, cp, replyOutcomes)
	iids := make([]string, len(c.reqs))
	for i, q := range c.reqs {
		iids[i] = q.IID
	}
	return call, iids
}

// parseNativeBatchReplyT reads a native add reply for n requests.
func parseNativeBatchReplyT(v any, iids []string, _ int) ([]AddResult, error) {
	return parseNativeReply(v, iids)
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
		if err := s.LoadDefaults(ctx); err != nil {
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
