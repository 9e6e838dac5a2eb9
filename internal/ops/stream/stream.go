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

// AddRequest is one idempotent XADD: IDMP PID IID, or IDMPAUTO PID with
// Auto. Limit < 0 sends LIMIT 0, as go-redis does; ID is "" or "*";
// Deletion is KEEPREF, DELREF or ACKED (Redis 8.2, idmpctl exec), "" none.
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

// Validate checks a request without a server, with Redis 8.6.3's texts
// (R12), as usage errors (64).
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

// AddResult is the outcome of one add. IID is the iid used ("" for native
// IDMPAUTO: Redis does not tell it); OriginalExists only for a Duplicate.
type AddResult struct {
	ID             string
	IID            string
	Duplicate      bool
	OriginalExists bool
	Mode           Mode
	Ack            *redisconn.Ack // what the replicas acknowledged (durable adds only)
}

// BatchError says which request of a batch failed; those after it may have
// been written, and are safe to re-send (every add is idempotent).
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

// Info is the XINFO view of a stream's IDMP state. Mode is "native",
// "emulated", or "none" (no emulated state: R4/R8); OtherMode names state
// of the other mode on the same stream, so mixed use is never silent.
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
	// Inconsistent says what of the emulated state is missing (evicted,
	// deleted): dedupe acts on the rest, which the counts show.
	Inconsistent string `json:"inconsistent,omitempty"`
	// NotAtomic: the emulated state was read with plain commands, in several
	// round trips (the user may not run scripts), not as one snapshot.
	NotAtomic bool `json:"not_atomic,omitempty"`
	// TokenGroups counts the liveness tokens among the stream's groups
	// (idmpctl:<12 hex>), which exec leaves out of XINFO's replies.
	TokenGroups int64 `json:"-"`
	// Token: the state has a liveness token, so a stream rebuilt by another
	// client is told exactly; without one (no XGROUP CREATE right, or CONFIG
	// SET) the snapshot decides, which a rebuild with the same entries passes.
	Token bool `json:"-"`
}

// LastIDAheadOfClock reports whether the stream's last generated ID lies in
// the server's future by more than toleranceMS (iids then outlive DURATION).
func (i Info) LastIDAheadOfClock(toleranceMS int64) bool {
	ms, ok := idMillis(i.LastGeneratedID)
	return ok && i.ServerTimeMS > 0 && ms > uint64(i.ServerTimeMS+toleranceMS)
}

// IdleMs is how long ago, on the server's clock, the last ID was generated
// (false when unknown or in the future).
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
	Conn           *redisconn.Conn
	be             backend
	Defaults       *idmp.Defaults // emulated server-level defaults once read (defaults.go)
	nativeDefaults *idmp.Defaults // CONFIG GET stream-idmp-* once read (the guard's)
	plainReads     bool           // the info script was refused: read with plain commands
	maxBulk        int64          // the server's proto-max-bulk-len where known (a batch reads it)
}

// Mode is the mode the streams work in: native or emulated (the mode
// asked for while the server has not said: Settle).
func (s *Streams) Mode() Mode { return s.be.mode() }

// bound applies the connection's per-command timeout to one round trip.
func (s *Streams) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.Conn.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return s.Conn.Ctx(ctx)
}

// AddOptions say how Add sends: Durability waits after each round trip;
// Retries resends after a network error (a repeat is its own duplicate),
// and while a slot moves for the connection's timeout; OnRetry hears of
// each (attempt 0: a moving slot's first reply).
type AddOptions struct {
	Durability redisconn.Durability
	Retries    int
	OnRetry    func(attempt int, err error)
	// NoOutcome: the entry IDs suffice (xadd's raw output); natively
	// Duplicate is then not asked, and may be false.
	NoOutcome bool
	check     bool // CheckAdd: a native transaction queued, then refused
}

// Add performs idempotent adds, one round trip per run (SameRun, at most
// MaxRun), validated first; later duplicates dedupe (R11). A failure at i
// returns the results before i and a *BatchError (a single add: its own):
// NOMKSTREAM on no stream is exit.NotFound, WRONGTYPE exit.Data. An add
// not acknowledged comes with a *redisconn.NotAckedError, never retried.
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
	for i := range reqs {
		if err := s.admissible(ctx, &reqs[i]); err != nil {
			valid, verr = i, fail(i, err)
			break
		}
	}
	out := make([]AddResult, 0, valid)
	for start := 0; start < valid; {
		end := start + 1
		for end < valid && end-start < MaxRun && SameRun(reqs[end], reqs[start]) {
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

// CheckAdd adds nothing: it refuses r as Add would be refused by the
// server, for a permission (NOPERM 77, a command renamed away 78) or a
// key's type (65), the way the add itself would go in the mode settled: a
// native add's transaction queued and refused, or the add script in its
// check mode (DRY: it reads, checks every command its writes need, and
// returns before its first write). A caller that must not act before it
// knows an add will go (consume's dead-letter adds) asks first. It needs
// scripts, but for a native add to a stream without emulated state.
func (s *Streams) CheckAdd(ctx context.Context, r AddRequest) error {
	err := s.admissible(ctx, &r)
	if err == nil {
		err = s.be.ready(ctx)
	}
	if err == nil {
		err = s.be.check(ctx, r)
	}
	return exit.Wrap(err, "xadd "+strconv.Quote(r.Stream))
}

// scriptCheck runs the add script of r in its check mode (CheckAdd).
func (s *Streams) scriptCheck(ctx context.Context, r AddRequest) error {
	call, _, err := s.runKeyed(ctx, redisconn.RunOpts{Key: r.Stream}, func() (*redisconn.Call, error) {
		call, _, err := s.be.addCall([]AddRequest{r}, nil, replyCheck)
		return call, err
	})
	if err == nil {
		if v, ok := call.Cmd.Val().([]any); !ok || len(v) != 1 || v[0] != "K" {
			err = exit.New(exit.Internal, "", "unexpected reply to the check of an add: %v", call.Cmd.Val())
		}
	}
	return scriptErr(err)
}

// admissible refuses, before anything is sent, a request the server or the
// mode would refuse whole: its arguments (R12), a bulk over the server's
// proto-max-bulk-len, more fields than the mode takes.
func (s *Streams) admissible(ctx context.Context, r *AddRequest) error {
	err := r.Validate()
	if err == nil {
		err = s.checkBulk(ctx, r)
	}
	if err == nil {
		err = s.be.fits(r)
	}
	return err
}

// MaxRun bounds the adds of one round trip, so one script call or MULTI
// never blocks the server for long.
const MaxRun = 1000

// SameRun reports whether two requests can share one round trip: the same
// stream, kind of iid and options.
func SameRun(r, o AddRequest) bool {
	return r.Stream == o.Stream && r.NoMkStream == o.NoMkStream && r.MaxLen == o.MaxLen &&
		r.MinID == o.MinID && r.Approx == o.Approx && r.Limit == o.Limit && r.Auto == o.Auto && r.Deletion == o.Deletion
}

// errNoStream is the NOMKSTREAM outcome on a missing stream (R9).
func errNoStream() error {
	return exit.New(exit.NotFound, "", "stream does not exist")
}

// Info reads a stream's IDMP view (missing: exit.NotFound). Its errors name
// nothing: the calling command does.
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

// CfgSet sets IDMP-DURATION and/or IDMP-MAXSIZE (0 keeps); the current
// values send nothing, a change clears every pid's iids (R7).
func (s *Streams) CfgSet(ctx context.Context, stream string, duration, maxsize int64) (CfgResult, error) {
	if err := validateCfg(duration, maxsize); err != nil {
		return CfgResult{}, exit.Wrap(err, "cfgset "+strconv.Quote(stream))
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	res, err := s.be.cfgSet(ctx, stream, duration, maxsize)
	return res, exit.Wrap(err, "cfgset "+strconv.Quote(stream))
}

// ClearTracking forgets the iids of pid ("" all; natively only all),
// keeping settings, counters and entries (purge --stream).
func (s *Streams) ClearTracking(ctx context.Context, stream, pid string) (int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	n, err := s.be.clear(ctx, stream, pid)
	return n, exit.Wrap(err, "purge --stream "+strconv.Quote(stream))
}

// ServerDefaults are the settings a stream gets at its first idempotent add
// (natively CONFIG GET stream-idmp-*, emulated idmpctl's defaults key).
func (s *Streams) ServerDefaults(ctx context.Context) (duration, maxsize int64, err error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.be.defaults(ctx)
}

// minProtoMaxBulkLen is the least proto-max-bulk-len a server takes (1mb):
// only a longer argument makes checkBulk ask the server.
const minProtoMaxBulkLen = 1 << 20

// checkBulk refuses (65) an argument over proto-max-bulk-len, for which the
// server would close the connection; it asks only past 1 MiB.
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
