package stream

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// Mode is how idempotent production is done: by the server (native, Redis
// 8.6+) or by idmpctl's server-side Lua emulation.
type Mode int

// Modes. ModeAuto resolves to native when the server has IDMP.
const (
	ModeAuto Mode = iota
	ModeNative
	ModeEmulated
)

var modeNames = []string{"auto", "native", "emulated"}

func (m Mode) String() string { return modeNames[m] }

// ParseMode reads a --mode value: auto, native or emulated.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if strings.EqualFold(s, n) {
			return Mode(i), nil
		}
	}
	if s == "" {
		return ModeAuto, nil
	}
	return ModeAuto, exit.Usagef("invalid mode %q: use auto, native or emulated", s)
}

// AddRequest is one idempotent XADD: IDMP PID IID, or IDMPAUTO PID with Auto.
// MaxLen > 0 or MinID ask for trimming (Approx: "~"); Limit > 0 sends LIMIT n
// and Limit < 0 sends LIMIT 0, as go-redis does. ID may only be "" or "*".
// Deletion is XADD's KEEPREF, DELREF or ACKED (Redis 8.2's trimming of
// references: idmpctl exec), "" none.
type AddRequest struct {
	Deletion   string
	Stream     string
	PID        string
	IID        string
	Auto       bool
	Fields     []string // flat: field, value, field, value...
	NoMkStream bool
	MaxLen     int64
	MinID      string
	Approx     bool
	Limit      int64
	ID         string
}

// Validate checks a request without a server, with the texts Redis 8.6.3
// uses (R12).
// Failures are usage errors (64).
func (r AddRequest) Validate() error {
	usage := func(msg string) error { return exit.New(exit.Usage, "", "%s", msg) }
	switch {
	case r.PID == "" && r.Auto:
		return usage("ERR syntax error, IDMPAUTO requires a non-empty producer ID")
	case r.PID == "":
		return usage("ERR syntax error, IDMP requires a non-empty producer ID")
	case r.Auto && r.IID != "":
		return usage("ERR syntax error, IDMP/IDMPAUTO specified multiple times")
	case !r.Auto && r.IID == "":
		return usage("ERR syntax error, IDMP requires a non-empty idempotent ID")
	case r.ID != "" && r.ID != "*":
		return usage("ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs")
	case len(r.Fields) == 0 || len(r.Fields)%2 != 0:
		return usage("ERR wrong number of arguments for 'xadd' command")
	case r.MaxLen < 0:
		return usage("ERR The MAXLEN argument must be >= 0.")
	case r.MaxLen > 0 && r.MinID != "":
		return usage("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
	case r.Approx && r.MaxLen == 0 && r.MinID == "":
		return usage("ERR syntax error, the ~ option needs MAXLEN or MINID")
	case r.Limit > 0 && r.MaxLen == 0 && r.MinID == "":
		return usage("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
	case r.Limit != 0 && !r.Approx:
		return usage("ERR syntax error, LIMIT cannot be used without the special ~ option")
	}
	return nil
}

// AddResult is the outcome of one add. IID is the iid used (the derived one
// for Auto in emulated mode; empty for Auto in native mode, where Redis does
// not reveal it). OriginalExists is only meaningful when Duplicate.
type AddResult struct {
	ID             string
	IID            string
	Duplicate      bool
	OriginalExists bool
	Mode           Mode
	Ack            *redisconn.Ack // what the replicas acknowledged (durable adds only)
}

// BatchError says which request of a batch failed. The results of the
// requests before it come with it; requests after it may or may not have been
// written, and re-sending them is safe because every add is idempotent.
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string { return fmt.Sprintf("request %d: %v", e.Index+1, e.Err) }
func (e *BatchError) Unwrap() error { return e.Err }

// CfgResult is what CfgSet did: the settings before and after, and how many
// tracked iids a change cleared (R7).
type CfgResult struct {
	Before, After idmp.Config
	Changed       bool
	ClearedIIDs   int64
}

// PIDTracking is one producer's live iid count (emulated mode).
type PIDTracking struct {
	PID  string `json:"pid"`
	IIDs int64  `json:"iids-tracked"`
}

// Info is the XINFO-equivalent view of a stream's IDMP state. Mode is
// "native", "emulated", or "none" (no emulated state: defaults and zero
// counters, R4/R8). OtherMode names state of the other mode found for the
// same stream ("emulated" or "native"), so mixed use is never silent.
type Info struct {
	Stream          string        `json:"stream"`
	Mode            string        `json:"mode"`
	Length          int64         `json:"length"`
	FirstID         string        `json:"first-entry-id"`
	LastID          string        `json:"last-entry-id"`
	LastGeneratedID string        `json:"last-generated-id"`
	EntriesAdded    int64         `json:"entries-added"` // -1 when the server does not report it (Redis < 7.0)
	IDMPDuration    int64         `json:"idmp-duration"`
	IDMPMaxSize     int64         `json:"idmp-maxsize"`
	PIDsTracked     int64         `json:"pids-tracked"`
	IIDsTracked     int64         `json:"iids-tracked"`
	IIDsAdded       int64         `json:"iids-added"`
	IIDsDuplicates  int64         `json:"iids-duplicates"`
	ServerTimeMS    int64         `json:"server_time_ms"` // server clock (TIME) when read
	PIDs            []PIDTracking `json:"pids,omitempty"` // emulated only, sorted by pid
	OtherMode       string        `json:"other_mode,omitempty"`
	// Inconsistent says what of the emulated state is missing (evicted, or
	// deleted by hand): dedupe may still act on the rest, and the counts
	// shown are of what is left. Empty when the state is whole.
	Inconsistent string `json:"inconsistent,omitempty"`
	// NotAtomic: the emulated state was read with plain commands, in several
	// round trips (the user may not run scripts), not as one snapshot.
	NotAtomic bool `json:"not_atomic,omitempty"`
	// TokenGroups is how many of the stream's consumer groups are liveness
	// tokens of emulated state (idmpctl's, named idmpctl:<12 hex>), which
	// exec leaves out of XINFO's replies (emulated only).
	TokenGroups int64 `json:"-"`
	// Token: the emulated state has a liveness token of its own, so a
	// stream deleted and rebuilt by another client is told from this one
	// exactly; without one (a user who may not XGROUP CREATE wrote it, or
	// CONFIG SET gave the stream its settings) the snapshot decides, which
	// a rebuild with the very same entries passes.
	Token bool `json:"-"`
}

// LastIDAheadOfClock reports whether the stream's last generated ID lies in
// the server's future by more than toleranceMS (iids then outlive DURATION).
func (i Info) LastIDAheadOfClock(toleranceMS int64) bool {
	ms, ok := idMillis(i.LastGeneratedID)
	return ok && i.ServerTimeMS > 0 && ms > uint64(i.ServerTimeMS+toleranceMS)
}

// IdleMs is how long ago, on the server's clock, the stream's last ID was
// generated: its last add, for auto-generated IDs. ok is false when either
// is unknown or the ID lies in the future.
func (i Info) IdleMs() (int64, bool) {
	ms, ok := idMillis(i.LastGeneratedID)
	if !ok || i.ServerTimeMS <= 0 || ms == 0 || ms > uint64(i.ServerTimeMS) {
		return 0, false
	}
	return i.ServerTimeMS - int64(ms), true
}

func idMillis(id string) (uint64, bool) {
	msPart, _, _ := strings.Cut(id, "-")
	ms, err := strconv.ParseUint(msPart, 10, 64)
	return ms, err == nil
}

// Streams does idempotent production on one connection, through the
// backend of its mode, chosen once when it is opened (backend.go).
type Streams struct {
	Conn *redisconn.Conn
	be   backend
	// Defaults are the emulated server-level defaults once read (nil:
	// not yet; see defaults.go).
	Defaults *idmp.Defaults
	// nativeDefaults are CONFIG GET stream-idmp-* once read (the guard's
	// settings carry-over, native.go).
	nativeDefaults *idmp.Defaults
	plainReads     bool  // the info script was refused: read with plain commands
	maxBulk        int64 // the server's proto-max-bulk-len where known (a batch reads it)
}

// Mode is the mode the streams work in: native, emulated or multi.
func (s *Streams) Mode() Mode { return s.be.mode() }

// bound applies the connection's per-command timeout to one round trip.
func (s *Streams) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.Conn.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return s.Conn.Ctx(ctx)
}

// AddOptions say how Add sends: Durability waits for replicas (or AOF)
// after each round trip; Retries resends after a network error (an
// idempotent add is safe to repeat: a repeat is its duplicate), and for as
// long as the connection's timeout allows while a cluster's slot moves;
// OnRetry hears of each (attempt 0: the first reply of a moving slot).
type AddOptions struct {
	Durability redisconn.Durability
	Retries    int
	OnRetry    func(attempt int, err error)
	// NoOutcome: the caller needs the entry IDs alone (xadd's raw output,
	// as redis-cli's): whether each add was a duplicate is not asked
	// where that costs the server (native), and Duplicate may be false.
	NoOutcome bool
}

// Add performs idempotent adds, with as few round trips as the requests
// allow: one per run of up to maxRun requests to the same stream with the
// same options. Requests are validated first, with Redis 8.6.3's texts; on
// a failure at request i it returns the results before i and a
// *BatchError (a single add's error is its own). A missing stream with
// NoMkStream is exit.NotFound; a key of another type is WRONGTYPE
// (exit.Data). Later duplicates of earlier requests dedupe (R11). With
// Durability, an add that the replicas did not acknowledge stands on the
// primary: its result comes with an error wrapping a
// *redisconn.NotAckedError, and it is never retried.
func (s *Streams) Add(ctx context.Context, o AddOptions, reqs ...AddRequest) ([]AddResult, error) {
	fail := func(i int, err error) error {
		err = exit.Wrap(err, "xadd "+strconv.Quote(reqs[i].Stream))
		if len(reqs) == 1 {
			return err
		}
		return &BatchError{Index: i, Err: err}
	}
	valid := len(reqs)
	var verr error
	for i, r := range reqs {
		err := r.Validate()
		if err == nil {
			err = s.checkBulk(ctx, &reqs[i])
		}
		if err == nil {
			err = s.be.fits(&reqs[i])
		}
		if err != nil {
			valid, verr = i, fail(i, err)
			break
		}
	}
	out := make([]AddResult, 0, valid)
	for start := 0; start < valid; {
		end := start + 1
		for end < valid && end-start < maxRun && reqs[end].sameRun(reqs[start]) {
			end++
		}
		var res []AddResult
		err := redisconn.WithRetriesWithin(ctx, o.Retries, s.Conn.Timeout, func() error {
			var err error
			res, err = s.be.add(ctx, reqs[start:end], o)
			return err
		}, o.OnRetry)
		for i := range res {
			res[i].Mode = s.Mode()
		}
		out = append(out, res...)
		if err != nil {
			// The request that failed; an error with every result (not
			// acknowledged) is the run's last.
			return out, fail(min(start+len(res), end-1), err)
		}
		start = end
	}
	return out, verr
}

// maxRun bounds the adds of one round trip, so one script call or MULTI
// never blocks the server for long.
const maxRun = 1000

// sameRun reports whether two requests can share one round trip: the same
// stream, kind of iid and options.
func (r AddRequest) sameRun(o AddRequest) bool {
	return r.Stream == o.Stream && r.NoMkStream == o.NoMkStream && r.MaxLen == o.MaxLen &&
		r.MinID == o.MinID && r.Approx == o.Approx && r.Limit == o.Limit && r.Auto == o.Auto && r.Deletion == o.Deletion
}

// errNoStream is the NOMKSTREAM outcome on a missing stream (R9).
func errNoStream() error {
	return exit.New(exit.NotFound, "", "stream does not exist")
}

// Info reads a stream's IDMP settings, counters and health inputs. A missing
// stream is exit.NotFound. Its errors name nothing: the command that reads
// (inspect, cfgset, purge --stream) says who failed.
func (s *Streams) Info(ctx context.Context, stream string) (Info, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.be.info(ctx, stream)
}

// validateCfg checks CfgSet's values with XCFGSET's texts (R7, Redis
// 8.6.3's); 0 keeps a value.
func validateCfg(duration, maxsize int64) error {
	switch {
	case duration == 0 && maxsize == 0:
		return exit.New(exit.Usage, "", "ERR At least one parameter must be specified")
	case duration < 0 || duration > idmp.MaxDuration:
		return exit.New(exit.Usage, "", "ERR IDMP-DURATION must be between 1 and %d seconds", idmp.MaxDuration)
	case maxsize < 0 || maxsize > idmp.MaxMaxSize:
		return exit.New(exit.Usage, "", "ERR IDMP-MAXSIZE must be between 1 and %d entries", idmp.MaxMaxSize)
	}
	return nil
}

// CfgSet sets a stream's IDMP-DURATION and/or IDMP-MAXSIZE (0 keeps the
// current value). Setting the current values sends nothing and clears nothing;
// a change clears every pid's tracked iids (R7). A missing stream is
// exit.NotFound.
func (s *Streams) CfgSet(ctx context.Context, stream string, duration, maxsize int64) (CfgResult, error) {
	if err := validateCfg(duration, maxsize); err != nil {
		return CfgResult{}, exit.Wrap(err, "cfgset "+strconv.Quote(stream))
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	res, err := s.be.cfgSet(ctx, stream, duration, maxsize)
	return res, exit.Wrap(err, "cfgset "+strconv.Quote(stream))
}

// ClearTracking forgets tracked iids of one pid, or of all pids when pid is
// "", keeping settings, counters and entries (purge --stream). Natively only
// all pids can be cleared. A missing stream is exit.NotFound.
func (s *Streams) ClearTracking(ctx context.Context, stream, pid string) (int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	n, err := s.be.clear(ctx, stream, pid)
	return n, exit.Wrap(err, "purge --stream "+strconv.Quote(stream))
}

// ServerDefaults returns the settings a stream gets at its first idempotent
// add: CONFIG GET stream-idmp-duration/-maxsize natively, idmpctl's
// defaults key emulated (100/100 when unset).
func (s *Streams) ServerDefaults(ctx context.Context) (duration, maxsize int64, err error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.be.defaults(ctx)
}

// minProtoMaxBulkLen is the least proto-max-bulk-len a server takes (1mb):
// only a longer argument makes checkBulk ask the server.
const minProtoMaxBulkLen = 1 << 20

// checkBulk refuses (65) a request with an argument longer than the
// server's proto-max-bulk-len, which the server would refuse for the
// whole command by closing the connection. It asks the server (CONFIG
// GET, once) only when an argument is over 1 MiB.
func (s *Streams) checkBulk(ctx context.Context, r *AddRequest) error {
	if longestArg(r) <= minProtoMaxBulkLen {
		return nil
	}
	return bulkErr(r, s.Conn.ProtoMaxBulkLen(ctx))
}

func longestArg(r *AddRequest) int {
	n := max(len(r.IID), len(r.PID))
	for _, f := range r.Fields {
		n = max(n, len(f))
	}
	return n
}

// bulkErr refuses (65) r when an argument is longer than limit (0: unknown).
func bulkErr(r *AddRequest, limit int64) error {
	if n := longestArg(r); limit > 0 && int64(n) > limit {
		e := exit.New(exit.Data, "", "a value of %d bytes: the server takes at most %d in one argument (proto-max-bulk-len)", n, limit)
		e.Hint = "store the value elsewhere and add its reference, or raise the server's proto-max-bulk-len"
		return e
	}
	return nil
}
