package stream

// The native path of xadd --batch (Redis 8.6+): one MULTI/EXEC a chunk.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

// runNative commits one chunk per MULTI/EXEC on a connection of its own:
// [XINFO, (XADD, XINFO)..., the progress record]. MULTI/EXEC cannot compare
// before it writes, so after a network error the connection that may still
// hold a stalled chunk is waited out (CLIENT LIST ID) before the record is
// read: after that no old chunk can run, and the record is the truth. Its
// committed chunks' replies are lost (MULTI cannot keep what it is about to
// learn): their lines are reported committed with the ID unknown.
func (r *batchRun) runNative(ctx context.Context) error {
	nc := &nativeBatchConn{r: r}
	defer nc.close()
	for {
		queue, err := r.fill(nil, r.sum.LastLine)
		if err != nil {
			return err
		}
		if len(queue) == 0 {
			return nil
		}
		for _, c := range queue {
			if err := r.sendNative(ctx, nc, c); err != nil {
				return err
			}
		}
	}
}

// nativeBatchConn is the one connection a native batch writes on, and its
// client ID (for the wait after a failure).
type nativeBatchConn struct {
	r  *batchRun
	cn *redis.Conn
	id int64
}

func (nc *nativeBatchConn) get(ctx context.Context) (*redis.Conn, error) {
	if nc.cn != nil {
		return nc.cn, nil
	}
	var node *redis.Client
	switch c := nc.r.s.Conn.Client().(type) {
	case *redis.ClusterClient:
		n, err := c.MasterForKey(ctx, nc.r.spec.Template.Stream)
		if err != nil {
			return nil, err
		}
		node = n
	case *redis.Client:
		node = c
	default:
		return nil, exit.New(exit.Internal, nc.r.what(), "client %T", c)
	}
	cn := node.Conn()
	id, err := cn.ClientID(ctx).Result()
	if err != nil {
		cn.Close()
		return nil, err
	}
	nc.cn, nc.id = cn, id
	return cn, nil
}

// lost gives up the connection after a failure and waits until the server
// no longer lists it, so that nothing it sent can still run (bounded; a
// user who may not run CLIENT LIST goes on without the wait).
func (nc *nativeBatchConn) lost(ctx context.Context) error {
	if nc.cn == nil {
		return nil
	}
	nc.cn.Close()
	nc.cn = nil
	deadline := time.Now().Add(10 * nc.r.s.Conn.Timeout)
	for time.Now().Before(deadline) {
		cctx, cancel := nc.r.s.Conn.Ctx(ctx)
		list, err := nc.r.s.Conn.Client().ClientList(cctx).Result()
		cancel()
		switch {
		case err != nil && exit.Classify(err) == exit.Permission:
			return nil
		case err != nil:
			return err
		case !strings.Contains(list, "id="+strconv.FormatInt(nc.id, 10)+" "):
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return exit.New(exit.Unavailable, nc.r.what(), "the connection that failed is still open on the server")
}

func (nc *nativeBatchConn) close() {
	if nc.cn != nil {
		nc.cn.Close()
	}
}

// sendNative commits one chunk, with recovery after network errors.
func (r *batchRun) sendNative(ctx context.Context, nc *nativeBatchConn, c *chunk) error {
	recovering := false
	op := func() error {
		if recovering {
			if err := nc.lost(ctx); err != nil {
				return err
			}
			p, _, err := r.readProgress(ctx)
			if err != nil {
				return err
			}
			switch {
			case p.Line >= c.to:
				res := make([]AddResult, len(c.reqs))
				for i := range res {
					res[i] = AddResult{IID: c.reqs[i].IID, Mode: ModeNative}
				}
				c.retried = true
				return r.confirm(c, res, true)
			case p.Line != c.from:
				return exit.New(exit.Data, r.what(), "the progress record stands at line %d, not %d", p.Line, c.from)
			}
			recovering, c.retried = false, true
		}
		cn, err := nc.get(ctx)
		if err != nil {
			recovering = true
			return err
		}
		res, err := r.nativeChunk(ctx, cn, c)
		if err != nil && redisconn.Retryable(err) {
			recovering = true
			return err
		}
		if cerr := r.confirm(c, res, false); cerr != nil {
			return cerr
		}
		if d := r.spec.Durability; d.On() {
			wctx, cancel := context.WithTimeout(ctx, r.s.Conn.Timeout+d.Timeout)
			ack := r.s.Conn.WaitOn(wctx, cn, d)
			cancel()
			if serr := r.settle(ack); serr != nil {
				return serr
			}
		}
		if err != nil {
			return r.lineError(c, len(res), err)
		}
		return nil
	}
	err := redisconn.WithRetriesWithin(ctx, r.spec.Retries, r.s.Conn.Timeout, op, r.spec.OnRetry)
	return r.unavailable(err)
}

// nativeChunk sends one chunk's MULTI/EXEC and reads its adds.
func (r *batchRun) nativeChunk(ctx context.Context, cn *redis.Conn, c *chunk) ([]AddResult, error) {
	stream := r.spec.Template.Stream
	cctx, cancel := r.s.bound(ctx)
	defer cancel()
	infos := make([]*redis.XInfoStreamCmd, len(c.reqs)+1)
	adds := make([]*redis.StringCmd, len(c.reqs))
	now := time.Now().UnixMilli() // an informational time: nothing is decided on it
	_, err := cn.TxPipelined(cctx, func(p redis.Pipeliner) error {
		infos[0] = p.XInfoStream(cctx, stream)
		for i, req := range c.reqs {
			adds[i] = p.XAdd(cctx, nativeXAddArgs(req))
			infos[i+1] = p.XInfoStream(cctx, stream)
		}
		h := []any{"line", c.to, "digest", c.digest, "digest-line", c.to, "batch", r.spec.ID, "pid", r.spec.Template.PID,
			"stream", stream, "mode", "native", "updated", now}
		if c.from == 0 {
			h = append(h, "started", now)
		}
		expires := now + r.spec.TTL.Milliseconds()
		h = append(h, "expires", expires, "run", r.run)
		p.HSet(cctx, r.key, h...)
		p.ZAdd(cctx, r.layout.Batches, redis.Z{Score: float64(expires), Member: r.key})
		return nil
	})
	var reply redis.Error
	if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &reply) {
		return nil, err
	}
	var prev int64
	if v, err := infos[0].Result(); err == nil {
		prev = v.IIDsDuplicates
	}
	out := make([]AddResult, 0, len(c.reqs))
	for i, req := range c.reqs {
		id, err := adds[i].Result()
		if errors.Is(err, redis.Nil) {
			return out, errNoStream()
		} else if err != nil {
			return out, err
		}
		after, err := infos[i+1].Result()
		if err != nil {
			return out, exit.New(exit.Internal, "XINFO STREAM after XADD", "%v", err)
		}
		out = append(out, AddResult{ID: id, IID: req.IID, Duplicate: after.IIDsDuplicates > prev, Mode: ModeNative})
		prev = after.IIDsDuplicates
	}
	return out, r.s.nativeOriginals(cctx, stream, out)
}
