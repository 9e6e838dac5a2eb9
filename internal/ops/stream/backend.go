package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

// backend is how one mode does idempotent production, picked once by Open:
// native (native.go, tx.go) or emulated (emulated.go). Without scripts a
// user adds natively one at a time (unless the stream holds emulated
// state); batches and exec's runs are refused (NOPERM 77, renamed 78).
type backend interface {
	mode() Mode
	// fits refuses, before anything is sent, a request this mode cannot
	// send (an emulated add with more fields than XADD from Lua takes).
	fits(r *AddRequest) error
	// iidOf is the iid a result of r names ("" for native IDMPAUTO).
	iidOf(r *AddRequest) string
	// add adds one run (sameRun, validated) and waits as o asks (judge).
	add(ctx context.Context, reqs []AddRequest, o AddOptions) ([]AddResult, error)
	// addCall is the call that adds one run and moves a batch chunk's
	// record (cp), replying as want says.
	addCall(reqs []AddRequest, cp *chunkProgress, want reply) (call *redisconn.Call, parse replyParser, err error)
	// ready learns, once, what calls made without a round trip of their
	// own must carry (emulated: the server-level defaults).
	ready(ctx context.Context) error
	info(ctx context.Context, stream string) (Info, error)
	cfgSet(ctx context.Context, stream string, duration, maxsize int64) (CfgResult, error)
	clear(ctx context.Context, stream, pid string) (int64, error)
	// clearable refuses, before anything is sent, a clear this mode cannot do.
	clearable(pid string) error
	defaults(ctx context.Context) (duration, maxsize int64, err error)
	// check refuses what an add of r would be refused for, adding nothing
	// (CheckAdd; after ready).
	check(ctx context.Context, r AddRequest) error
}

// replyParser reads the reply of an add call into its results.
type replyParser func(v any) ([]AddResult, error)

// reply is what an add call's reply is to tell.
type reply int

const (
	replyIDs      reply = iota // the entries' IDs (exec)
	replyOutcomes              // each add new or a duplicate
	replyCheck                 // nothing added: {'K'}, or the refusal the adds would get (CheckAdd)
)

// Open prepares production in the requested mode: auto and native settle
// once the server says what it is, at the first use if not known yet (a
// single add asks within its first round trip, no extra one: unsettled).
// Native on a server without IDMP is a usage error.
func Open(ctx context.Context, c *redisconn.Conn, requested Mode) (*Streams, error) {
	s := &Streams{Conn: c}
	if requested == ModeEmulated {
		s.be = emulated{s}
		return s, nil
	}
	s.be = unsettled{s, requested}
	if _, known := c.KnownCapabilities(); known {
		return s, s.Settle(ctx)
	}
	return s, nil
}

// Settle settles the mode now, where the first use has not yet.
func (s *Streams) Settle(ctx context.Context) error {
	u, ok := s.be.(unsettled)
	if !ok {
		return nil
	}
	caps, err := s.Conn.Capabilities(ctx)
	switch {
	case err != nil:
		return err
	case u.want == ModeAuto && !caps.NativeIDMP:
		s.be = emulated{s}
	case !caps.NativeIDMP:
		what := strings.TrimSpace(caps.Product + " " + caps.Version)
		e := exit.New(exit.Usage, u.want.String()+" IDMP", "%s has no XCFGSET (native IDMP needs Redis 8.6 or later)", what)
		e.Hint = "use --mode emulated (or auto) to emulate IDMP with server-side Lua"
		return e
	default:
		s.be = native{s}
	}
	return nil
}

// unsettled is the backend before the mode is known: each use settles it,
// a single add by a HELLO in its tx's check round trip.
type unsettled struct {
	*Streams
	want Mode
}

// errNotNative stops a single add whose HELLO settled a mode that is not
// native, or said the server is a cluster node (the client, switched to a
// cluster client, closed the connection of the check): it goes on in the
// mode settled, on the stream's primary.
var errNotNative = errors.New("the mode settled is not native, or the server is a cluster node")

func (u unsettled) mode() Mode               { return u.want }
func (unsettled) fits(*AddRequest) error     { return nil } // the emulated script refuses too
func (unsettled) iidOf(r *AddRequest) string { return r.IID }
func (u unsettled) ready(ctx context.Context) error {
	if err := u.Settle(ctx); err != nil {
		return err
	}
	return u.be.ready(ctx)
}

func (u unsettled) addCall([]AddRequest, *chunkProgress, reply) (*redisconn.Call, replyParser, error) {
	return nil, nil, exit.New(exit.Internal, "", "a script call before the mode was settled (Settle)")
}

func (u unsettled) add(ctx context.Context, reqs []AddRequest, o AddOptions) ([]AddResult, error) {
	if len(reqs) == 1 && len(reqs[0].Fields) <= idmp.MaxEmulatedFieldArgs {
		res, ack, err := native{u.Streams}.tx(ctx, reqs, o, func(p redis.Pipeliner) func() error {
			learned, cluster := u.Conn.QueueHello(ctx, p), u.Conn.Cluster()
			return func() error {
				if err := learned(); err != nil {
					return err
				}
				if err := u.Settle(ctx); err != nil {
					return err
				}
				if u.Mode() != ModeNative || u.Conn.Cluster() != cluster {
					return errNotNative
				}
				return nil
			}
		})
		if !errors.Is(err, errNotNative) && !errors.Is(err, errStateHeld) {
			return judge(res, err, o.Durability, ack)
		}
	}
	if err := u.Settle(ctx); err != nil {
		return nil, err
	}
	return u.be.add(ctx, reqs, o)
}

func (u unsettled) info(ctx context.Context, stream string) (Info, error) {
	if err := u.Settle(ctx); err != nil {
		return Info{}, err
	}
	return u.be.info(ctx, stream)
}

func (u unsettled) cfgSet(ctx context.Context, stream string, duration, maxsize int64) (CfgResult, error) {
	if err := u.Settle(ctx); err != nil {
		return CfgResult{}, err
	}
	return u.be.cfgSet(ctx, stream, duration, maxsize)
}

func (u unsettled) clear(ctx context.Context, stream, pid string) (int64, error) {
	if err := u.Settle(ctx); err != nil {
		return 0, err
	}
	return u.be.clear(ctx, stream, pid)
}

func (u unsettled) clearable(string) error { return nil } // Settle comes first (Info)

func (u unsettled) check(ctx context.Context, r AddRequest) error {
	if err := u.Settle(ctx); err != nil {
		return err
	}
	return u.be.check(ctx, r)
}

func (u unsettled) defaults(ctx context.Context) (int64, int64, error) {
	if err := u.Settle(ctx); err != nil {
		return 0, 0, err
	}
	return u.be.defaults(ctx)
}

// runCall adds a run by one script call, with its wait in the round trip.
func (s *Streams) runCall(ctx context.Context, reqs []AddRequest, o AddOptions) ([]AddResult, error) {
	d := o.Durability
	var parse replyParser
	call, ack, err := s.runKeyed(ctx, redisconn.RunOpts{Key: reqs[0].Stream, Durability: d, Eviction: s.Conn.WatchEviction}, func() (*redisconn.Call, error) {
		want := replyOutcomes
		if o.NoOutcome {
			want = replyIDs
		}
		call, p, err := s.be.addCall(reqs, nil, want)
		parse = p
		return call, err
	})
	if err != nil {
		return nil, scriptErr(err)
	}
	res, err := parse(call.Cmd.Val())
	return judge(res, err, d, ack)
}

// runKeyed runs the call mk makes, made again once when a redirect (which
// Run follows) taught that the server is a cluster node: the keys depend
// on it. The call is nil when mk failed; err is also the call's own error.
func (s *Streams) runKeyed(ctx context.Context, o redisconn.RunOpts, mk func() (*redisconn.Call, error)) (*redisconn.Call, redisconn.Ack, error) {
	for try := 0; ; try++ {
		cluster := s.Conn.Cluster()
		call, err := mk()
		if err != nil {
			return nil, redisconn.Ack{}, err
		}
		ack, err := s.Conn.Run(ctx, o, call)
		if err == nil {
			err = call.Cmd.Err()
		}
		if err == nil || cluster || !s.Conn.Cluster() || try == 1 {
			return call, ack, err
		}
	}
}

// judge gives durable adds their acknowledgement, and an error when not
// acknowledged: the adds stand on the primary, safe to repeat later.
func judge(res []AddResult, err error, d redisconn.Durability, ack redisconn.Ack) ([]AddResult, error) {
	if !d.On() || len(res) == 0 {
		return res, err
	}
	for i := range res {
		res[i].Ack = &ack
	}
	var na *redisconn.NotAckedError
	if err != nil || !errors.As(d.Check(ack), &na) {
		return res, err
	}
	story := fmt.Sprintf("%d adds were made on the primary but could be lost in a failover", len(res))
	switch r := res[0]; {
	case len(res) > 1:
	case r.Duplicate:
		story = fmt.Sprintf("the add is a duplicate of entry %s, which could be lost in a failover", r.ID)
	default:
		story = fmt.Sprintf("entry %s was added on the primary but could be lost in a failover", r.ID)
	}
	return res, &exit.Error{Code: na.Code(), Err: fmt.Errorf("%w: %s", na, story),
		Hint: "the same add is safe to repeat (it is recognised as a duplicate): repeat it once the replicas are back"}
}
