package keyspace

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// CompleteKeys: the names that start with the prefix, taken literally
// (glob characters too), sorted; none a shell would split, none of
// idmpctl's IDMP state; and a bounded look: SCAN over at most 1,000 keys,
// however many there are.
func TestCompleteKeys(t *testing.T) {
	t.Parallel()
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	rdb := c.Client()
	for _, k := range []string{"job:1", "job:2", "job*x", "jobs", "other", "job 3", "job:\x01"} {
		if err := rdb.Set(ctx, k, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	l, err := idmp.StateKeys("job:stream", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, l.Meta, "duration", "100").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.SAdd(ctx, l.PIDs, "p").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "job:stream", Values: []string{"f", "v"}}).Err(); err != nil {
		t.Fatal(err)
	}

	got, err := CompleteKeys(ctx, c, "job", 100)
	if want := []string{"job*x", "job:1", "job:2", "job:stream", "jobs"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("CompleteKeys(job) = %q, %v; want %q", got, err, want)
	}
	if got, _ := CompleteKeys(ctx, c, "job*", 100); !slices.Equal(got, []string{"job*x"}) {
		t.Errorf("CompleteKeys(job*) = %q: the * is literal", got)
	}
	if got, _ := CompleteKeys(ctx, c, "job:", 1); len(got) != 1 {
		t.Errorf("CompleteKeys(job:, limit 1) = %q", got)
	}

	// 20,000 keys of which none match: the walk stops after 1,000 looked
	// at, in ten SCANs of COUNT 100.
	if err := rdb.Eval(ctx, `for i = 1, 20000 do redis.call('SET', 'bulk:' .. i, 'x') end return 1`, nil).Err(); err != nil {
		t.Fatal(err)
	}
	before := scanCalls(t, rdb)
	if got, err := CompleteKeys(ctx, c, "nomatch", 100); err != nil || len(got) != 0 {
		t.Errorf("CompleteKeys(nomatch) = %q, %v", got, err)
	}
	if n := scanCalls(t, rdb) - before; n != completeLook/completeCount {
		t.Errorf("%d SCAN calls for one completion, want %d", n, completeLook/completeCount)
	}
}

// A cluster gets no names: its keys are on every primary.
func TestCompleteKeysCluster(t *testing.T) {
	t.Parallel()
	c, _ := redistest.ClusterConn(t)
	ctx := context.Background()
	if err := c.Client().Set(ctx, "job:1", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := CompleteKeys(ctx, c, "job", 100); err != nil || got != nil {
		t.Errorf("CompleteKeys on a cluster = %q, %v; want none", got, err)
	}
}

var scanStat = regexp.MustCompile(`cmdstat_scan:calls=(\d+),`)

// scanCalls is the server's count of SCAN calls (INFO commandstats).
func scanCalls(t *testing.T, rdb redis.UniversalClient) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := scanStat.FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
