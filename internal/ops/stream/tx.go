package stream

// A native single add without a script: MULTI [XINFO, XADD, XINFO] EXEC (a
// duplicate iff iids-duplicates grew). A MULTI cannot look first, so the
// upgrade guard WATCHes the emulated state keys, checked absent.

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

func nativeXAddArgs(r AddRequest) *redis.XAddArgs {
	// Validate has run: a pid plus exactly one of IID/Auto, so go-redis cannot
	// fall back to a plain XADD.
	return &redis.XAddArgs{
		Stream:         r.Stream,
		NoMkStream:     r.NoMkStream,
		MaxLen:         r.MaxLen,
		MinID:          r.MinID,
		Approx:         r.Approx,
		Limit:          r.Limit,
		Mode:           r.Deletion,
		Values:         r.Fields,
		ProducerID:     r.PID,
		IdempotentID:   r.IID,
		IdempotentAuto: r.Auto,
	}
}

// maxGuardAborts bounds the EXECs of one run that a write to the
// stream's emulated state keys aborts.
const maxGuardAborts = 20

// errStateHeld is tx's refusal: the stream holds emulated IDMP state, and
// nothing was written.
var errStateHeld = errors.New("the stream holds emulated IDMP state")

// tx adds one run by MULTI/EXEC on a connection of its own to the stream's
// primary: first, in one round trip, MULTI and EXEC are proved allowed,
// and the stream's emulated state keys WATCHed and checked absent (and the
// eviction settings read, for xadd's warning); then MULTI [XINFO, (XADD,
// XINFO)...] EXEC, which does not run if state appeared meanwhile; with
// d, WAIT (or WAITAOF) after it on the same connection. While the stream
// holds emulated state it is errStateHeld. No script runs: the cheapest
// single add there is (the server runs a script's first lines cold, each
// time, at a cost of several commands: docs/speed.md). first, when set,
// adds commands to the check's round trip and says, once its replies are
// read, whether tx goes on (nil) or not (its error).
func (s native) tx(ctx context.Context, reqs []AddRequest, o AddOptions, first func(redis.Pipeliner) func() error) ([]AddResult, redisconn.Ack, error) {
	d := o.Durability
	stream := reqs[0].Stream
	for attempt := 0; ; attempt++ {
		var out []AddResult
		var ack redisconn.Ack
		var readErr error
		aborted := false
		err := s.Conn.OnNode(ctx, stream, d, func(ctx context.Context, cn *redis.Conn) error {
			// Per try: a plain client that reached a cluster node is now a
			// cluster client. lerr: no state key can exist for the stream.
			l, lerr := idmp.StateKeys(stream, s.Conn.Cluster())
			var multi, probed, watch, held *redis.Cmd
			note := func() {}
			goOn := func() error { return nil }
			_, err := cn.Pipelined(ctx, func(p redis.Pipeliner) error {
				if first != nil {
					goOn = first(p)
				}
				note = s.Conn.QueueEviction(ctx, p)
				// A refused MULTI would leave the adds to run one by one,
				// unwatched, after the refusal: MULTI and EXEC are proved
				// allowed first, by an empty transaction (before the
				// WATCH, which EXEC undoes; a refused EXEC discards it).
				multi, probed = p.Do(ctx, "MULTI"), p.Do(ctx, "EXEC")
				if lerr == nil {
					watch = p.Do(ctx, "WATCH", l.Meta, l.PIDs)
					// Untyped: queued after an EXEC renamed away, it replies QUEUED.
					held = p.Do(ctx, "EXISTS", l.Meta, l.PIDs)
				}
				return nil
			})
			note()
			if multi.Err() == nil && probed.Err() != nil && !redis.HasErrorPrefix(probed.Err(), "EXECABORT") {
				// An EXEC renamed away, unlike a refused one, leaves the MULTI
				// open (the WATCH and EXISTS queued in it): it is left before
				// the connection goes back to the pool, or the connection is
				// closed (DISCARD renamed or refused too): nothing may use it.
				if e := cn.Do(ctx, "DISCARD").Err(); e != nil && !redis.HasErrorPrefix(e, "ERR DISCARD without MULTI") {
					redisconn.Retire(ctx, cn)
				}
			}
			if err := goOn(); err != nil {
				return err
			}
			if err := cmp.Or(multi.Err(), probed.Err()); err != nil {
				return txRefusal(err)
			}
			if held != nil {
				n, err := held.Int64()
				if err := cmp.Or(watch.Err(), err); err != nil {
					return txRefusal(err) // the check failed (NOPERM, MOVED), or the round trip did
				}
				if n > 0 {
					if cn.Do(ctx, "UNWATCH").Err() != nil {
						// Still watching: a later EXEC on it would fail.
						redisconn.Retire(ctx, cn)
					}
					return errStateHeld
				}
			} else if err != nil && !errors.As(err, new(redis.Error)) {
				return err
			}
			if o.check {
				return checkQueued(ctx, cn, reqs)
			}
			var t nativeTx
			cmds, _ := cn.TxPipelined(ctx, func(p redis.Pipeliner) error {
				t = queueNativeAdds(ctx, p, reqs, !o.NoOutcome)
				return nil
			})
			first := t.adds[0].Err()
			if errors.Is(first, redis.TxFailedErr) {
				aborted = true
				return nil
			}
			if redis.HasErrorPrefix(first, "EXECABORT") {
				// The command the server would not queue says why (NOPERM).
				for _, c := range cmds {
					if e := c.Err(); !redis.HasErrorPrefix(e, "EXECABORT") && e != nil {
						return e
					}
				}
			}
			if first != nil && !errors.Is(first, redis.Nil) && !errors.As(first, new(redis.Error)) {
				return first // the round trip failed
			}
			// The adds' own errors (WRONGTYPE, NOMKSTREAM's nil) are read.
			out, readErr = t.read(reqs)
			if len(out) > 0 && d.On() {
				ack = s.Conn.WaitOn(ctx, cn, d)
			}
			return nil
		})
		switch {
		case aborted && attempt < maxGuardAborts:
			continue
		case aborted:
			return nil, ack, exit.New(exit.Busy, "", "the stream's emulated IDMP state keys kept changing between the check and the add (%d tries)", attempt+1)
		case err != nil:
			return nil, ack, err
		case readErr != nil:
			return out, ack, readErr
		}
		return out, ack, s.nativeOriginals(ctx, stream, out)
	}
}

// checkQueued queues the adds in a MULTI whose EXEC the server refuses: a
// command that cannot be queued (ECHO without its argument) is queued
// last, so the transaction runs nothing (EXECABORT), and the server has
// refused at queueing what it would refuse to run (ACL, a command renamed
// away). The stream's XINFO, which the add runs too, goes before the MULTI:
// queueing does not tell a key of another type (CheckAdd).
func checkQueued(ctx context.Context, cn *redis.Conn, reqs []AddRequest) error {
	var info, exec *redis.Cmd
	var adds []*redis.StringCmd
	_, _ = cn.Pipelined(ctx, func(p redis.Pipeliner) error {
		info = p.Do(ctx, "XINFO", "STREAM", reqs[0].Stream)
		p.Do(ctx, "MULTI")
		for _, r := range reqs {
			adds = append(adds, p.XAdd(ctx, nativeXAddArgs(r)))
		}
		p.Do(ctx, "ECHO")
		exec = p.Do(ctx, "EXEC")
		return nil
	})
	if err := info.Err(); err != nil && !strings.Contains(err.Error(), "no such key") {
		return txRefusal(err)
	}
	for _, c := range adds {
		if err := c.Err(); err != nil {
			return txRefusal(err)
		}
	}
	if err := exec.Err(); !redis.HasErrorPrefix(err, "EXECABORT") {
		return exit.New(exit.Internal, "", "the check's transaction was not refused as it must be: %v", err)
	}
	return nil
}

// nativeTx is the commands of one native MULTI/EXEC of adds.
type nativeTx struct {
	infos []*redis.XInfoStreamCmd
	adds  []*redis.StringCmd
}

// queueNativeAdds queues [XINFO, (XADD, XINFO)...] for one stream's adds,
// or the XADDs alone without outcomes. The first XINFO fails for a stream
// that does not exist yet (which has no duplicate to count): asked in the
// transaction all the same, as another client may make the stream, and
// count duplicates in it, before the transaction runs.
func queueNativeAdds(ctx context.Context, p redis.Pipeliner, reqs []AddRequest, outcomes bool) nativeTx {
	tx := nativeTx{adds: make([]*redis.StringCmd, len(reqs))}
	if outcomes {
		tx.infos = append(tx.infos, p.XInfoStream(ctx, reqs[0].Stream))
	}
	for i, r := range reqs {
		tx.adds[i] = p.XAdd(ctx, nativeXAddArgs(r))
		if outcomes {
			tx.infos = append(tx.infos, p.XInfoStream(ctx, reqs[0].Stream))
		}
	}
	return tx
}

// read reads the adds' replies, in order, up to the first that failed.
func (tx nativeTx) read(reqs []AddRequest) ([]AddResult, error) {
	// The first XINFO fails when the stream does not exist yet: no duplicate
	// is possible then, so the count before is 0.
	var prev int64
	if tx.infos != nil {
		if v, err := tx.infos[0].Result(); err == nil {
			prev = v.IIDsDuplicates
		}
	}
	out := make([]AddResult, 0, len(reqs))
	for i, r := range reqs {
		id, err := tx.adds[i].Result()
		if errors.Is(err, redis.Nil) {
			return out, errNoStream()
		} else if err != nil {
			return out, err
		}
		if tx.infos == nil {
			out = append(out, AddResult{ID: id, IID: r.IID})
			continue
		}
		after, err := tx.infos[i+1].Result()
		if err != nil {
			return out, exit.New(exit.Internal, "XINFO STREAM after XADD", "%v", err)
		}
		out = append(out, AddResult{ID: id, IID: r.IID, Duplicate: after.IIDsDuplicates > prev})
		prev = after.IIDsDuplicates
	}
	return out, nil
}

// nativeOriginals fills OriginalExists of the duplicates with XRANGE id id.
func (s *Streams) nativeOriginals(ctx context.Context, stream string, res []AddResult) error {
	ranges := make(map[int]*redis.XMessageSliceCmd)
	_, err := s.Conn.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range res {
			if r.Duplicate {
				ranges[i] = p.XRangeN(ctx, stream, r.ID, r.ID, 1)
			}
		}
		return nil
	})
	if len(ranges) == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	for i, c := range ranges {
		res[i].OriginalExists = len(c.Val()) > 0
	}
	return nil
}

// txRefusal is err, or where err is the server's unknown command for one
// of the single add's transaction (renamed away), a configuration error:
// nothing was written.
func txRefusal(err error) error {
	if !exit.Renamed(err.Error(), "multi", "exec", "watch", "exists") {
		return err
	}
	e := exit.New(exit.Config, "", "this server has a command of the single add's transaction renamed away (%v): nothing was written", err)
	e.Hint = "add through a script, which needs no MULTI, EXEC or WATCH (xadd --batch FILE, or idmpctl exec), or give the server back the command (rename-command)"
	return e
}

// errStateNeedsScripts refuses an add to a stream that holds emulated
// state, for a user who may not run the guard script.
func errStateNeedsScripts(stream string) error {
	e := exit.New(exit.Config, "", "stream %s holds emulated IDMP state, and this user may not run the script that keeps its iids from being added again natively: nothing was written", strconv.Quote(stream))
	// No "wait until its DURATION has passed": the state's keys have no
	// TTL and stay past it, until a script (migrate) removes them.
	e.Hint = "migrate it first with a user who may run scripts (idmpctl migrate " + strconv.Quote(stream) + ": once its DURATION has passed, that only removes it), or grant this user EVALSHA and EVAL"
	return e
}
