package stream

// Durable adds: an add that waits until the replicas asked acknowledged it
// (WAIT, or WAITAOF), on the connection that made it. Emulated, the wait
// shares the script's round trip (redisconn.RunDurable); native, a
// MULTI/EXEC cannot carry it, so it follows on the same connection
// (redisconn.OnNode, WaitOn). An add that was not acknowledged stands on
// the primary; repeating it is safe (it is recognised as a duplicate).

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

// AddDurably is Add whose write must meet d. When it does not, the add
// stands on the primary: its result comes with an error (exit.Unavailable,
// or the wait's own code) wrapping a *redisconn.NotAckedError, never
// retryable.
func (s *Streams) AddDurably(ctx context.Context, req AddRequest, d redisconn.Durability) (AddResult, redisconn.Ack, error) {
	if !d.On() {
		res, err := s.Add(ctx, req)
		return res, redisconn.Ack{}, err
	}
	what := "xadd " + strconv.Quote(req.Stream)
	if err := req.Validate(); err != nil {
		return AddResult{}, redisconn.Ack{}, exit.Wrap(err, what)
	}
	reqs := []AddRequest{req}
	if _, err := s.checkBulk(ctx, reqs); err != nil {
		return AddResult{}, redisconn.Ack{}, exit.Wrap(err, what)
	}
	if _, err := checkFieldCounts(reqs); err != nil && s.Mode != ModeNative {
		if rerr := s.resolve(ctx); rerr != nil {
			return AddResult{}, redisconn.Ack{}, rerr
		}
		if s.Mode != ModeNative {
			return AddResult{}, redisconn.Ack{}, exit.Wrap(err, what)
		}
	}
	var res []AddResult
	var ack redisconn.Ack
	var err error
	if s.Mode != ModeNative {
		res, ack, err = s.emulatedAddDurable(ctx, reqs, d)
		if err == nil && s.Mode == ModeAuto {
			s.Mode = ModeEmulated
		}
		if errors.Is(err, errNativeServer) {
			s.Mode = ModeNative
		}
	}
	if s.Mode == ModeNative {
		res, ack, err = s.nativeAddDurable(ctx, reqs, d)
		if err != nil && len(res) == 0 && exit.Code(err) != exit.Unavailable {
			if rerr := s.resolve(ctx); rerr != nil {
				return AddResult{}, ack, rerr
			}
		}
	}
	if err != nil {
		return AddResult{}, ack, exit.Wrap(err, what)
	}
	r := res[0]
	r.Ack = &ack
	var na *redisconn.NotAckedError
	if errors.As(d.Check(ack), &na) {
		story := fmt.Sprintf("entry %s was added on the primary but could be lost in a failover", r.ID)
		if r.Duplicate {
			story = fmt.Sprintf("the add is a duplicate of entry %s, which could be lost in a failover", r.ID)
		}
		return r, ack, &exit.Error{Code: na.Code(), What: what, Err: fmt.Errorf("%w: %s", na, story),
			Hint: "the same add is safe to repeat (it is recognised as a duplicate): repeat it once the replicas are back"}
	}
	return r, ack, nil
}

// emulatedAddDurable is emulatedAddRun with the wait in its round trip.
func (s *Streams) emulatedAddDurable(ctx context.Context, reqs []AddRequest, d redisconn.Durability) ([]AddResult, redisconn.Ack, error) {
	// The wait is for a write: know the defaults first, so that the first
	// call writes rather than asks for them.
	if err := s.loadDefaults(ctx); err != nil {
		return nil, redisconn.Ack{}, err
	}
	call, iids, err := s.emulatedAddCall(reqs, nil, s.Mode == ModeAuto)
	if err != nil {
		return nil, redisconn.Ack{}, s.autoRefusal(ctx, err)
	}
	ack, err := s.Conn.RunDurable(ctx, reqs[0].Stream, d, []*redisconn.Call{call})
	if err == nil {
		err = call.Cmd.Err()
	}
	if scriptUnavailable(err) {
		return nil, ack, s.autoRefusal(ctx, err)
	}
	if err != nil {
		return nil, ack, scriptErr(err)
	}
	res, err := parseAddReply(call.Cmd.Val(), iids, len(reqs))
	return res, ack, err
}

// nativeAddDurable is the guarded add (guard.go) with the wait in its
// round trip, or, for a user who may not run scripts, nativeTxDurable
// while the stream holds no emulated state.
func (s *Streams) nativeAddDurable(ctx context.Context, reqs []AddRequest, d redisconn.Durability) ([]AddResult, redisconn.Ack, error) {
	if !s.noScripts && GuardFits(reqs) {
		s.LoadNativeDefaults(ctx) // the wait is for a write: no refusal asking for them
		call, iids, err := s.GuardCall(reqs, "")
		if err != nil {
			return nil, redisconn.Ack{}, err
		}
		ack, err := s.Conn.RunDurable(ctx, reqs[0].Stream, d, []*redisconn.Call{call})
		if err == nil {
			err = call.Cmd.Err()
		}
		if err == nil {
			res, err := parseGuardReply(call.Cmd.Val(), iids, reqs)
			return res, ack, err
		}
		if !scriptsRefused(err) {
			return nil, ack, scriptErr(err)
		}
		s.noScripts = true
	}
	if err := s.checkNoState(ctx, reqs[0].Stream); err != nil {
		return nil, redisconn.Ack{}, err
	}
	return s.nativeTxDurable(ctx, reqs, d)
}

// nativeTxDurable is nativeTxRun on a connection of its own, with WAIT
// after the MULTI/EXEC on that connection. The stream's emulated state
// keys are WATCHed on it: the MULTI does not run if state appeared since
// checkNoState.
func (s *Streams) nativeTxDurable(ctx context.Context, reqs []AddRequest, d redisconn.Durability) ([]AddResult, redisconn.Ack, error) {
	var out []AddResult
	var ack redisconn.Ack
	var readErr error
	err := s.Conn.OnNode(ctx, reqs[0].Stream, d, func(ctx context.Context, cn *redis.Conn) error {
		var tx nativeTx
		if l, err := idmp.StateKeys(reqs[0].Stream, s.Conn.Cluster()); err == nil {
			if n, err := watchAbsent(ctx, cn, l); err != nil || n > 0 {
				if err == nil {
					err = errStateNeedsScripts(reqs[0].Stream)
				}
				return err
			}
		}
		_, _ = cn.TxPipelined(ctx, func(p redis.Pipeliner) error {
			tx = queueNativeAdds(ctx, p, reqs)
			return nil
		})
		first := tx.adds[0].Err()
		if errors.Is(first, redis.TxFailedErr) {
			return errStateNeedsScripts(reqs[0].Stream)
		}
		var reply redis.Error
		if first != nil && !errors.Is(first, redis.Nil) && !errors.As(first, &reply) {
			return first // the round trip failed
		}
		out, readErr = tx.read(reqs)
		if len(out) > 0 {
			ack = s.Conn.WaitOn(ctx, cn, d)
		}
		return first // a redirect makes Do go to the cluster
	})
	var reply redis.Error
	if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &reply) {
		return nil, ack, err
	}
	if readErr != nil {
		return out, ack, readErr
	}
	return out, ack, s.nativeOriginals(ctx, reqs[0].Stream, out)
}

// settle judges the results kept since the last wait by the wait of the
// round trip that followed them: it covers them all, since replicas
// acknowledge offsets of one replication stream in order. Acknowledged,
// they are emitted; otherwise they stand on the primary, unprinted, and the
// run stops (the progress record has them: a re-run resumes after them).
func (r *batchRun) settle(ack redisconn.Ack) error {
	if len(r.unacked) == 0 {
		return nil
	}
	var na *redisconn.NotAckedError
	if errors.As(r.spec.Durability.Check(ack), &na) {
		first, last := r.unacked[0].Line, r.unacked[len(r.unacked)-1].Line
		r.sum.Unacked += int64(len(r.unacked))
		r.unacked = nil
		return &exit.Error{Code: na.Code(), What: r.what(),
			Err:  fmt.Errorf("%w: lines %d-%d are committed on the primary but could be lost in a failover, so their results are not printed", na, first, last),
			Hint: fmt.Sprintf("run the same command again once the replicas are back: it resumes after line %d (if a failover lost those lines, their progress went with them, and they are sent again)", r.sum.LastLine)}
	}
	for i := range r.unacked {
		r.unacked[i].AddResult.Ack = &ack
	}
	// The emitting goroutine owns what it is handed: a fresh slice follows.
	r.emitResults(r.unacked)
	r.unacked = nil
	return nil
}

// cover waits for results no later round trip covered (a recovery after a
// network error found them committed, and nothing followed): a write of
// its own for the wait to follow, the progress record's retention set
// again, then settle.
func (r *batchRun) cover(ctx context.Context) error {
	if len(r.unacked) == 0 {
		return nil
	}
	ack, err := r.s.Conn.PipelinedDurable(ctx, r.spec.Template.Stream, r.spec.Durability, func(p redis.Pipeliner, ctx context.Context) {
		p.PExpire(ctx, r.key, r.spec.TTL)
	})
	if err != nil {
		return r.unavailable(exit.Wrap(err, r.what()))
	}
	return r.settle(ack)
}
