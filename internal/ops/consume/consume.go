// Package consume runs a command for each entry of a stream's consumer
// group, at most once per entry and group (docs/consume.md). Each entry runs
// under a claim (internal/ops/claim) whose key is in the stream's cluster
// slot, supervised as claim run's command is (internal/ops/claimrun), and
// is recorded COMPLETED and acknowledged in one script. A failure is retried
// after a delay, up to a number of attempts, and then added to a
// dead-letter stream with IDMP (internal/ops/stream) and acknowledged. The
// entries of a consumer that died are reclaimed (XAUTOCLAIM). It never
// prints: each entry's outcome goes to a callback, and warnings are words.
package consume

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/claimrun"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/redis/go-redis/v9"
)

// Params are a run's inputs.
type Params struct {
	Stream, Group, Consumer string
	Create                  bool // make a missing group at the stream's start (0), and the stream
	Workers                 int  // handlers at once
	Lease                   time.Duration
	MaxAttempts             int64
	RetryDelay              time.Duration
	DeadLetter              string // "": an entry out of attempts stays pending
	UntilEmpty              bool
	Count                   int64         // stop after this many entries (0: no limit)
	Block                   time.Duration // how long reads wait for new entries
	Command                 []string
	Output                  io.Writer // the handlers' stdout and stderr
	Retries                 int       // of the dead-letter add, after a network error
}

// Validate checks the inputs without a server.
func (p Params) Validate() error {
	switch {
	case p.Stream == "":
		return exit.Usagef("the stream name must not be empty")
	case p.Group == "":
		return exit.Usagef("--group is required and must not be empty")
	case p.MaxAttempts < 1:
		return exit.Usagef("--max-attempts %d: give 1 or more", p.MaxAttempts)
	case p.Workers < 1:
		return exit.Usagef("--workers %d: give 1 or more", p.Workers)
	case p.RetryDelay < 0:
		return exit.Usagef("--retry-delay %s: must not be negative", p.RetryDelay)
	case p.Count < 0:
		return exit.Usagef("--count %d: must not be negative (0: no limit)", p.Count)
	case p.Block < time.Millisecond:
		return exit.Usagef("--block %s: give 1ms or more", p.Block)
	case p.Lease > claim.DefaultTTL:
		return exit.Usagef("--lease %s: longer than the claims' retention (%s)", p.Lease, claim.DefaultTTL)
	case p.DeadLetter == p.Stream:
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--dead-letter %q is the stream itself: its failures would be consumed again", p.DeadLetter),
			Hint: "name a stream of its own, such as " + strconv.Quote(p.Stream+"-dead")}
	case len(p.Command) == 0:
		return &exit.Error{Code: exit.Usage, Err: errors.New("consume needs STREAM --group GROUP -- COMMAND [ARGS...]"),
			Hint: "put the handler after --, e.g. idmpctl consume orders --group billing -- ./bill.sh"}
	}
	return claimrun.CheckLease(p.Lease)
}

// ClaimKey is the claim key of entry id of group, base the stream's
// idmp.SlotBase: "{orders}:consume:billing:1700000000000-0" (an ID holds no
// ':', so the last one ends the group's name).
func ClaimKey(base, group, id string) string { return base + ":consume:" + group + ":" + id }

// metaKey is the hash of the stream's groups' dead-letter streams (group ->
// stream), which consume --dead-letter writes and inspect reads.
func metaKey(base string) string { return base + ":consume" }

//go:embed lua/consume_prepare.lua
var prepareLua string

// prepareScript checks, before consume writes or runs anything, that the
// user may run what consume does on the stream, and reads its type.
var prepareScript = redisconn.NewLua[prepareArgs](redisconn.CommandReply, prepareLua)

type prepareArgs struct {
	Stream   string `lua:"stream,key"`
	Group    string `lua:"group"`
	Consumer string `lua:"consumer"`
	Claim    string `lua:"claim"`  // a claim key of the group's
	Create   bool   `lua:"create"` // the group is to be made
	Meta     string `lua:"meta"`   // the consume hash that names the dead-letter stream
	Dead     string `lua:"dead"`   // "": none
}

// prepare checks the server's side, then writes what is asked: the
// dead-letter stream's name for inspect, the group (--create).
func (r *runner) prepare(ctx context.Context) error {
	p, c := r.p, r.conn
	if _, err := c.Capabilities(ctx); err != nil {
		return err
	}
	base, berr := idmp.SlotBase(p.Stream, c.Cluster(), "consume", "claim key")
	if berr != nil {
		return berr
	}
	r.base = base
	groups, err := do(ctx, c, func(ctx context.Context, uc redis.UniversalClient) ([]redis.XInfoGroup, error) {
		return uc.XInfoGroups(ctx, p.Stream).Result()
	})
	switch {
	case err != nil && strings.Contains(err.Error(), "no such key") && !p.Create:
		return &exit.Error{Code: exit.NotFound, What: r.what, Err: errors.New("no such stream"), Hint: "--create makes it, with the group"}
	case err != nil && !strings.Contains(err.Error(), "no such key"):
		return exit.Wrap(err, r.what) // WRONGTYPE: 65
	}
	has := slices.ContainsFunc(groups, func(g redis.XInfoGroup) bool { return g.Name == p.Group })
	if !has && !p.Create {
		return &exit.Error{Code: exit.NotFound, What: r.what, Err: fmt.Errorf("no consumer group %q", p.Group),
			Hint: "--create makes it at the stream's start (0); XGROUP CREATE " + p.Stream + " " + p.Group + " $ starts it at the end"}
	}
	call := prepareScript.Call(&prepareArgs{Stream: p.Stream, Group: p.Group, Consumer: p.Consumer,
		Claim: ClaimKey(base, p.Group, "0-1"), Create: !has, Meta: metaKey(base), Dead: p.DeadLetter})
	if _, err := c.Run(ctx, redisconn.RunOpts{}, call); err != nil {
		return exit.Wrap(err, r.what)
	}
	if _, err := prepareScript.Reply(call); err != nil {
		return exit.Wrap(err, r.what)
	}
	if p.DeadLetter != "" {
		// The dead-letter add is checked before anything runs: refused
		// only once an entry ran out of attempts, it would stop the run.
		var err error
		if r.streams, err = stream.Open(ctx, c, stream.ModeAuto); err == nil {
			err = r.streams.CheckAdd(ctx, r.deadLetterAdd(entry{id: "0-1"}, 1, ""))
		}
		if err != nil {
			return exit.Wrap(exit.Wrap(err, "--dead-letter "+strconv.Quote(p.DeadLetter)), r.what)
		}
		if _, err := cmd(ctx, c, "HSET", metaKey(base), p.Group, p.DeadLetter); err != nil {
			return exit.Wrap(err, r.what)
		}
	}
	if !has {
		_, err := cmd(ctx, c, "XGROUP", "CREATE", p.Stream, p.Group, "0", "MKSTREAM")
		if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") { // made meanwhile: as good
			return exit.Wrap(err, r.what)
		}
	}
	r.learnDurability(ctx)
	return nil
}

// learnDurability decides what a completion waits for: WAITAOF 1 0 where
// the server has it (7.2+) and AOF is on; before 7.2, appendfsync always
// fsyncs before replying, and under everysec the user is warned.
func (r *runner) learnDurability(ctx context.Context) {
	d := redisconn.Durability{AOF: true, Timeout: r.conn.Timeout / 2}
	err := r.conn.CheckDurable(ctx, r.p.Stream, d)
	if err == nil {
		r.aof, r.sum.Durability = d, "WAITAOF"
		return
	}
	if strings.Contains(err.Error(), "appendonly is disabled") {
		return
	}
	cfg, _ := do(ctx, r.conn, func(ctx context.Context, uc redis.UniversalClient) (map[string]string, error) {
		return uc.ConfigGet(ctx, "append*").Result()
	})
	switch fsync := cfg["appendfsync"]; {
	case cfg["appendonly"] != "yes":
	case fsync == "always":
		r.always, r.sum.Durability = true, "appendfsync always"
	default:
		r.warnf("the server's AOF fsyncs %s and it has no WAITAOF (Redis 7.2+): a completion made in the last second before the server crashes can be lost, and its entry then runs again", fsync)
	}
}

// do runs one command's call, bounded by the connection's timeout.
func do[T any](ctx context.Context, c *redisconn.Conn, call func(context.Context, redis.UniversalClient) (T, error)) (T, error) {
	ctx, cancel := c.Ctx(ctx)
	defer cancel()
	var v T
	err := c.Do(func(uc redis.UniversalClient) (err error) {
		v, err = call(ctx, uc)
		return err
	})
	return v, err
}

// cmd is do of one command given as its words.
func cmd(ctx context.Context, c *redisconn.Conn, args ...any) (any, error) {
	return do(ctx, c, func(ctx context.Context, uc redis.UniversalClient) (any, error) { return uc.Do(ctx, args...).Result() })
}

// Group is a consumer group as inspect shows it, with the dead-letter
// stream consume gives it and its length (nil: unknown).
type Group struct {
	Name             string `json:"name"`
	Consumers        int64  `json:"consumers"`
	Pending          int64  `json:"pending"`
	LastDeliveredID  string `json:"last_delivered_id"`
	DeadLetter       string `json:"dead_letter,omitempty"`
	DeadLetterLength *int64 `json:"dead_letter_length,omitempty"`
}

// Groups reads the stream's groups (not emulated IDMP's liveness tokens).
func Groups(ctx context.Context, c *redisconn.Conn, name string) ([]Group, error) {
	infos, err := do(ctx, c, func(ctx context.Context, uc redis.UniversalClient) ([]redis.XInfoGroup, error) {
		return uc.XInfoGroups(ctx, name).Result()
	})
	if err != nil {
		return nil, err
	}
	var dead map[string]string
	if base, err := idmp.SlotBase(name, c.Cluster(), "", ""); err == nil {
		dead, _ = do(ctx, c, func(ctx context.Context, uc redis.UniversalClient) (map[string]string, error) {
			return uc.HGetAll(ctx, metaKey(base)).Result()
		})
	}
	var out []Group
	for _, g := range infos {
		if stream.IsTokenGroup(g.Name) {
			continue
		}
		grp := Group{Name: g.Name, Consumers: g.Consumers, Pending: g.Pending, LastDeliveredID: g.LastDeliveredID, DeadLetter: dead[g.Name]}
		if grp.DeadLetter != "" {
			if n, err := cmd(ctx, c, "XLEN", grp.DeadLetter); err == nil {
				grp.DeadLetterLength = new(n.(int64))
			}
		}
		out = append(out, grp)
	}
	return out, nil
}
