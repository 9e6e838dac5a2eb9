package keyspace

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// purgeRun purges with opts and returns the summary and the keys per
// outcome, sorted.
func purgeRun(t *testing.T, c *redisconn.Conn, opts PurgeOptions) (PurgeSummary, map[PurgeOutcome][]string) {
	t.Helper()
	items := map[PurgeOutcome][]string{}
	sum, err := Purge(context.Background(), c, opts, func(it PurgeItem) {
		items[it.Outcome] = append(items[it.Outcome], it.Record.Key)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, keys := range items {
		slices.Sort(keys)
	}
	if sum.Scanned != sum.Kept+sum.Matched+sum.PastLimit {
		t.Errorf("scanned %d != kept %d + matched %d + past limit %d", sum.Scanned, sum.Kept, sum.Matched, sum.PastLimit)
	}
	if !opts.DryRun && sum.Matched != sum.Deleted+sum.Changed {
		t.Errorf("matched %d != deleted %d + changed %d", sum.Matched, sum.Deleted, sum.Changed)
	}
	return sum, items
}

// fixtureKeys lists the fixtures' keys except those given.
func fixtureKeys(fx []keysFixture, except ...string) []string {
	var keys []string
	for _, f := range fx {
		if !slices.Contains(except, f.key) {
			keys = append(keys, f.key)
		}
	}
	return keys
}

func wantKeysExist(t *testing.T, c *redisconn.Conn, exist bool, keys ...string) {
	t.Helper()
	for k, ok := range keysExist(t, c.Client(), keys...) {
		if ok != exist {
			t.Errorf("%s exists = %v, want %v", k, ok, exist)
		}
	}
}

func TestPurgeDeletesOnlyMatchedRecognisedRecords(t *testing.T) {
	c, _ := redistest.Conn(t)
	fx := writeKeysFixtures(t, c.Client())
	sum, items := purgeRun(t, c, PurgeOptions{Pattern: "*", Statuses: []records.Status{records.Completed}})
	// Recognised COMPLETED records; the Camel set (a whole repository) is not
	// one without --any-type.
	want := []string{"camel-repo:order-17", "idem:done", "json:2", "m:1"}
	if !slices.Equal(items[PurgeDeleted], want) || sum.Deleted != 4 || sum.Changed != 0 || sum.Scanned != int64(len(fx)) {
		t.Errorf("deleted %v, summary %+v", items[PurgeDeleted], sum)
	}
	wantKeysExist(t, c, false, want...)
	wantKeysExist(t, c, true, fixtureKeys(fx, want...)...)

	// Without filters: every recognised record; streams, sets, unknowns stay,
	// and so do locks (only --status LOCKED selects them) and live work:
	// a claim under its lease, PROCESSING records without a deadline.
	sum, items = purgeRun(t, c, PurgeOptions{Pattern: "*"})
	kept := []string{"camel-repo", "events", "other:list", "other:str", "pt:fn#abc:lock", "pt:fn#gone:lock",
		"idem:live", "jobs:h1", "json:1", "m:p"}
	wantKeysExist(t, c, true, kept...)
	if sum.LocksKept != 2 || !strings.Contains(sum.LockReason, "--status LOCKED") {
		t.Errorf("locks kept: %+v", sum)
	}
	if sum.LiveKept != 4 {
		t.Errorf("live kept: %+v", sum)
	}
	wantKeysExist(t, c, false, fixtureKeys(fx, kept...)...)
	if len(items[PurgeDeleted]) != len(fx)-len(want)-len(kept) {
		t.Errorf("second purge deleted %v", items[PurgeDeleted])
	}
}

func TestPurgeDryRunDeletesNothing(t *testing.T) {
	c, _ := redistest.Conn(t)
	fx := writeKeysFixtures(t, c.Client())
	var hooked bool
	sum, items := purgeRun(t, c, PurgeOptions{Pattern: "idem:*", DryRun: true, BeforeDelete: func([]string) { hooked = true }})
	want := []string{"idem:done", "idem:failed", "idem:stale"} // idem:live is under its lease
	if !slices.Equal(items[PurgeWouldDelete], want) || sum.Matched != 3 || sum.LiveKept != 1 || sum.Deleted != 0 || hooked {
		t.Errorf("dry run: %v, %+v, hook called %v", items, sum, hooked)
	}
	wantKeysExist(t, c, true, fixtureKeys(fx)...)
}

func TestPurgeFilters(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	fx := writeKeysFixtures(t, c.Client())
	all := fixtureKeys(fx)

	for _, tc := range []struct {
		name string
		opts PurgeOptions
		want []string
	}{
		{"stale", PurgeOptions{Pattern: "*", Stale: true}, []string{"idem:stale", "pt:fn#abc"}},
		// idem:done was updated 2h ago; the other claims within minutes; json:1
		// has a timestamp of 10s ago. Records without a time never match.
		{"older than 1h", PurgeOptions{Pattern: "*", OlderThan: time.Hour}, []string{"idem:done"}},
		{"older than 90s", PurgeOptions{Pattern: "idem:*", OlderThan: 90 * time.Second}, []string{"idem:done", "idem:stale"}},
		{"no ttl", PurgeOptions{Pattern: "*", NoTTL: true}, []string{"idem:failed", "m:1"}},
		{"no ttl, any type", PurgeOptions{Pattern: "*", NoTTL: true, AnyType: true},
			[]string{"camel-repo", "events", "idem:failed", "m:1", "other:str"}},
		{"expired", PurgeOptions{Pattern: "pt:*", Statuses: []records.Status{records.Expired}}, []string{"pt:fn#old"}},
		{"any type unknown", PurgeOptions{Pattern: "other:*", AnyType: true}, []string{"other:list", "other:str"}},
		{"literal", PurgeOptions{Pattern: "pt:fn#abc", Literal: true}, []string{"pt:fn#abc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, items := purgeRun(t, c, PurgeOptions{Pattern: tc.opts.Pattern, Literal: tc.opts.Literal,
				Statuses: tc.opts.Statuses, Stale: tc.opts.Stale, OlderThan: tc.opts.OlderThan, NoTTL: tc.opts.NoTTL,
				AnyType: tc.opts.AnyType, DryRun: true})
			if !slices.Equal(items[PurgeWouldDelete], tc.want) {
				t.Errorf("would delete %v, want %v (%+v)", items[PurgeWouldDelete], tc.want, sum)
			}
			sum, items = purgeRun(t, c, tc.opts)
			if !slices.Equal(items[PurgeDeleted], tc.want) || sum.Changed != 0 {
				t.Errorf("deleted %v, want %v (%+v)", items[PurgeDeleted], tc.want, sum)
			}
			wantKeysExist(t, c, false, tc.want...)
			var rest []string
			for _, k := range all {
				if !slices.Contains(tc.want, k) {
					rest = append(rest, k)
				}
			}
			wantKeysExist(t, c, true, rest...)
			// Put everything back for the next case.
			if err := c.Client().Del(ctx, all...).Err(); err != nil {
				t.Fatal(err)
			}
			fx = writeKeysFixtures(t, c.Client())
		})
	}
}

// purgeHookRuns returns a BeforeDelete hook that runs cmds once, as another
// client would between the scan and the delete.
func purgeHookRuns(t *testing.T, c *redisconn.Conn, cmds ...[]any) func([]string) {
	var once sync.Once
	return func([]string) {
		once.Do(func() {
			for _, cmd := range cmds {
				if err := c.Client().Do(context.Background(), cmd...).Err(); err != nil {
					t.Errorf("%v: %v", cmd, err)
				}
			}
		})
	}
}

func TestPurgeRecheckKeepsWhatChanged(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	writeKeysFixtures(t, c.Client())

	// A worker completes its claim, a JSON record is rewritten, a marker
	// vanishes: each is counted changed, and what was rewritten survives.
	// (--force: these are live PROCESSING records.)
	sum, items := purgeRun(t, c, PurgeOptions{Pattern: "*", Force: true, BeforeDelete: purgeHookRuns(t, c,
		[]any{"HSET", "idem:live", "status", "COMPLETED", "updated", "1"},
		[]any{"SET", "json:1", `{"status":"PROCESSING","owner":"c-2"}`, "KEEPTTL"},
		[]any{"DEL", "m:p"})})
	if want := []string{"idem:live", "json:1", "m:p"}; !slices.Equal(items[PurgeChanged], want) || sum.Changed != 3 {
		t.Errorf("changed %v, want %v (%+v)", items[PurgeChanged], want, sum)
	}
	if !slices.Contains(items[PurgeDeleted], "idem:done") || sum.Deleted != sum.Matched-3 {
		t.Errorf("deleted %v (%+v)", items[PurgeDeleted], sum)
	}
	if st, _ := c.Client().HGet(ctx, "idem:live", "status").Result(); st != "COMPLETED" {
		t.Errorf("idem:live status %q", st)
	}
	wantKeysExist(t, c, true, "idem:live", "json:1")
}

func TestPurgeRecheckComparesTypeTTLAndWholeValue(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	for _, k := range []string{"n:marker", "n:other", "n:big", "n:gone", "n:keep"} {
		c.Client().Set(ctx, k, "1", 0)
	}
	c.Client().Set(ctx, "n:big", string(make([]byte, 100<<10)), 0)
	// --no-ttl: a key given a TTL in between no longer matches; a key
	// replaced by another type, or a long string changed in its last byte
	// (read whole: MaxValueBytes), is a different value.
	sum, items := purgeRun(t, c, PurgeOptions{Pattern: "n:*", NoTTL: true, AnyType: true, MaxValueBytes: 1 << 20,
		BeforeDelete: purgeHookRuns(t, c,
			[]any{"EXPIRE", "n:marker", 600},
			[]any{"DEL", "n:other"}, []any{"HSET", "n:other", "status", "DONE"},
			[]any{"SETRANGE", "n:big", 100<<10 - 1, "x"},
			[]any{"DEL", "n:gone"})})
	if want := []string{"n:big", "n:gone", "n:marker", "n:other"}; !slices.Equal(items[PurgeChanged], want) {
		t.Errorf("changed %v, want %v (%+v)", items[PurgeChanged], want, sum)
	}
	if !slices.Equal(items[PurgeDeleted], []string{"n:keep"}) {
		t.Errorf("deleted %v", items[PurgeDeleted])
	}
	wantKeysExist(t, c, true, "n:marker", "n:other", "n:big")
}

func TestPurgeLimitAndRate(t *testing.T) {
	c, _ := redistest.Conn(t)
	fillClaims(t, c.Client(), "r:", 60)

	sum, items := purgeRun(t, c, PurgeOptions{Pattern: "r:*", Limit: 7, Count: 10})
	if sum.Deleted != 7 || sum.Matched != 7 || !sum.Limited || sum.PastLimit == 0 || sum.Kept != 0 || len(items[PurgeDeleted]) != 7 {
		t.Errorf("limit: %+v", sum)
	}

	var mu sync.Mutex
	var chunks []int
	var progress []PurgeSummary
	sum, _ = purgeRun(t, c, PurgeOptions{Pattern: "r:*", MaxRate: 100, Count: 1000,
		BeforeDelete: func(keys []string) { mu.Lock(); chunks = append(chunks, len(keys)); mu.Unlock() },
		Progress:     func(s PurgeSummary) { progress = append(progress, s) }})
	if sum.Deleted != 53 || sum.Limited {
		t.Errorf("rate: %+v", sum)
	}
	// 100 keys/s goes out in chunks of 25 (four a second), not one burst.
	if slices.Max(chunks) > 25 || len(chunks) != 3 {
		t.Errorf("chunks %v", chunks)
	}
	if len(progress) == 0 || progress[len(progress)-1].Deleted != 53 {
		t.Errorf("progress %v", progress)
	}
}

func TestPurgeValidate(t *testing.T) {
	c, _ := redistest.Conn(t)
	for _, o := range []PurgeOptions{{}, {Pattern: "*", Limit: -1}, {Pattern: "*", MaxRate: -1},
		{Pattern: "*", OlderThan: -time.Second}, {Pattern: "*", Statuses: []records.Status{records.Absent}}} {
		if _, err := Purge(context.Background(), c, o, nil); exit.Code(err) != exit.Usage {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func TestPurgeSurvivesScriptFlush(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	fillClaims(t, c.Client(), "f:", 5)
	if err := c.Client().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if sum, _ := purgeRun(t, c, PurgeOptions{Pattern: "f:*"}); sum.Deleted != 5 {
		t.Errorf("after SCRIPT FLUSH: %+v", sum)
	}
}

func TestPurgeLargeHashesAreReadInPart(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	big := string(make([]byte, 10<<10))
	for _, k := range []string{"L:1", "L:2", "L:3"} {
		// A claim with a large result is hashtable-encoded: a scan reads its
		// decision fields and measures the result.
		c.Client().HSet(ctx, k, "status", "COMPLETED", "owner", "w", "token", "1", "attempts", "1",
			"lease_until", "1", "created", "1", "updated", "2", "result", big)
	}
	sum, items := purgeRun(t, c, PurgeOptions{Pattern: "L:*", BeforeDelete: purgeHookRuns(t, c,
		[]any{"HSET", "L:2", "updated", "3"},   // a decision field changed
		[]any{"HSET", "L:3", "extra", "field"}, // a field was added (HLEN)
	)})
	if !slices.Equal(items[PurgeDeleted], []string{"L:1"}) || !slices.Equal(items[PurgeChanged], []string{"L:2", "L:3"}) {
		t.Errorf("%v (%+v)", items, sum)
	}
}

// Locks: only --status LOCKED selects them; one whose TTL still runs goes
// only with --force; one without a TTL goes with --stale.
func TestPurgeLocks(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	rc := c.Client()
	for _, cmd := range [][]any{
		{"SET", "lock:idempotency:a", "1", "EX", 30},
		{"SET", "lock:idempotency:b", "4f9f7c0e-2f55-4d6c-9a1e-3d2b8f1e6c11", "PX", 5000},
		{"SET", "lock:idempotency:c", "1"},
		{"HSET", "idempotency:a", "status", "COMPLETED"},
	} {
		if err := rc.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	sum, items := purgeRun(t, c, PurgeOptions{Pattern: "*idempotency:*", Statuses: []records.Status{records.Completed}})
	if want := []string{"idempotency:a"}; !slices.Equal(items[PurgeDeleted], want) || sum.LocksKept != 3 {
		t.Errorf("purge --status COMPLETED deleted %v (%+v), want only the record", items[PurgeDeleted], sum)
	}
	sum, items = purgeRun(t, c, PurgeOptions{Pattern: "lock:*", Statuses: []records.Status{records.Locked}})
	if len(items[PurgeDeleted]) != 0 || sum.LocksKept != 3 || !strings.Contains(sum.LockReason, "--force") {
		t.Errorf("--status LOCKED deleted %v (%+v): live locks go only with --force", items[PurgeDeleted], sum)
	}
	_, items = purgeRun(t, c, PurgeOptions{Pattern: "lock:*", Statuses: []records.Status{records.Locked}, Stale: true})
	if want := []string{"lock:idempotency:c"}; !slices.Equal(items[PurgeDeleted], want) {
		t.Errorf("--stale deleted %v, want the lock without a TTL", items[PurgeDeleted])
	}
	_, items = purgeRun(t, c, PurgeOptions{Pattern: "lock:*", Statuses: []records.Status{records.Locked}, Force: true})
	if want := []string{"lock:idempotency:a", "lock:idempotency:b"}; !slices.Equal(items[PurgeDeleted], want) {
		t.Errorf("--force deleted %v, want %v", items[PurgeDeleted], want)
	}
}
