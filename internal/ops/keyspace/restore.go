package keyspace

// restore FILE: put back what purge --backup saved with RESTORE ... ABSTTL,
// never over an existing key unless asked. One script call a record
// (lua/restore.lua) checks the expiry on the server's clock before it
// writes: RESTORE ... REPLACE with a passed expiry would delete the key.

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"strconv"
	"strings"
	"sync"

	"github.com/idmpctl/idmpctl/internal/backup"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

//go:embed lua/restore.lua
var restoreLua string

var restoreScript = redisconn.NewLua[restoreArgs](decodeRestoreReply, restoreLua)

// decodeRestoreReply reads the restore script's reply: what happened to
// the record.
func decodeRestoreReply(v any) (RestoreOutcome, error) {
	switch reply, _ := v.(string); RestoreOutcome(reply) {
	case Restored, Replaced, Existing, Expired:
		return RestoreOutcome(reply), nil
	}
	return "", fmt.Errorf("%w %q", errUnexpectedReply, fmt.Sprint(v))
}

// errUnexpectedReply is a reply the script does not make.
var errUnexpectedReply = errors.New("unexpected reply")

// restoreArgs are the restore script's (see lua/restore.lua).
type restoreArgs struct {
	Key       string `lua:"KEY,key"`
	Payload   string `lua:"PAYLOAD"`
	ExpiresAt int64  `lua:"AT"`
	Replace   bool   `lua:"REPLACE"`
	AbsTTL    bool   `lua:"ABSTTL"`
}

// RestoreOutcome is what happened to one record.
type RestoreOutcome string

// Outcomes.
const (
	Restored     RestoreOutcome = "restored" // the key was missing
	Replaced     RestoreOutcome = "replaced" // the key existed and was overwritten (--replace)
	Existing     RestoreOutcome = "existing" // the key exists: skipped (no --replace)
	Expired      RestoreOutcome = "expired"  // its TTL ran out since the backup: skipped
	WouldRestore RestoreOutcome = "would-restore"
	WouldReplace RestoreOutcome = "would-replace" // a dry run with --replace: the key exists and would be overwritten
	Failed       RestoreOutcome = "failed"        // the server refused it (see the error)
)

// RestoreOptions say how to restore.
type RestoreOptions struct {
	Replace bool // RESTORE ... REPLACE: overwrite an existing key
	DryRun  bool // write nothing: say what would happen (EXISTS)
}

// Restorer restores records on one connection.
type Restorer struct {
	c      *redisconn.Conn
	opts   RestoreOptions
	abstTL bool // the server takes RESTORE ... ABSTTL (Redis 5.0+, Valkey)
	rdb    int  // a dry run's: the server's RDB version (serverRDB); 0: not asked
	// clientNow is the server's clock as the client last read it (TIME,
	// serverTime), to leave out what expired long ago; a test seam.
	clientNow func(ctx context.Context) (int64, error)
}

// NewRestorer asks what the server is (a cluster is restored key by key to
// each key's node; ABSTTL since Redis 5.0).
func NewRestorer(ctx context.Context, c *redisconn.Conn, opts RestoreOptions) (*Restorer, error) {
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return nil, err
	}
	var major, minor int
	n, _ := fmt.Sscanf(caps.Version, "%d.%d", &major, &minor)
	r := &Restorer{c: c, opts: opts, abstTL: n < 2 || caps.Product != "redis" || major >= 5}
	r.clientNow = r.serverTime
	return r, nil
}

// RestoreUnless restores recs in one pipelined round trip after one for the
// server's clock, by which a record already expired is not sent, and
// returns each one's outcome. A reply error makes that record Failed
// (nothing written) and the first is returned. A record with missingOnly[i]
// (may be nil) is never written over an existing key, --replace or not.
func (r *Restorer) RestoreUnless(ctx context.Context, recs []backup.Record, missingOnly []bool) ([]RestoreOutcome, error) {
	nowMs, err := r.clientNow(ctx)
	if err != nil {
		return nil, exit.Wrap(err, "restore")
	}
	out := make([]RestoreOutcome, len(recs))
	if r.opts.DryRun {
		return out, r.dryRun(ctx, recs, missingOnly, nowMs, out)
	}
	var calls []*redisconn.Call
	var index []int
	for i, rec := range recs {
		if rec.ExpiresAt > 0 && rec.ExpiresAt <= nowMs {
			out[i] = Expired
			continue
		}
		replace := r.opts.Replace && (missingOnly == nil || !missingOnly[i])
		calls = append(calls, restoreScript.Call(&restoreArgs{Key: rec.Key, Payload: string(rec.Payload),
			ExpiresAt: rec.ExpiresAt, Replace: replace, AbsTTL: r.abstTL}))
		index = append(index, i)
	}
	if len(calls) == 0 {
		return out, nil
	}
	if _, err := r.c.Run(ctx, redisconn.RunOpts{}, calls...); err != nil {
		return nil, exit.Wrap(err, "restore")
	}
	var first error
	for j, cl := range calls {
		i := index[j]
		outcome, err := restoreScript.Reply(cl)
		out[i] = cmp.Or(outcome, Failed) // "" with an error
		if err == nil || first != nil {
			continue
		}
		what, msg := "restore "+strconv.Quote(recs[i].Key), err.Error()
		switch {
		case errors.Is(err, errUnexpectedReply):
			first = exit.New(exit.Internal, what, "%v", err)
		case strings.Contains(msg, "DUMP payload") || strings.Contains(msg, "Bad data format"):
			first = payloadError(what, msg) // the script's place is gone (redisconn's ownError)
		default:
			first = exit.Wrap(err, what)
		}
	}
	return out, first
}

// payloadError is a payload this server cannot load: another version's,
// or damaged.
func payloadError(what, msg string) error {
	return &exit.Error{Code: exit.Data, What: what, Err: errors.New(msg),
		Hint: "a DUMP payload loads only on a server of the same or a later RDB version than the one that made it"}
}

// loads says whether RESTORE takes payload on a server of RDB version
// rdb (0: unknown), as Redis checks it (verifyDumpPayload): its version,
// then its CRC-64 (Jones), in its last 10 bytes.
func loads(payload []byte, rdb int) bool {
	n := len(payload)
	if n < 10 || rdb > 0 && int(binary.LittleEndian.Uint16(payload[n-10:])) > rdb {
		return false
	}
	return binary.LittleEndian.Uint64(payload[n-8:]) == ^crc64.Update(^uint64(0), jonesTable(), payload[:n-8])
}

var jonesTable = sync.OnceValue(func() *crc64.Table { return crc64.MakeTable(0x95ac9329ac4bc9b5) })

// serverRDB is the RDB version of the server's DUMP payloads, read from
// FUNCTION DUMP's (Redis 7.0+, Valkey); 0 where it cannot be read.
func (r *Restorer) serverRDB(ctx context.Context) int {
	tctx, cancel := r.c.Ctx(ctx)
	defer cancel()
	p, err := r.c.Client().FunctionDump(tctx).Bytes()
	if err != nil || len(p) < 10 {
		return 0
	}
	return int(binary.LittleEndian.Uint16(p[len(p)-10:]))
}

// dryRun says what Restore would do: EXISTS of each record not expired; a
// key that exists would be replaced with --replace (unless missingOnly).
// A payload the server would refuse is Failed, with the real run's error.
func (r *Restorer) dryRun(ctx context.Context, recs []backup.Record, missingOnly []bool, nowMs int64, out []RestoreOutcome) error {
	if r.rdb == 0 {
		if r.rdb = r.serverRDB(ctx); r.rdb == 0 {
			r.rdb = -1 // asked: unknown
		}
	}
	var first error
	cmds := make([]*redis.IntCmd, len(recs))
	err := r.c.Pipelined(ctx, func(p redis.Pipeliner, ctx context.Context) {
		for i, rec := range recs {
			switch {
			case rec.ExpiresAt > 0 && rec.ExpiresAt <= nowMs:
				out[i] = Expired
			case !loads(rec.Payload, r.rdb):
				out[i] = Failed
				first = cmp.Or(first, payloadError("restore "+strconv.Quote(rec.Key), "ERR DUMP payload version or checksum are wrong"))
			default:
				cmds[i] = p.Exists(ctx, rec.Key)
			}
		}
	})
	if err != nil {
		return exit.Wrap(err, "restore")
	}
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		n, err := cmd.Result()
		switch {
		case err != nil:
			out[i] = Failed
			first = cmp.Or(first, exit.Wrap(err, "restore "+strconv.Quote(recs[i].Key)))
		case n > 0 && r.opts.Replace && (missingOnly == nil || !missingOnly[i]):
			out[i] = WouldReplace
		case n > 0:
			out[i] = Existing
		default:
			out[i] = WouldRestore
		}
	}
	return first
}

// serverTime is the server's clock (TIME) in milliseconds.
func (r *Restorer) serverTime(ctx context.Context) (int64, error) {
	tctx, cancel := r.c.Ctx(ctx)
	defer cancel()
	now, err := r.c.Client().Time(tctx).Result()
	return now.UnixMilli(), err
}
