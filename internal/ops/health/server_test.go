package health

import (
	"strconv"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
)

func facts(version string, config map[string]string) redisconn.ServerFacts {
	return redisconn.ServerFacts{Product: "redis", Version: version, NativeIDMP: true, Nodes: []redisconn.NodeFacts{{Config: config}}}
}

// safeConfig lints nothing: without the AOF (and without replicas), no
// copy of the stream replays or applies what the server did.
var safeConfig = map[string]string{"appendonly": "no", "aof-use-rdb-preamble": "yes", "repl-diskless-load": "disabled"}

func with(k, v string) map[string]string {
	c := map[string]string{}
	for k2, v2 := range safeConfig {
		c[k2] = v2
	}
	c[k] = v
	return c
}

// aofNoPreamble is appendonly yes with aof-use-rdb-preamble no.
func aofNoPreamble() map[string]string {
	c := with("appendonly", "yes")
	c["aof-use-rdb-preamble"] = "no"
	return c
}

// The server lints, one row a case: version, settings, the codes expected.
func TestServerLints(t *testing.T) {
	aofNoPreamble := aofNoPreamble()
	node := func(version string, n redisconn.NodeFacts) redisconn.ServerFacts {
		return redisconn.ServerFacts{Product: "redis", Version: version, NativeIDMP: true, Nodes: []redisconn.NodeFacts{n}}
	}
	for _, c := range []struct {
		name  string
		facts redisconn.ServerFacts
		want  string
	}{
		{"safe settings", facts("8.6.1", safeConfig), ""},
		{"safe settings, 8.6.3", facts("8.6.3", safeConfig), ""},
		// The open upstream bug: any release, AOF or replicas.
		{"aof", facts("8.6.3", with("appendonly", "yes")), "idmp-expiry-unlogged"},
		{"aof, a later release", facts("8.8.0", with("appendonly", "yes")), "idmp-expiry-unlogged"},
		{"replicas", node("8.6.3", redisconn.NodeFacts{Config: safeConfig, Role: "master", Replicas: 2}), "idmp-expiry-unlogged"},
		{"a replica", node("8.6.3", redisconn.NodeFacts{Config: safeConfig, Role: "slave"}), "idmp-expiry-unlogged"},
		{"no replicas", node("8.6.3", redisconn.NodeFacts{Config: safeConfig, Role: "master"}), ""},
		{"replicas, config refused", node("8.6.3", redisconn.NodeFacts{ConfigError: "NOPERM", Role: "master", Replicas: 1}), "idmp-expiry-unlogged"},
		{"aof without preamble", facts("8.6.1", aofNoPreamble), "aof-rewrite-idmp,idmp-expiry-unlogged"},
		{"aof without preamble, fixed release", facts("8.6.2", aofNoPreamble), "idmp-expiry-unlogged"},
		{"aof without preamble, later release", facts("8.8.0", aofNoPreamble), "idmp-expiry-unlogged"},
		{"aof off", facts("8.6.0", map[string]string{"appendonly": "no", "aof-use-rdb-preamble": "no", "repl-diskless-load": "disabled"}), ""},
		{"swapdb", facts("8.6.1", with("repl-diskless-load", "swapdb")), "swapdb-idmp"},
		{"swapdb, fixed release", facts("8.6.2", with("repl-diskless-load", "swapdb")), ""},
		{"on-empty-db", facts("8.6.0", with("repl-diskless-load", "on-empty-db")), ""},
		{"both, a release candidate", facts("8.6.1-rc1", map[string]string{"appendonly": "yes", "aof-use-rdb-preamble": "no", "repl-diskless-load": "swapdb"}), "aof-rewrite-idmp,swapdb-idmp,idmp-expiry-unlogged"},
		{"config refused", redisconn.ServerFacts{Product: "redis", Version: "8.6.1", NativeIDMP: true,
			Nodes: []redisconn.NodeFacts{{ConfigError: "NOPERM User mon has no permissions to run the 'config|get' command"}}}, "idmp-bugs-unchecked"},
		{"config refused, fixed release", redisconn.ServerFacts{Product: "redis", Version: "8.6.2", NativeIDMP: true,
			Nodes: []redisconn.NodeFacts{{ConfigError: "NOPERM"}}}, ""},
		{"version unknown", facts("", aofNoPreamble), "idmp-bugs-unchecked,idmp-expiry-unlogged"},
		{"no native IDMP", redisconn.ServerFacts{Product: "redis", Version: "7.0.15", Nodes: []redisconn.NodeFacts{{Config: aofNoPreamble}}}, ""},
		{"valkey", redisconn.ServerFacts{Product: "valkey", Version: "9.0.0", NativeIDMP: true, Nodes: []redisconn.NodeFacts{{Config: aofNoPreamble}}}, ""},
		{"cluster: one node of three", redisconn.ServerFacts{Product: "redis", Version: "8.6.1", NativeIDMP: true, Nodes: []redisconn.NodeFacts{
			{Addr: "10.0.0.1:6379", Config: safeConfig}, {Addr: "10.0.0.2:6379", Config: with("repl-diskless-load", "swapdb")}, {Addr: "10.0.0.3:6379", Config: safeConfig}}}, "swapdb-idmp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Server(c.facts)
			if codes(got) != c.want {
				t.Errorf("lints %q, want %q: %+v", codes(got), c.want, got)
			}
			for _, l := range got {
				switch l.Code {
				case "idmp-bugs-unchecked":
				case "idmp-expiry-unlogged":
					if !strings.Contains(l.Message, "(an open upstream bug)") || l.Level != "warn" {
						t.Errorf("%s: %q does not say it is open upstream", l.Code, l.Message)
					}
				default:
					if !strings.Contains(l.Message, "fixed in Redis 8.6.2") || l.Level != "warn" {
						t.Errorf("%s: %q does not name the fixed release", l.Code, l.Message)
					}
				}
			}
		})
	}
	cl := Server(redisconn.ServerFacts{Product: "redis", Version: "8.6.1", NativeIDMP: true,
		Nodes: []redisconn.NodeFacts{{Addr: "10.0.0.2:6379", Config: with("repl-diskless-load", "swapdb")}}})
	if len(cl) != 1 || !strings.HasPrefix(cl[0].Message, "node 10.0.0.2:6379: Redis 8.6.1 with repl-diskless-load swapdb") {
		t.Errorf("a cluster node's lint does not name it: %+v", cl)
	}
	// What each way of losing an entry is, in the words of the lint.
	for _, c := range []struct {
		n    redisconn.NodeFacts
		want []string
	}{
		{redisconn.NodeFacts{Addr: "10.0.0.1:6379", Config: with("appendonly", "yes"), Role: "master", Replicas: 1},
			[]string{"node 10.0.0.1:6379: Redis 8.6.3 expires iids on each server's own clock and records no expiry in the AOF or for replicas (an open upstream bug): ",
				"with appendonly yes, an iid added again after IDMP-DURATION expired it is replayed from the AOF as a duplicate of its first add, so that entry is lost on a restart; ",
				"with 1 replica, an add made around an iid's expiry can be dropped by a replica, or a retry the primary deduplicated added there again: a failover loses or duplicates that entry; ",
				"send retries well within IDMP-DURATION, and never reuse an iid for another message"}},
		{redisconn.NodeFacts{Config: safeConfig, Role: "slave"}, []string{"as a replica, it can drop an add its primary made just after the iid expired there"}},
		{redisconn.NodeFacts{Config: safeConfig, Role: "master", Replicas: 3}, []string{"with 3 replicas, "}},
	} {
		got := Server(node("8.6.3", c.n))
		for _, w := range c.want {
			if len(got) != 1 || !strings.Contains(got[0].Message, w) {
				t.Errorf("%+v: lints %+v lack %q", c.n, got, w)
			}
		}
	}
}

// The stream lints for IDMP bugs, from the stream's counters and idle time
// (server time minus its last ID) and the server's version.
func TestStreamBugLints(t *testing.T) {
	const now = 1_763_740_800_000
	native := stream.Info{Mode: "native", IDMPDuration: 100, IDMPMaxSize: 100, PIDsTracked: 1, IIDsTracked: 5,
		IIDsAdded: 5, ServerTimeMS: now, LastGeneratedID: strconv.FormatInt(now-10_000, 10) + "-0"} // idle 10 s
	base := StreamContext{DefaultDuration: 100, DefaultMaxSize: 100, Role: "master"}
	ctx := func(version string) StreamContext {
		c := base
		f := facts(version, safeConfig)
		c.Server = &f
		return c
	}
	idle := func(i stream.Info, ms int64) stream.Info {
		i.LastGeneratedID = strconv.FormatInt(now-ms, 10) + "-0"
		return i
	}
	emulated := native
	emulated.Mode, emulated.Token = "emulated", true
	for _, c := range []struct {
		name string
		info stream.Info
		ctx  StreamContext
		want string
	}{
		{"healthy", native, ctx("8.6.1"), ""},
		{"idle past duration, iids left", idle(native, 101_000), ctx("8.6.1"), "iids-not-expiring"},
		{"idle exactly duration", idle(native, 100_000), ctx("8.6.1"), ""},
		{"idle past duration, fixed release", idle(native, 101_000), ctx("8.6.2"), ""},
		{"idle past duration, no iids", func() stream.Info { i := idle(native, 500_000); i.IIDsTracked, i.PIDsTracked = 0, 0; return i }(), ctx("8.6.1"), ""},
		{"idle, version unknown", idle(native, 500_000), ctx(""), "idmp-bugs-unchecked"},
		{"pids above iids", func() stream.Info { i := native; i.PIDsTracked = 7; return i }(), ctx("8.6.2"), "pids-leaked"},
		{"pids equal iids", func() stream.Info { i := native; i.PIDsTracked = 5; return i }(), ctx("8.6.2"), ""},
		{"emulated state is never linted for them", func() stream.Info { i := idle(emulated, 500_000); i.PIDsTracked = 9; return i }(), ctx("8.6.1"), ""},
		{"no server facts (not native)", idle(native, 500_000), base, ""},
		{"last id ahead of the clock", func() stream.Info { i := native; i.LastGeneratedID = strconv.FormatInt(now+5000, 10) + "-0"; return i }(), ctx("8.6.1"), "clock-ahead"},
		{"server lints come along", native, func() StreamContext {
			c := base
			f := facts("8.6.0", aofNoPreamble())
			c.Server = &f
			return c
		}(), "aof-rewrite-idmp,idmp-expiry-unlogged"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := codes(Stream(c.info, c.ctx)); got != c.want {
				t.Errorf("lints %q, want %q", got, c.want)
			}
		})
	}
	l := Stream(idle(native, 3*3600_000), ctx("8.6.1"))
	if len(l) != 1 || !strings.Contains(l[0].Message, "iids-tracked 5 on a stream idle for 3h, longer than IDMP-DURATION 100s: Redis 8.6.1 stops expiring iids after a restart (fixed in Redis 8.6.2)") {
		t.Errorf("message: %+v", l)
	}
}
