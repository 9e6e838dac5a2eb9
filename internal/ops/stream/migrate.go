package stream

// idmpctl migrate (docs/upgrade.md): emulated state into native tracking
// (8.6.2+), one atomic script per stream. The iids are read first (an
// IDMPAUTO iid is recorded as NativeAutoIID); the script, the only writer,
// records those whose entry ID is unchanged: a kill leaves each tracked.

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/redis/go-redis/v9"
)

//go:embed lua/stream_migrate.lua
var migrateLua string

var migrateScript = emulatedScript[migrateArgs](decodeMigrateReply, migrateLua)

// migrateReply is a signal ('retry': a pid not read; 'old': no
// XIDMPRECORD), or the result.
type migrateReply struct {
	signal string
	res    MigrateResult
}

// decodeMigrateReply is the migrate script's decoder.
func decodeMigrateReply(v any) (migrateReply, error) {
	reply, _ := v.([]any)
	if len(reply) == 1 && (reply[0] == "retry" || reply[0] == "old") {
		return migrateReply{signal: reply[0].(string)}, nil
	}
	if len(reply) < 9 || (len(reply)-9)%5 != 0 {
		return migrateReply{}, exit.New(exit.Internal, "migrate", "unexpected reply %v", v)
	}
	str := func(i int) string { v, _ := reply[i].(string); return v }
	num := func(i int) int64 {
		switch v := reply[i].(type) {
		case int64:
			return v
		case string:
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
		return 0
	}
	res := MigrateResult{Status: str(0), Settings: str(1), Duration: num(2), MaxSize: num(3),
		Native:   NativeView{Duration: num(4), MaxSize: num(5), Tracked: num(8)},
		Recorded: num(6), Dropped: num(7), Kept: []MigrateKept{}}
	for i := 9; i < len(reply); i += 5 {
		res.Kept = append(res.Kept, MigrateKept{PID: str(i), IID: str(i + 1), ID: str(i + 2), ExpiresMS: num(i + 3), Why: str(i + 4)})
	}
	return migrateReply{res: res}, nil
}

// migrateArgs are the migrate script's (see lua/stream_migrate.lua).
type migrateArgs struct {
	State   stateArgs
	PIDKeys []string `lua:"PID_KEYS,key,rest"` // per pid its ids hash and order list
	Dry     bool     `lua:"DRY"`
	NPIDs   int      `lua:"NPIDS"`
	// The pids; the number of records; per record its pid's index, iid,
	// the native reply and the entry ID.
	Rest     []any        `lua:"REST,rest"`
	Defaults defaultsArgs // not known ("" ""), nor needed
}

// MigrateKept is an iid that stays in the emulated state, where the guard
// consults it until it expires (ExpiresMS, server clock).
type MigrateKept struct {
	PID       string `json:"pid"`
	IID       string `json:"iid"`
	ID        string `json:"id"`
	ExpiresMS int64  `json:"expires_ms"`
	// Why: "missing", "native", "changed" or "full" (see Describe).
	Why string `json:"why"`
}

// MigrateResult is what Migrate did to one stream, or would do (DryRun).
type MigrateResult struct {
	Stream string `json:"stream"`
	DryRun bool   `json:"dry_run"`
	// Status: "none", "foreign" (another name's: "s" and "{s}"), "stale"
	// (a deleted stream's: dropped), "done", "kept" (Kept stays emulated).
	Status string `json:"status"`
	// Settings: "equal", "set" (the server's defaults widened by XCFGSET:
	// never narrowed), "native" (they stay: as wide), "blocked" (narrower,
	// or native iids XCFGSET would clear: nothing moves).
	Settings string `json:"settings"`
	// The emulated settings; Native, the stream's native ones (after the
	// migration) and the iids native tracking held before it.
	Duration int64         `json:"idmp-duration"`
	MaxSize  int64         `json:"idmp-maxsize"`
	Native   NativeView    `json:"native"`
	Recorded int64         `json:"recorded"`
	Dropped  int64         `json:"dropped_expired"`
	Kept     []MigrateKept `json:"kept"`
}

// NativeView is a stream's native IDMP settings, and how many iids its
// native tracking held before the migration.
type NativeView struct {
	Duration int64 `json:"idmp-duration"`
	MaxSize  int64 `json:"idmp-maxsize"`
	Tracked  int64 `json:"iids-tracked"`
}

// CheckMigrate refuses (78) a server without XIDMPRECORD (Redis before
// 8.6.2, no native IDMP, or the command renamed away): the migration
// changes nothing there.
func (s *Streams) CheckMigrate(ctx context.Context) error {
	caps, err := s.Conn.Capabilities(ctx)
	if err != nil {
		return err
	}
	what := strings.TrimSpace(caps.Product + " " + caps.Version)
	if caps.NativeIDMP {
		cctx, cancel := s.bound(ctx)
		defer cancel()
		info, err := s.Conn.Client().Do(cctx, "COMMAND", "INFO", "XIDMPRECORD").Slice()
		if err != nil && !errors.As(err, new(redis.Error)) {
			return err
		}
		if len(info) == 1 && info[0] != nil {
			return nil
		}
	}
	if caps.NativeIDMP && redisconn.VersionAtLeast(caps.Version, 8, 6, 2) {
		e := exit.New(exit.Config, "", "the server (%s) does not know XIDMPRECORD by that name: it is renamed away (rename-command) or disabled there; nothing was changed", what)
		e.Hint = "give the server back the command; until then the emulation keeps working as it is"
		return e
	}
	e := exit.New(exit.Config, "", "the server (%s) has no XIDMPRECORD: moving emulated IDMP state into native tracking needs Redis 8.6.2 or later; nothing was changed", what)
	e.Hint = "upgrade the server first; until then the emulation keeps working as it is"
	return e
}

// migrateRead is one iid of the emulated state as the migration reads it
// before its script: the entry ID, and the iid to record natively.
type migrateRead struct {
	pid, iid, native, id string
}

// readForMigrate reads the emulated iids and their entries' fields, to
// tell IDMPAUTO iids (AutoIID of the fields) and derive Redis's.
func (s *Streams) readForMigrate(ctx context.Context, l idmp.StateLayout) ([]string, []migrateRead, error) {
	c := s.Conn.Client()
	pids, err := c.SMembers(ctx, l.PIDs).Result()
	if err != nil {
		return nil, nil, err
	}
	hashes := make([]*redis.MapStringStringCmd, len(pids))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, pid := range pids {
			hashes[i] = p.HGetAll(ctx, l.IDs(pid))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	var reads []migrateRead
	for i, pid := range pids {
		for iid, id := range hashes[i].Val() {
			reads = append(reads, migrateRead{pid: pid, iid: iid, native: iid, id: id})
		}
	}
	for start := 0; start < len(reads); start += 1000 {
		part := reads[start:min(start+1000, len(reads))]
		ranges := make([]*redis.Cmd, len(part))
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, r := range part {
				// Raw: the pairs in order, repeats kept (XMessage is a map).
				ranges[i] = p.Do(ctx, "XRANGE", l.Stream, r.id, r.id)
			}
			return nil
		})
		if err != nil && !errors.As(err, new(redis.Error)) {
			return nil, nil, err
		}
		for i := range part {
			fields, ok := entryFields(ranges[i].Val())
			if ok && AutoIID(fields) == part[i].iid {
				part[i].native = NativeAutoIID(fields)
			}
		}
	}
	return pids, reads, nil
}

// Migrate moves one stream's emulated state into native tracking (dry:
// writes nothing). Missing: exit.NotFound; another type: exit.Data. Safe to repeat.
func (s *Streams) Migrate(ctx context.Context, stream string, dry bool) (MigrateResult, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	// The server's defaults tell settings an operator gave the stream
	// natively, which the migration never narrows (the guard's rule).
	s.loadNativeDefaults(ctx)
	for attempt := 0; ; attempt++ {
		var call *redisconn.Call
		err := s.Conn.Do(func(c redis.UniversalClient) error {
			l, err := idmp.StateKeys(stream, s.Conn.Cluster())
			if err != nil {
				return err
			}
			pids, reads, err := s.readForMigrate(ctx, l)
			if err != nil {
				return err
			}
			a := migrateArgs{State: stateArgsOf(stream, l), Dry: dry, NPIDs: len(pids)}
			index := make(map[string]int, len(pids))
			for i, pid := range pids {
				index[pid] = i + 1
				a.PIDKeys = append(a.PIDKeys, l.IDs(pid), l.Order(pid))
				a.Rest = append(a.Rest, pid)
			}
			a.Rest = append(a.Rest, len(reads))
			for _, r := range reads {
				a.Rest = append(a.Rest, index[r.pid], r.iid, r.native, r.id)
			}
			a.Defaults = defaultsArgsOf(s.nativeDefaults)
			call = migrateScript.Call(&a)
			if _, err := s.Conn.Run(ctx, redisconn.RunOpts{Key: stream}, call); err != nil {
				return err
			}
			return call.Cmd.Err()
		})
		if errors.Is(err, redis.Nil) {
			e := exit.New(exit.NotFound, "", "stream does not exist")
			if l, lerr := idmp.StateKeys(stream, s.Conn.Cluster()); lerr == nil && s.Conn.Client().Exists(ctx, l.Meta, l.PIDs).Val() > 0 {
				e.Hint = "its emulated IDMP state is left over from a deleted stream: idmpctl purge --match " + strconv.Quote(l.Base+"*") + " --orphan-state drops it"
			}
			return MigrateResult{}, e
		}
		if err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE Operation") {
			return MigrateResult{}, exit.New(exit.Data, "", "not a stream (%v)", err)
		}
		if err != nil {
			return MigrateResult{}, scriptErr(err)
		}
		reply, err := migrateScript.Reply(call)
		if err != nil {
			return MigrateResult{}, err
		}
		switch reply.signal {
		case "retry":
			if attempt < 5 {
				continue
			}
			return MigrateResult{}, exit.New(exit.Busy, "", "new producers kept appearing in the emulated state while it was read (%d tries)", attempt+1)
		case "old":
			return MigrateResult{}, s.CheckMigrate(ctx)
		}
		res := reply.res
		res.Stream, res.DryRun = stream, dry
		return res, nil
	}
}

// Describe says in a sentence what happens to a kept iid.
func (k MigrateKept) Describe() string {
	switch k.Why {
	case "missing":
		return "its entry was trimmed or deleted, so Redis cannot record it (XIDMPRECORD needs the entry): it stays emulated, and the guard answers its retries until it expires"
	case "native":
		return "native tracking already holds iids (Redis would put this older one after them, or XCFGSET would clear them), or the stream's own native settings are narrower than the emulated ones: it stays emulated, and the guard answers its retries until it expires"
	case "changed":
		return "it was written while the migration read the state: run the migration again"
	case "full":
		return "more iids than the producer's IDMP-MAXSIZE: the oldest stay emulated until they expire"
	}
	return fmt.Sprintf("kept (%s)", k.Why)
}

// entryFields reads the flat field/value list of XRANGE id id's reply.
func entryFields(v any) ([]string, bool) {
	entries, _ := v.([]any)
	if len(entries) != 1 {
		return nil, false
	}
	entry, _ := entries[0].([]any)
	if len(entry) != 2 {
		return nil, false
	}
	pairs, _ := entry[1].([]any)
	fields := make([]string, len(pairs))
	for i, f := range pairs {
		s, ok := f.(string)
		if !ok {
			return nil, false
		}
		fields[i] = s
	}
	return fields, true
}

// MigrateSelection is what migrate moves: the streams named, or those
// matching Match on every primary.
type MigrateSelection struct {
	Streams []string
	Match   string
}

// MigrateStreams checks XIDMPRECORD (78), lists the streams (sorted), then
// migrates each and hands each result to each. A scanned stream gone since
// is passed over; a named one is exit.NotFound.
func (s *Streams) MigrateStreams(ctx context.Context, sel MigrateSelection, dryRun bool, each func(MigrateResult) error) error {
	cctx, cancel := s.Conn.Ctx(ctx)
	err := s.CheckMigrate(cctx)
	cancel()
	if err != nil {
		return exit.Wrap(err, "migrate")
	}
	names := sel.Streams
	if sel.Match != "" {
		if names, err = s.scanStreams(ctx, sel.Match); err != nil {
			return exit.Wrap(err, "migrate --match "+strconv.Quote(sel.Match))
		}
	}
	for _, name := range names {
		mctx, cancel := s.Conn.Ctx(ctx)
		res, err := s.Migrate(mctx, name, dryRun)
		cancel()
		if sel.Match != "" && exit.Code(err) == exit.NotFound {
			continue // deleted since the scan
		}
		if err != nil {
			return exit.Wrap(err, "migrate "+strconv.Quote(name))
		}
		if err := each(res); err != nil {
			return err
		}
	}
	return nil
}

// scanStreams lists the streams matching pattern on every primary, sorted.
func (s *Streams) scanStreams(ctx context.Context, pattern string) ([]string, error) {
	var mu sync.Mutex
	var names []string
	err := s.Conn.EachPrimary(ctx, func(ctx context.Context, node redis.Cmdable, _ string) error {
		for cursor := uint64(0); ; {
			cctx, cancel := s.Conn.Ctx(ctx) // each round trip bounded
			keys, next, err := node.ScanType(cctx, cursor, pattern, 1000, "stream").Result()
			cancel()
			mu.Lock()
			names = append(names, keys...)
			mu.Unlock()
			if cursor = next; err != nil || cursor == 0 {
				return err
			}
		}
	})
	slices.Sort(names)
	return slices.Compact(names), err
}
