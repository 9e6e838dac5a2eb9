package claim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/redis/go-redis/v9"
)

// ClaimPipeline queues claim transitions on any keys and runs them in one
// round trip: every step is still its own script, atomic on its own, in the
// order queued; the pipeline only saves round trips. It is for consumers
// that hold several messages at once (claim a polled batch together, record
// their outcomes together) and for a worker loop that records one message's
// outcome and claims the next in the same trip.
//
// By default a success reply carries only what a worker needs: Status,
// Token, Attempts and LeaseUntil (with Now and TTLms); FullRecords asks for
// every field, as Acquire and Complete return. Other outcomes always carry
// the whole record. A ClaimPipeline is not safe for concurrent use.
type ClaimPipeline struct {
	FullRecords bool
	steps       []pipedStep
}

type pipedStep struct {
	st     claimStep
	settle func(claimReply, error)
}

// AcquireCall is an acquire queued in a ClaimPipeline; Exec sets Result and
// Err (a usage error is set at once, and the step is not sent).
type AcquireCall struct {
	Result AcquireResult
	Err    error
}

// StepCall is a renew, complete or fail queued in a ClaimPipeline; Exec sets
// Record and Err as Renew, Complete and Fail return them (a lost claim is an
// *exit.Error with exit.Lost wrapping a *LostError).
type StepCall struct {
	Record ClaimRecord
	Err    error
}

// Len is the number of steps queued.
func (p *ClaimPipeline) Len() int { return len(p.steps) }

// Acquire queues an acquire (see Acquire).
func (p *ClaimPipeline) Acquire(params AcquireParams) *AcquireCall {
	call := &AcquireCall{}
	st, err := acquireStep(params)
	if err != nil {
		call.Err = err
		return call
	}
	p.queue(st, func(rep claimReply, err error) {
		if err == nil {
			call.Result, err = st.acquireResult(rep)
		}
		call.Err = err
	})
	return call
}

// Renew queues a renew (see Renew).
func (p *ClaimPipeline) Renew(key string, token int64, lease, ttl time.Duration) *StepCall {
	call := &StepCall{}
	st, err := renewStep(key, token, lease, ttl)
	if err != nil {
		call.Err = err
		return call
	}
	p.queue(st, func(rep claimReply, err error) {
		if err == nil {
			call.Record, err = rep.settle(st.what, token, "ok")
		}
		call.Err = err
	})
	return call
}

// Complete queues a complete (see Complete).
func (p *ClaimPipeline) Complete(params CompleteParams) *StepCall {
	call := &StepCall{}
	st, err := completeStep(params)
	if err != nil {
		call.Err = err
		return call
	}
	p.queue(st, func(rep claimReply, err error) {
		if err == nil {
			call.Record, err = st.completeResult(rep, params.Token)
		}
		call.Err = err
	})
	return call
}

// Fail queues a fail without release (see Fail; a release is not safe to
// send blindly again, so it is not offered here).
func (p *ClaimPipeline) Fail(key string, token int64, errText string, ttl time.Duration) *StepCall {
	call := &StepCall{}
	st, err := failStep(key, token, errText, ttl, false)
	if err != nil {
		call.Err = err
		return call
	}
	p.queue(st, func(rep claimReply, err error) {
		if err == nil {
			call.Record, err = rep.settle(st.what, token, "ok", "again")
		}
		call.Err = err
	})
	return call
}

func (p *ClaimPipeline) queue(st claimStep, settle func(claimReply, error)) {
	p.steps = append(p.steps, pipedStep{st: st, settle: settle})
}

// maxStepsPerCall bounds the steps one script call runs, so that a large
// pipeline does not hold the server for long at once.
const maxStepsPerCall = 256

// Exec sends the queued steps in one round trip (in a cluster, one per node
// holding some of the keys), sets every call's outcome, and empties the
// pipeline. It returns an error only when the round trip failed (network,
// timeout); every call then carries it too. Like Acquire, a failed round
// trip is not retried here: some steps may have run.
//
// On a single server, the steps go in calls of one script (claim_steps.lua,
// up to maxStepsPerCall steps each) that runs each step's own function at
// one server time: the script's fixed cost and TIME are paid once, not per
// step. In a cluster each step is its own script call on its key's node, as
// the keys of one call must share a slot.
func (p *ClaimPipeline) Exec(ctx context.Context, c redis.UniversalClient) error {
	steps := p.steps
	p.steps = nil
	if len(steps) == 0 {
		return nil
	}
	mode := replyMode(p.FullRecords)
	type scriptCall struct {
		script *redis.Script
		keys   []string
		args   []any
		steps  []pipedStep // the steps it runs, in order
		multi  bool
		cmd    *redis.Cmd
	}
	var calls []*scriptCall
	if _, single := c.(*redis.Client); single {
		for chunk := range slices.Chunk(steps, maxStepsPerCall) {
			call := &scriptCall{script: claimStepsScript(), steps: chunk, multi: true,
				keys: make([]string, 0, len(chunk)), args: []any{mode}}
			for _, s := range chunk {
				call.keys = append(call.keys, s.st.key)
				call.args = append(call.args, s.st.verb, len(s.st.args))
				call.args = append(call.args, s.st.args...)
			}
			calls = append(calls, call)
		}
	} else {
		for i := range steps {
			s := steps[i]
			calls = append(calls, &scriptCall{script: s.st.script, keys: []string{s.st.key},
				args: s.st.argv(p.FullRecords), steps: steps[i : i+1]})
		}
	}
	send := func(calls []*scriptCall, eval bool) error {
		cmds, err := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, call := range calls {
				if eval {
					call.cmd = call.script.Eval(ctx, pipe, call.keys, call.args...)
				} else {
					call.cmd = call.script.EvalSha(ctx, pipe, call.keys, call.args...)
				}
			}
			return nil
		})
		// A reply error (NOSCRIPT, WRONGTYPE...) belongs to its call; anything
		// else failed the round trip.
		var rerr redis.Error
		if err != nil && len(cmds) > 0 && (errors.As(err, &rerr) || errors.Is(err, redis.Nil)) {
			err = nil
		}
		return err
	}
	err := send(calls, false)
	if err == nil {
		// A server without the script (restarted, SCRIPT FLUSH) ran nothing
		// for those calls: send their source.
		var missing []*scriptCall
		for _, call := range calls {
			if redis.HasErrorPrefix(call.cmd.Err(), "NOSCRIPT") {
				missing = append(missing, call)
			}
		}
		if len(missing) > 0 {
			err = send(missing, true)
		}
	}
	for _, call := range calls {
		for j, s := range call.steps {
			switch {
			case err != nil:
				s.settle(claimReply{}, exit.Wrap(err, s.st.what))
			case !call.multi:
				s.settle(s.st.reply(call.cmd.Slice()))
			default:
				s.settle(s.st.reply(stepReply(call.cmd, j)))
			}
		}
	}
	return err
}

// stepReply is step j's reply in a claim_steps.lua call.
func stepReply(cmd *redis.Cmd, j int) ([]any, error) {
	all, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	if j >= len(all) {
		return nil, fmt.Errorf("%d replies, no reply for step %d", len(all), j+1)
	}
	v, ok := all[j].([]any)
	if !ok {
		return nil, fmt.Errorf("reply %v for step %d", all[j], j+1)
	}
	if len(v) == 2 && v[0] == "error" {
		msg, _ := v[1].(string)
		return nil, errors.New(msg)
	}
	return v, nil
}

// AcquireMany claims keys in one round trip (see ClaimPipeline): one result
// per params, in order. The error is the round trip's.
func AcquireMany(ctx context.Context, c redis.UniversalClient, params []AcquireParams) ([]*AcquireCall, error) {
	var p ClaimPipeline
	calls := make([]*AcquireCall, len(params))
	for i, prm := range params {
		calls[i] = p.Acquire(prm)
	}
	return calls, p.Exec(ctx, c)
}

// CompleteMany records COMPLETED for claims in one round trip (see
// ClaimPipeline): one result per params, in order. The error is the round
// trip's. Like Complete, safe to retry.
func CompleteMany(ctx context.Context, c redis.UniversalClient, params []CompleteParams) ([]*StepCall, error) {
	var p ClaimPipeline
	calls := make([]*StepCall, len(params))
	for i, prm := range params {
		calls[i] = p.Complete(prm)
	}
	return calls, p.Exec(ctx, c)
}
