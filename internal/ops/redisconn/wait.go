package redisconn

// Durable writes: WAIT (or WAITAOF) counts the writes of the connection
// that sends it, so the write and the WAIT share one connection to the
// key's primary. It bounds what a failover can lose; it is not consistency.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/redis/go-redis/v9"
)

// Durability is WAIT Replicas Timeout, or with AOF, WAITAOF 1 Replicas
// Timeout; the zero value asks nothing.
type Durability struct {
	Replicas int
	Timeout  time.Duration // > 0 when On: WAIT's 0 would block for ever
	AOF      bool
}

// On reports whether a write must wait at all.
func (d Durability) On() bool { return d.Replicas > 0 || d.AOF }

// Ack is what WAIT or WAITAOF replied.
type Ack struct {
	Replicas int   // replicas that acknowledged the write (WAITAOF: fsynced it to their AOF)
	LocalAOF bool  // WAITAOF: the primary fsynced it to its AOF
	Err      error // WAIT or WAITAOF itself failed (NOPERM, no WAITAOF): nothing is known
}

// Min is the weaker of two acknowledgements.
func (a Ack) Min(b Ack) Ack {
	return Ack{Replicas: min(a.Replicas, b.Replicas), LocalAOF: a.LocalAOF && b.LocalAOF, Err: cmp.Or(a.Err, b.Err)}
}

// Check is nil when a meets d, and a *NotAckedError otherwise.
func (d Durability) Check(a Ack) error {
	if !d.On() || (a.Err == nil && a.Replicas >= d.Replicas && (!d.AOF || a.LocalAOF)) {
		return nil
	}
	return &NotAckedError{Want: d, Got: a}
}

// NotAckedError is a write made but not acknowledged as asked: never
// retried (Retryable), the wait was the caller's bound.
type NotAckedError struct {
	Want Durability
	Got  Ack
}

func (e *NotAckedError) Error() string {
	d, a := e.Want, e.Got
	switch {
	case a.Err != nil && d.AOF:
		return fmt.Sprintf("WAITAOF failed: %v", a.Err)
	case a.Err != nil:
		return fmt.Sprintf("WAIT failed: %v", a.Err)
	case d.AOF:
		local := "fsynced"
		if !a.LocalAOF {
			local = "not fsynced"
		}
		return fmt.Sprintf("within %s the write was %s to the primary's AOF, and to the AOF of %d of %d replicas asked", d.Timeout, local, a.Replicas, d.Replicas)
	}
	return fmt.Sprintf("%d of %d replicas acknowledged the write within %s", a.Replicas, d.Replicas, d.Timeout)
}

func (e *NotAckedError) Unwrap() error { return e.Got.Err }

// Code is 69 when too few acknowledged, else the failed wait's own (no
// WAITAOF: 78).
func (e *NotAckedError) Code() int {
	if e.Got.Err == nil {
		return exit.Unavailable
	}
	if waitAOFUnsupported(e.Got.Err) {
		return exit.Config
	}
	return exit.Classify(e.Got.Err)
}

// waitAOFUnsupported reports the two refusals of WAITAOF that no retry
// changes: a server without it (before Redis 7.2) and one without AOF.
func waitAOFUnsupported(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "unknown command") || strings.Contains(msg, "appendonly is disabled")
}

// WaitCommand is the WAIT, or WAITAOF, that d asks for.
func WaitCommand(d Durability) []any {
	ms := d.Timeout.Milliseconds()
	if d.AOF {
		return []any{"waitaof", 1, d.Replicas, ms}
	}
	return []any{"wait", d.Replicas, ms}
}

// AckOf reads the reply to WaitCommand(d).
func AckOf(d Durability, v any, err error) Ack {
	if err != nil {
		return Ack{Err: err}
	}
	if d.AOF {
		if a, ok := v.([]any); ok && len(a) == 2 {
			local, ok1 := a[0].(int64)
			n, ok2 := a[1].(int64)
			if ok1 && ok2 {
				return Ack{LocalAOF: local >= 1, Replicas: int(n)}
			}
		}
		return Ack{Err: fmt.Errorf("unexpected WAITAOF reply %v", v)}
	}
	n, ok := v.(int64)
	if !ok {
		return Ack{Err: fmt.Errorf("unexpected WAIT reply %v", v)}
	}
	return Ack{Replicas: int(n)}
}

// CheckDurable refuses, once per primary and kind of wait, a wait the server would
// refuse only after the write: WAIT or WAITAOF denied by ACL (NOPERM),
// WAITAOF on a server before Redis 7.2 or without appendonly. The probe
// asks for no replica, WAIT 0 1 or WAITAOF 1 0 1: answered at once (the
// primary's fsync of nothing written), or refused.
func (c *Conn) CheckDurable(ctx context.Context, key string, d Durability) error {
	if !d.On() {
		return nil
	}
	probe := WaitCommand(Durability{Timeout: time.Millisecond, AOF: d.AOF})
	ctx, cancel := c.Ctx(ctx)
	defer cancel()
	err := c.Do(func(uc redis.UniversalClient) error {
		node, err := nodeFor(ctx, uc, key)
		if err != nil {
			return err
		}
		// A node's ACL is its own: each primary is asked once.
		done := waitProbe{node.Options().Addr, d.AOF}
		c.mu.Lock()
		ok := c.waitOK[done]
		c.mu.Unlock()
		if ok {
			return nil
		}
		if err := node.Do(ctx, probe...).Err(); err != nil {
			return err
		}
		c.mu.Lock()
		c.waitOK[done] = true
		c.mu.Unlock()
		return nil
	})
	switch {
	case err != nil && d.AOF && waitAOFUnsupported(err):
		e := exit.New(exit.Config, "--wait-aof", "the server cannot WAITAOF: %v", err)
		e.Hint = "WAITAOF came with Redis 7.2 and needs appendonly yes on the primary; without --wait-aof, --wait-replicas waits with WAIT"
		return e
	case err != nil && d.AOF:
		return exit.Wrap(err, "--wait-aof: WAITAOF")
	case err != nil:
		return exit.Wrap(err, "--wait-replicas: WAIT")
	}
	return nil
}

// waitProbe is a primary and a kind of wait CheckDurable asked it about.
type waitProbe struct {
	addr string
	aof  bool
}

// nodeFor is key's primary (a cluster pipeline would send the keyless WAIT
// to any node, or refuse it by its request policy).
func nodeFor(ctx context.Context, uc redis.UniversalClient, key string) (*redis.Client, error) {
	switch cl := uc.(type) {
	case *redis.Client:
		return cl, nil
	case *redis.ClusterClient:
		return cl.MasterForKey(ctx, key)
	}
	return nil, exit.New(exit.Internal, "", "WAIT through a %T", uc)
}

// PipelinedDurable sends fn's writes to key's slot, then d's wait, in one
// round trip on key's primary, bounded by the timeout plus d.Timeout. Like
// Pipelined, it returns only a round trip's failure; check the Ack with
// d.Check. fn may run again when a plain client meets a cluster.
func (c *Conn) PipelinedDurable(ctx context.Context, key string, d Durability, fn func(p redis.Pipeliner, ctx context.Context)) (Ack, error) {
	if err := c.CheckDurable(ctx, key, d); err != nil {
		return Ack{}, err
	}
	bound := c.Timeout + d.Timeout
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var ack Ack
	err := c.Do(func(uc redis.UniversalClient) error {
		var target redis.Cmdable = uc // without a wait, a cluster routes each command
		if d.On() {
			node, err := nodeFor(ctx, uc, key)
			if err != nil {
				return err
			}
			// The pipeline's read deadline is the client's read timeout:
			// the wait must fit in it.
			target = node.WithTimeout(bound)
		}
		var wait *redis.Cmd
		cmds, err := target.Pipelined(ctx, func(p redis.Pipeliner) error {
			fn(p, ctx)
			if d.On() {
				wait = p.Do(ctx, WaitCommand(d)...)
			}
			return nil
		})
		for _, cmd := range cmds {
			if e := cmd.Err(); e != nil && clusterReply(e) {
				return e // nothing ran on this node: Do goes to the cluster
			}
		}
		if wait != nil {
			ack = AckOf(d, wait.Val(), wait.Err())
		}
		if err == nil || errors.Is(err, redis.Nil) {
			return nil
		}
		// A command's own error reply stays on it; an error reply no
		// command carries is the connection's (a refused AUTH).
		failed := func(cmd redis.Cmder) bool { return cmd.Err() != nil }
		if errors.As(err, new(redis.Error)) && slices.ContainsFunc(cmds, failed) {
			return nil
		}
		return err
	})
	return ack, err
}

// OnNode runs fn on its own connection to key's primary, bounded to allow
// for d's wait (after CheckDurable): for writes that share a connection but
// not a pipeline with the WAIT (a MULTI/EXEC; see WaitOn). fn returns its
// first command's error, so that a plain client switches as in Do.
func (c *Conn) OnNode(ctx context.Context, key string, d Durability, fn func(ctx context.Context, cn *redis.Conn) error) error {
	if err := c.CheckDurable(ctx, key, d); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout+d.Timeout)
	defer cancel()
	return c.Do(func(uc redis.UniversalClient) error {
		node, err := nodeFor(ctx, uc, key)
		if err != nil {
			return err
		}
		cn := node.Conn()
		defer cn.Close()
		return fn(ctx, cn)
	})
}

// Retire keeps cn out of the pool for good: a connection left inside a
// MULTI that could not be ended (EXEC and DISCARD renamed away), which
// would queue its next user's commands. A command whose deadline has
// passed fails before it is written, and go-redis closes a connection
// whose command failed other than by a server's reply.
func Retire(ctx context.Context, cn *redis.Conn) {
	ctx, cancel := context.WithDeadline(ctx, time.Unix(1, 0))
	defer cancel()
	_ = cn.Ping(ctx).Err()
}

// WaitOn sends d's WAIT or WAITAOF on cn, the connection that made the
// writes, in a round trip of its own (in OnNode). ctx must allow for
// d.Timeout.
func (c *Conn) WaitOn(ctx context.Context, cn *redis.Conn, d Durability) Ack {
	cmd := cn.Do(ctx, WaitCommand(d)...)
	return AckOf(d, cmd.Val(), cmd.Err())
}
