package keyspace

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/redis/go-redis/v9"
)

// keysFixture is one key written with raw commands the way its library
// writes it, and what inspect must make of it.
type keysFixture struct {
	key    string
	cmds   [][]any
	format records.Format
	status records.Status
	flags  []records.Flag
}

// writeKeysFixtures writes a record of every known format (and a few
// non-records) relative to the server's clock, and returns them.
func writeKeysFixtures(t testing.TB, c redis.UniversalClient) []keysFixture {
	t.Helper()
	ctx := context.Background()
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).UnixMilli(), 10) }
	sec := func(d time.Duration) int64 { return now.Add(d).Unix() }
	claim := func(key, status string, lease, updated time.Duration, extra ...any) []any {
		return append([]any{"HSET", key, "status", status, "owner", "web-1:4242", "token", "2", "attempts", "2",
			"lease_until", ms(lease), "created", ms(-time.Hour), "updated", ms(updated)}, extra...)
	}
	fx := []keysFixture{
		{key: "idem:live", cmds: [][]any{claim("idem:live", "PROCESSING", time.Minute, -time.Second), {"PEXPIRE", "idem:live", 86400000}},
			format: records.FormatIdmpctl, status: records.Processing},
		{key: "idem:stale", cmds: [][]any{claim("idem:stale", "PROCESSING", -time.Second, -2*time.Minute), {"PEXPIRE", "idem:stale", 86400000}},
			format: records.FormatIdmpctl, status: records.Processing, flags: []records.Flag{records.FlagStale}},
		{key: "idem:done", cmds: [][]any{claim("idem:done", "COMPLETED", -time.Minute, -2*time.Hour, "result", "ok"), {"PEXPIRE", "idem:done", 86400000}},
			format: records.FormatIdmpctl, status: records.Completed},
		{key: "idem:failed", cmds: [][]any{claim("idem:failed", "FAILED", -time.Minute, -time.Minute, "error", "exit status 1")},
			format: records.FormatIdmpctl, status: records.Failed, flags: []records.Flag{records.FlagNoTTL}},
		{key: "jobs:h1", cmds: [][]any{{"HSET", "jobs:h1", "state", "STARTED", "worker", "w-1", "started_at", sec(-time.Minute)}, {"EXPIRE", "jobs:h1", 600}},
			format: records.FormatHash, status: records.Processing},
		{key: "json:1", cmds: [][]any{{"SET", "json:1", fmt.Sprintf(`{"status":"PROCESSING","owner":"c-1","timestamp":%s}`, ms(-10*time.Second)), "EX", 600}},
			format: records.FormatJSON, status: records.Processing},
		{key: "json:2", cmds: [][]any{{"SET", "json:2", `{"state":"DONE"}`, "EX", 600}},
			format: records.FormatJSON, status: records.Completed},
		{key: "pt:fn#abc", cmds: [][]any{{"SET", "pt:fn#abc", fmt.Sprintf(`{"status": "INPROGRESS", "expiration": %d, "in_progress_expiration": %s, "validation": "5eff007a"}`,
			sec(time.Hour), ms(-time.Second)), "EX", 3600}},
			format: records.FormatPowertools, status: records.Processing, flags: []records.Flag{records.FlagStale}},
		{key: "pt:fn#abc:lock", cmds: [][]any{{"SET", "pt:fn#abc:lock", "True", "EX", 10, "NX"}},
			format: records.FormatPowertoolsLock, status: records.Locked},
		{key: "pt:fn#gone:lock", cmds: [][]any{{"SET", "pt:fn#gone:lock", "true", "EX", 10, "NX"}},
			format: records.FormatPowertoolsLock, status: records.Locked, flags: []records.Flag{records.FlagOrphanLock}},
		{key: "pt:fn#old", cmds: [][]any{{"SET", "pt:fn#old", fmt.Sprintf(`{"data": "{\"statusCode\": 200}", "status": "COMPLETED", "expiration": %d}`, sec(-time.Minute)), "EX", 60}},
			format: records.FormatPowertools, status: records.Expired, flags: []records.Flag{records.FlagExpired}},
		{key: "m:1", cmds: [][]any{{"SET", "m:1", "1"}},
			format: records.FormatMarker, status: records.Completed, flags: []records.Flag{records.FlagNoTTL}},
		{key: "m:p", cmds: [][]any{{"SET", "m:p", "PROCESSING", "EX", 3600}},
			format: records.FormatMarker, status: records.Processing},
		{key: "camel-repo:order-17", cmds: [][]any{{"SET", "camel-repo:order-17", "order-17", "NX", "EX", 3600}},
			format: records.FormatCamel, status: records.Completed},
		{key: "camel-repo", cmds: [][]any{{"SADD", "camel-repo", "order-1", "order-2", "order-3"}},
			format: records.FormatCamel, status: records.Completed, flags: []records.Flag{records.FlagNoTTL}},
		{key: "events", cmds: [][]any{{"XADD", "events", "*", "f", "v"}},
			format: records.FormatStream, status: "", flags: []records.Flag{records.FlagNoTTL}},
		{key: "other:list", cmds: [][]any{{"RPUSH", "other:list", "a", "b"}, {"EXPIRE", "other:list", 600}},
			format: records.FormatUnknown, status: records.Unknown},
		{key: "other:str", cmds: [][]any{{"SET", "other:str", "hello world"}},
			format: records.FormatUnknown, status: records.Unknown, flags: []records.Flag{records.FlagNoTTL}},
	}
	for _, f := range fx {
		for _, cmd := range f.cmds {
			if err := c.Do(ctx, cmd...).Err(); err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
		}
	}
	return fx
}

// keysExist reports which of keys exist.
func keysExist(t testing.TB, c redis.UniversalClient, keys ...string) map[string]bool {
	t.Helper()
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		n, err := c.Exists(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[k] = n == 1
	}
	return out
}

// fillClaims writes n idmpctl records (COMPLETED, with a TTL) named
// prefix0..prefixN-1 in pipelines.
func fillClaims(t testing.TB, c redis.UniversalClient, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	const chunk = 5000
	for start := 0; start < n; start += chunk {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := start; i < min(n, start+chunk); i++ {
				k := prefix + strconv.Itoa(i)
				p.HSet(ctx, k, "status", "COMPLETED", "owner", "bench:1", "token", "1", "attempts", "1",
					"lease_until", "1700000060000", "created", "1700000000000", "updated", "1700000030000")
				p.PExpire(ctx, k, 24*time.Hour)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
