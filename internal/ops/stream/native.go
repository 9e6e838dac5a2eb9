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

// Native IDMP (Redis 8.6+): go-redis sends the commands; idmpctl adds exact
// duplicate detection by reading iids-duplicates around each XADD in one
// MULTI/EXEC (Redis replies the same ID for a first add and a duplicate).

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

// nativeAddRun adds one run natively, through the upgrade guard (guard.go).
func (s *Streams) nativeAddRun(ctx context.Context, reqs []AddRequest) ([]AddResult, error) {
	return s.guardedAddRun(ctx, reqs)
}

// nativeTxRun sends [XINFO, (XADD, XINFO)...] for one stream in one
// MULTI/EXEC: an add is a duplicate iff iids-duplicates grew across it.
// It does not look at emulated state: the guard decides when it may run.
func (s *Streams) nativeTxRun(ctx context.Context, reqs []AddRequest) ([]AddResult, error) {
	stream := reqs[0].Stream
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var tx nativeTx
	var info *redis.StringCmd
	err := s.Conn.Do(func(c redis.UniversalClient) error {
		if _, cluster := c.(*redis.ClusterClient); cluster && s.Conn.WantsEviction() {
			// A cluster client's MULTI takes the commands of one slot,
			// and it took INFO's "memory" for a key of another: the add
			// failed with CROSSSLOT (on the retry after the MOVED that
			// found the cluster). Read the settings on their own, once.
			s.Conn.Eviction(ctx)
		}
		_, _ = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if s.Conn.WantsEviction() {
				info = p.Info(ctx, "memory") // read in this round trip (xadd's warning)
			}
			tx = queueNativeAdds(ctx, p, reqs)
			return nil
		})
		return tx.adds[0].Err() // MOVED reaches every command of a redirected MULTI
	})
	var reply redis.Error
	if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &reply) {
		return nil, err // the round trip failed; server replies are read below
	}
	s.Conn.NoteEvictionInfo(info)
	out, err := tx.read(reqs)
	if err != nil {
		return out, err
	}
	return out, s.nativeOriginals(ctx, stream, out)
}

// nativeTx is the commands of one native MULTI/EXEC of adds.
type nativeTx struct {
	infos []*redis.XInfoStreamCmd
	adds  []*redis.StringCmd
}

// queueNativeAdds queues [XINFO, (XADD, XINFO)...] for one stream's adds.
func queueNativeAdds(ctx context.Context, p redis.Pipeliner, reqs []AddRequest) nativeTx {
	tx := nativeTx{infos: make([]*redis.XInfoStreamCmd, len(reqs)+1), adds: make([]*redis.StringCmd, len(reqs))}
	tx.infos[0] = p.XInfoStream(ctx, reqs[0].Stream)
	for i, r := range reqs {
		tx.adds[i] = p.XAdd(ctx, nativeXAddArgs(r))
		tx.infos[i+1] = p.XInfoStream(ctx, reqs[0].Stream)
	}
	return tx
}

// read reads the adds' replies, in order, up to the first that failed.
func (tx nativeTx) read(reqs []AddRequest) ([]AddResult, error) {
	// The first XINFO fails when the stream does not exist yet: no duplicate
	// is possible then, so the count before is 0.
	var prev int64
	if v, err := tx.infos[0].Result(); err == nil {
		prev = v.IIDsDuplicates
	}
	out := make([]AddResult, 0, len(reqs))
	for i, r := range reqs {
		id, err := tx.adds[i].Result()
		if errors.Is(err, redis.Nil) {
			return out, errNoStream()
		} else if err != nil {
			return out, err
		}
		after, err := tx.infos[i+1].Result()
		if err != nil {
			return out, exit.New(exit.Internal, "XINFO STREAM after XADD", "%v", err)
		}
		out = append(out, AddResult{ID: id, IID: r.IID, Duplicate: after.IIDsDuplicates > prev, Mode: ModeNative})
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

// notFound gives XINFO's and XCFGSET's "ERR no such key" (kept verbatim) the
// not-found exit code.
func notFound(err error) error {
	if err != nil && strings.Contains(err.Error(), "no such key") {
		return &exit.Error{Code: exit.NotFound, Err: err}
	}
	return err
}

// errNoSuchKey is the emulated scripts' "stream missing" in the server's words.
func errNoSuchKey() error { return notFound(errors.New("ERR no such key")) }

func (s *Streams) nativeInfo(ctx context.Context, stream string) (Info, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	layout, lerr := idmp.StateKeys(stream, s.Conn.Cluster())
	var xi *redis.XInfoStreamCmd
	var tm *redis.TimeCmd
	var emu *redis.IntCmd
	_, _ = s.Conn.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
		xi = p.XInfoStream(ctx, stream)
		tm = p.Time(ctx)
		if lerr == nil {
			emu = p.Exists(ctx, layout.Meta)
		}
		return nil
	})
	v, err := xi.Result()
	if err != nil {
		return Info{}, notFound(err)
	}
	info := Info{
		Stream:          stream,
		Mode:            "native",
		Length:          v.Length,
		FirstID:         v.FirstEntry.ID,
		LastID:          v.LastEntry.ID,
		LastGeneratedID: v.LastGeneratedID,
		EntriesAdded:    v.EntriesAdded,
		IDMPDuration:    v.IDMPDuration,
		IDMPMaxSize:     v.IDMPMaxSize,
		PIDsTracked:     v.PIDsTracked,
		IIDsTracked:     v.IIDsTracked,
		IIDsAdded:       v.IIDsAdded,
		IIDsDuplicates:  v.IIDsDuplicates,
	}
	if t, err := tm.Result(); err == nil {
		info.ServerTimeMS = t.UnixMilli()
	}
	if emu != nil && emu.Val() > 0 {
		info.OtherMode = "emulated"
	}
	return info, nil
}

// nativeCfgSet reads the settings first and sends nothing when they would
// not change; otherwise MULTI [XINFO, XCFGSET, XINFO] gives exact before/after.
func (s *Streams) nativeCfgSet(ctx context.Context, stream string, duration, maxsize int64) (CfgResult, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	cur, err := s.Conn.Client().XInfoStream(ctx, stream).Result()
	if err != nil {
		return CfgResult{}, notFound(err)
	}
	before := idmp.Config{Duration: cur.IDMPDuration, MaxSize: cur.IDMPMaxSize}
	if target := withCfg(before, duration, maxsize); target == before {
		return CfgResult{Before: before, After: before}, nil
	}
	var xb, xa *redis.XInfoStreamCmd
	var set *redis.StatusCmd
	_, _ = s.Conn.Client().TxPipelined(ctx, func(p redis.Pipeliner) error {
		xb = p.XInfoStream(ctx, stream)
		// validateCfg ruled out both zero, which go-redis would send as a bare XCFGSET.
		set = p.XCfgSet(ctx, &redis.XCfgSetArgs{Stream: stream, Duration: duration, MaxSize: maxsize})
		xa = p.XInfoStream(ctx, stream)
		return nil
	})
	if err := set.Err(); err != nil {
		return CfgResult{}, notFound(err)
	}
	b, err1 := xb.Result()
	a, err2 := xa.Result()
	if err := errors.Join(err1, err2); err != nil {
		return CfgResult{}, exit.New(exit.Internal, "XINFO STREAM around XCFGSET", "%v", err)
	}
	res := CfgResult{
		Before: idmp.Config{Duration: b.IDMPDuration, MaxSize: b.IDMPMaxSize},
		After:  idmp.Config{Duration: a.IDMPDuration, MaxSize: a.IDMPMaxSize},
	}
	if res.Changed = res.Before != res.After; res.Changed {
		res.ClearedIIDs = b.IIDsTracked
	}
	return res, nil
}

func withCfg(c idmp.Config, duration, maxsize int64) idmp.Config {
	if duration > 0 {
		c.Duration = duration
	}
	if maxsize > 0 {
		c.MaxSize = maxsize
	}
	return c
}

// nativeClearScript changes IDMP-DURATION and sets it back, atomically and on
// the value current at that moment: Redis clears every pid's iids on a change.
var nativeClearScript = redisconn.NewLua[nativeClearArgs](redisconn.Int64Reply, idmp.LuaConstants(), nativeClearLua)

type nativeClearArgs struct {
	Stream string `lua:"STREAM,key"`
}

func (s *Streams) nativeClear(ctx context.Context, stream, pid string) (int64, error) {
	if pid != "" {
		e := exit.New(exit.Usage, "clear one producer", "native IDMP can only clear the iids of every producer at once")
		e.Hint = "omit the producer to clear all, or use --mode emulated for streams written in emulated mode"
		return 0, e
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	call := nativeClearScript.Call(&nativeClearArgs{Stream: stream})
	call.Run(ctx, s.Conn.Client())
	n, err := nativeClearScript.Reply(call)
	return n, notFound(err)
}

func (s *Streams) nativeDefaults(ctx context.Context) (int64, int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	d, err := redisconn.ServerIDMPDefaults(ctx, s.Conn.Client())
	if err != nil {
		return idmp.DefaultDuration, idmp.DefaultMaxSize, exit.Wrap(err, "CONFIG GET stream-idmp-*")
	}
	return d.Duration, d.MaxSize, nil
}
