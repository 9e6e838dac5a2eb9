// Package health turns what inspect reads into the lints operators need to
// see: it gathers the facts (read.go: the server's defaults, eviction
// policy, role and, with native IDMP, the settings of known IDMP bugs),
// and lints them with pure functions of those facts (inputs in, findings
// out). It sits in ops because its inputs are ops' results (stream.Info,
// redisconn.ServerFacts) and its gathering is Redis round trips; like all
// of ops it never prints.
package health

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
)

// Lint is one finding: a stable code for scripts and a sentence for people.
type Lint struct {
	Code    string `json:"code"`
	Level   string `json:"level"` // warn or info
	Message string `json:"message"`
}

// SaturationRatio is how full (iids-tracked / (pids x maxsize)) a stream must
// be, with evictions happening, to be called saturated.
const SaturationRatio = 0.9

// ClockTolerance is how far a last-generated-id may lead the server clock.
const ClockTolerance = time.Second

// StreamContext is what the lints need besides the stream itself.
type StreamContext struct {
	DefaultDuration, DefaultMaxSize int64
	Role                            string // master, slave/replica
	Eviction                        redisconn.Eviction
	// Server are the server's facts, read on servers with native IDMP
	// (nil otherwise): the stream view then carries the server's lints too.
	Server *redisconn.ServerFacts
}

// Stream lints a stream's IDMP state.
func Stream(i stream.Info, c StreamContext) []Lint {
	var out []Lint
	add := func(code, level, format string, args ...any) {
		out = append(out, Lint{Code: code, Level: level, Message: fmt.Sprintf(format, args...)})
	}
	if i.Inconsistent != "" {
		add("inconsistent", "warn", "part of the emulated IDMP state is missing (evicted, or deleted by hand): %s; dedupe still acts on what is left, the counts shown are of what is left, and retries of the iids whose state is gone add them again",
			i.Inconsistent)
	}
	if i.Mode == "emulated" && !i.Token && i.Inconsistent == "" {
		add("no-token", "info", "this emulated state has no liveness token (a consumer group idmpctl:<id> on the stream): it was written by a user who may not XGROUP CREATE, before idmpctl had tokens, or CONFIG SET gave the stream its settings; so a stream deleted and rebuilt with the very same entries by another client (not through idmpctl exec) would be taken for this one, and keep its settings and iids; an idempotent add by a user who may XGROUP CREATE adds one")
	}
	if c.Eviction.Risky() {
		add("eviction", "warn", "%s", c.Eviction.Warning())
	}
	if i.Mode == "none" {
		add("not-idempotent", "info", "never written idempotently: no IDMP state (the first idempotent add uses IDMP-DURATION %d, IDMP-MAXSIZE %d)", i.IDMPDuration, i.IDMPMaxSize)
	}
	capacity := i.PIDsTracked * i.IDMPMaxSize
	if capacity > 0 && float64(i.IIDsTracked) >= SaturationRatio*float64(capacity) && i.IIDsAdded > i.IIDsTracked {
		// Eviction by count is how calc-maxsize sizes a stream (its
		// interplay line): a notice of the window, not a warning. An
		// estimate as long as IDMP-DURATION is the rate of older entries
		// than the ones evicting now: none is said then.
		about, pids := "", "pids"
		if window, ok := countWindow(i, capacity); ok && window < time.Duration(i.IDMPDuration)*time.Second {
			about = fmt.Sprintf(" (about %s at the rate of the %d entries the stream holds)", duration.Format(window), i.Length)
		}
		if i.PIDsTracked == 1 {
			pids = "pid"
		}
		add("saturated", "info", "saturated: %d of %d iid slots (%d %s x maxsize %d) in use while iids-added climbs: iids are evicted by count, so a retry is recognised within %d adds of its pid after its original%s, not for IDMP-DURATION %ds; normal for a stream whose IDMP-MAXSIZE covers its producers' mark-delay (calc-maxsize): raise IDMP-MAXSIZE only if a producer may take longer than that to mark a message sent",
			i.IIDsTracked, capacity, i.PIDsTracked, pids, i.IDMPMaxSize, i.IDMPMaxSize, about, i.IDMPDuration)
	}
	if i.LastIDAheadOfClock(ClockTolerance.Milliseconds()) {
		add("clock-ahead", "warn", "last-generated-id %s is ahead of the server clock (%d ms): iids are not expired by IDMP-DURATION until the clock catches up (an open upstream bug: https://github.com/redis/redis/issues/15836)",
			i.LastGeneratedID, i.ServerTimeMS)
	}
	if i.Mode != "none" && (i.IDMPDuration != c.DefaultDuration || i.IDMPMaxSize != c.DefaultMaxSize) {
		add("non-default", "info", "settings differ from the server defaults (IDMP-DURATION %d, IDMP-MAXSIZE %d)", c.DefaultDuration, c.DefaultMaxSize)
	}
	if c.Role == "slave" || c.Role == "replica" {
		add("replica", "warn", "read from a replica: idempotent adds go to the primary, and what is shown may lag it")
	}
	if i.NotAtomic {
		add("not-atomic", "info", "read with plain commands (this user may not run scripts, or the server renamed EVALSHA away): not one atomic snapshot, so the counts can be off by the adds made while it was read")
	}
	switch {
	case i.OtherMode == "emulated":
		add("mixed-modes", "warn", "this stream still holds emulated IDMP state (written before an upgrade, or with --mode emulated): idmpctl's adds on this server answer its live iids from it until it expires, other clients' XADD IDMP do not; move it into native tracking with 'idmpctl migrate %s' (try --dry-run first)", shellQuote(i.Stream))
	case i.OtherMode == "native":
		add("mixed-modes", "warn", "this stream also holds native IDMP tracking, which emulated adds (--mode emulated) do not consult: stop adding with --mode emulated, and move the emulated state into native tracking with 'idmpctl migrate %s' (try --dry-run first)", shellQuote(i.Stream))
	case i.OtherMode != "":
		add("mixed-modes", "warn", "this stream also holds %s IDMP state: adds in one mode do not dedupe against the other", i.OtherMode)
	}
	if c.Server != nil {
		streamBugs(i, c.Server, add)
		out = append(out, Server(*c.Server)...)
	}
	return out
}

// countWindow estimates how long capacity idempotent adds take at the rate
// of the entries the stream holds (their count over the span of their
// IDs' times, the share of idempotent ones from iids-added/entries-added):
// how long an iid stays tracked when evicted by count. false when the IDs
// tell no rate (one entry, one millisecond, IDs not in the server's past).
func countWindow(i stream.Info, capacity int64) (time.Duration, bool) {
	ms := func(id string) int64 { n, _ := strconv.ParseInt(strings.SplitN(id, "-", 2)[0], 10, 64); return n }
	first, last := ms(i.FirstID), ms(i.LastID)
	if i.Length < 2 || first <= 0 || last <= first || last > i.ServerTimeMS+ClockTolerance.Milliseconds() {
		return 0, false
	}
	share := 1.0
	if i.EntriesAdded > i.IIDsAdded && i.IIDsAdded > 0 {
		share = float64(i.IIDsAdded) / float64(i.EntriesAdded)
	}
	d := time.Duration(float64(capacity) * float64(last-first) / (float64(i.Length-1) * share) * float64(time.Millisecond))
	if d < 10*time.Second {
		return max(d.Round(time.Millisecond), time.Millisecond), true
	}
	return d.Round(time.Second), true
}

// shellQuote quotes a stream name for a command line when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:/@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
