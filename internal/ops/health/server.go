package health

// Lints for known bugs of Redis 8.6's native IDMP, as pure functions of the
// server's facts (redisconn.ReadServerFacts) and a stream's view. Each
// names the release that fixed it, or the open upstream issue (clock-ahead:
// redis/redis#15836; pids-leaked: redis/redis#15840).

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
)

// IDMPFixedIn is the Redis release that fixed the 8.6 IDMP bugs of AOF
// rewrites, swapdb loading and iid expiry after a restart.
const IDMPFixedIn = "8.6.2"

// Server lints the facts of a server with native IDMP: settings under which
// a release before IDMPFixedIn loses or corrupts IDMP state, and those
// under which every release so far (8.6.3 included) can lose or
// duplicate an entry added around an iid's expiry (expiryUnlogged). A
// server without native IDMP gets none.
func Server(f redisconn.ServerFacts) []Lint {
	var out []Lint
	add := func(code, level, format string, args ...any) {
		out = append(out, Lint{Code: code, Level: level, Message: fmt.Sprintf(format, args...)})
	}
	if !f.NativeIDMP || f.Product != "" && f.Product != "redis" {
		return nil
	}
	before, known := idmpBugRelease(f)
	switch {
	case !known:
		add("idmp-bugs-unchecked", "info", "server version unknown (INFO not allowed?): the lints for IDMP bugs fixed in Redis %s were not checked", IDMPFixedIn)
	case before:
		fixedBugs(f, add)
	}
	for _, n := range f.Nodes {
		expiryUnlogged(f, n, add)
	}
	return out
}

// expiryUnlogged lints a node where native IDMP's expiry, which no AOF or
// replication stream records (open upstream, 8.6.3 included), can make a
// copy differ: an add of an iid just expired on the primary is dropped as a
// duplicate by an AOF load or a replica still tracking it; a retry the
// primary dedupes is added again by a replica that expired it
// (e2e/native_expiry_test.go).
func expiryUnlogged(f redisconn.ServerFacts, n redisconn.NodeFacts, add func(code, level, format string, args ...any)) {
	var how []string
	if n.Config != nil && yes(n.Config["appendonly"]) {
		how = append(how, "with appendonly yes, an iid added again after IDMP-DURATION expired it is replayed from the AOF as a duplicate of its first add, so that entry is lost on a restart")
	}
	switch {
	case n.Role == "slave" || n.Role == "replica":
		how = append(how, "as a replica, it can drop an add its primary made just after the iid expired there, or add a retry the primary deduplicated, under an ID of its own: a failover to it loses or duplicates that entry")
	case n.Replicas > 0:
		how = append(how, fmt.Sprintf("with %s, an add made around an iid's expiry can be dropped by a replica, or a retry the primary deduplicated added there again: a failover loses or duplicates that entry", replicas(n.Replicas)))
	}
	if len(how) > 0 {
		add("idmp-expiry-unlogged", "warn", "%sRedis %s expires iids on each server's own clock and records no expiry in the AOF or for replicas (an open upstream bug): %s; send retries well within IDMP-DURATION, and never reuse an iid for another message",
			nodePrefix(n), f.Version, strings.Join(how, "; "))
	}
}

// fixedBugs lints the settings under which a release before IDMPFixedIn
// loses or corrupts IDMP state.
func fixedBugs(f redisconn.ServerFacts, add func(code, level, format string, args ...any)) {
	for _, n := range f.Nodes {
		where := nodePrefix(n)
		if n.Config == nil {
			add("idmp-bugs-unchecked", "info", "%sCONFIG GET not allowed (%s): appendonly, aof-use-rdb-preamble and repl-diskless-load were not checked for IDMP bugs fixed in Redis %s",
				where, n.ConfigError, IDMPFixedIn)
			continue
		}
		if yes(n.Config["appendonly"]) && !yes(n.Config["aof-use-rdb-preamble"]) {
			add("aof-rewrite-idmp", "warn", "%sRedis %s with appendonly yes and aof-use-rdb-preamble no: an AOF rewrite does not keep IDMP state safely, so tracked iids can be lost or the AOF fail to load (fixed in Redis %s); upgrade, or set aof-use-rdb-preamble yes",
				where, f.Version, IDMPFixedIn)
		}
		if strings.EqualFold(n.Config["repl-diskless-load"], "swapdb") {
			add("swapdb-idmp", "warn", "%sRedis %s with repl-diskless-load swapdb: a replica loading a full sync can lose IDMP tracking, or crash (fixed in Redis %s); upgrade, or set repl-diskless-load disabled",
				where, f.Version, IDMPFixedIn)
		}
	}
}

// streamBugs lints a native stream for the IDMP bugs its counters show.
func streamBugs(i stream.Info, f *redisconn.ServerFacts, add func(code, level, format string, args ...any)) {
	if i.Mode != "native" {
		return
	}
	if before, known := idmpBugRelease(*f); before && known && i.IIDsTracked > 0 && i.IDMPDuration > 0 {
		if idle, ok := i.IdleMs(); ok && idle > i.IDMPDuration*1000 {
			add("iids-not-expiring", "warn", "iids-tracked %d on a stream idle for %s, longer than IDMP-DURATION %ds: Redis %s stops expiring iids after a restart (fixed in Redis %s), so they stay until MAXSIZE evicts them; upgrade, or clear them (idmpctl purge --stream)",
				i.IIDsTracked, duration.Age(time.Duration(idle)*time.Millisecond), i.IDMPDuration, f.Version, IDMPFixedIn)
		}
	}
	if i.PIDsTracked > i.IIDsTracked {
		add("pids-leaked", "warn", "pids-tracked %d is above iids-tracked %d: producers left behind by XADD ... IDMP calls the server rejected (an open upstream bug: https://github.com/redis/redis/issues/15840); each costs memory until the stream's IDMP state is cleared",
			i.PIDsTracked, i.IIDsTracked)
	}
}

// idmpBugRelease says whether the server is a Redis release before
// IDMPFixedIn; known is false when its version cannot be read. Other
// products (Valkey) have none of these bugs.
func idmpBugRelease(f redisconn.ServerFacts) (before, known bool) {
	if f.Product != "" && f.Product != "redis" {
		return false, true
	}
	v, ok := redisconn.ParseVersion(f.Version)
	if !ok {
		return false, false
	}
	fixed, _ := redisconn.ParseVersion(IDMPFixedIn)
	return slices.Compare(v[:], fixed[:]) < 0, true
}

func yes(s string) bool { return strings.EqualFold(s, "yes") }

// nodePrefix names the node a lint is about, when it has an address.
func nodePrefix(n redisconn.NodeFacts) string {
	if n.Addr == "" {
		return ""
	}
	return "node " + n.Addr + ": "
}

// replicas is "1 replica", "2 replicas".
func replicas(n int) string {
	if n == 1 {
		return "1 replica"
	}
	return strconv.Itoa(n) + " replicas"
}
