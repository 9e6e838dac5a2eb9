package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// memFixture writes a small keyspace of several formats and statuses under
// mem:, and returns the sum of MEMORY USAGE (SAMPLES 0) over its keys,
// asked key by key: what inspect --memory is held against.
func memFixture(t *testing.T, url string, n int) int64 {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(opt)
	defer rc.Close()
	ctx := context.Background()
	_, err = rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			k := "mem:c:" + strconv.Itoa(i)
			status := []string{"COMPLETED", "FAILED", "PROCESSING"}[i%3]
			p.HSet(ctx, k, "status", status, "owner", "w-"+strconv.Itoa(i), "token", "1", "attempts", "1",
				"lease_until", "4102444800000", "created", "1763740800000", "updated", "1763740800000",
				"result", strings.Repeat("r", i%97))
			p.PExpire(ctx, k, time.Hour)
			p.Set(ctx, "mem:j:"+strconv.Itoa(i), fmt.Sprintf(`{"status":"COMPLETED","owner":"c-%d","data":%q}`, i, strings.Repeat("d", i%53)), time.Hour)
			if i%4 == 0 {
				p.Set(ctx, "mem:m:"+strconv.Itoa(i), "PROCESSING", 0)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	iter := rc.Scan(ctx, 0, "mem:*", 1000).Iterator()
	for iter.Next(ctx) {
		u, err := rc.MemoryUsage(ctx, iter.Val(), 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		sum += u
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return sum
}

type memoryJSON struct {
	Memory struct {
		Estimated bool  `json:"estimated"`
		Sampled   int64 `json:"sampled"`
		Records   int64 `json:"records"`
		Bytes     int64 `json:"bytes"`
		Groups    []struct {
			Format, Status   string
			Records, Sampled int64
			Bytes            int64
			Exact            bool
		} `json:"by_format_status"`
	} `json:"memory"`
	Summary struct {
		Matched int64 `json:"matched"`
	} `json:"summary"`
}

func lastMemoryJSON(t *testing.T, stdout string) memoryJSON {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var m memoryJSON
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("%v: %s", err, lines[len(lines)-1])
	}
	return m
}

// inspect --match --memory on a fully sampled small keyspace: the figures
// (JSON, prometheus) are within 10% of the sum of MEMORY USAGE over every
// key (they are that sum), and not marked as estimates. With a sample
// smaller than the groups they are estimates, marked so, and still close.
func TestInspectMemory(t *testing.T) {
	srv := redistest.New(t)
	cli := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	want := memFixture(t, srv.URL, 600)
	const keys = 600 + 600 + 150

	r := cli.Expect(0, "inspect", "--match", "mem:*", "--memory", "--samples", "1000", "-o", "json")
	m := lastMemoryJSON(t, r.Stdout)
	if m.Summary.Matched != keys || m.Memory.Records != keys || m.Memory.Sampled != keys || m.Memory.Estimated {
		t.Errorf("fully sampled: %+v", m)
	}
	if math.Abs(float64(m.Memory.Bytes-want)) > 0.10*float64(want) {
		t.Errorf("memory %d bytes, MEMORY USAGE sums to %d: more than 10%% apart", m.Memory.Bytes, want)
	}
	t.Logf("fully sampled: %d bytes reported, MEMORY USAGE sums to %d", m.Memory.Bytes, want)
	groups := map[string]int64{}
	for _, g := range m.Memory.Groups {
		groups[g.Format+"/"+g.Status] = g.Records
		if !g.Exact || g.Sampled != g.Records {
			t.Errorf("group %+v", g)
		}
	}
	if groups["idmpctl/COMPLETED"] != 200 || groups["idmpctl/PROCESSING"] != 200 || groups["json/COMPLETED"] != 600 || groups["marker/PROCESSING"] != 150 {
		t.Errorf("groups %v", groups)
	}

	fams := parsePrometheus(t, cli.Expect(0, "inspect", "--match", "mem:*", "--memory", "--samples", "1000", "-o", "prometheus").Stdout)
	if got := sampleValue(t, fams, "idmpctl_scan_memory_estimate_bytes", map[string]string{"pattern": "mem:*"}); got != float64(m.Memory.Bytes) {
		t.Errorf("prometheus total %v, JSON %d", got, m.Memory.Bytes)
	}
	if got := sampleValue(t, fams, "idmpctl_scan_memory_exact", map[string]string{"pattern": "mem:*"}); got != 1 {
		t.Errorf("exact = %v", got)
	}
	var byStatus float64
	for _, st := range []string{"COMPLETED", "FAILED", "PROCESSING"} {
		byStatus += sampleValue(t, fams, "idmpctl_scan_memory_by_status_estimate_bytes", map[string]string{"pattern": "mem:*", "status": st})
	}
	if byStatus != float64(m.Memory.Bytes) {
		t.Errorf("by status sums to %v, total %d", byStatus, m.Memory.Bytes)
	}

	// A sample of 50 a group: estimates, marked so everywhere.
	m = lastMemoryJSON(t, cli.Expect(0, "inspect", "--match", "mem:*", "--memory", "--samples", "50", "-o", "json").Stdout)
	if !m.Memory.Estimated || m.Memory.Sampled != 50*5 {
		t.Errorf("sampled: %+v", m.Memory)
	}
	if math.Abs(float64(m.Memory.Bytes-want)) > 0.10*float64(want) {
		t.Errorf("estimate %d bytes, MEMORY USAGE sums to %d: more than 10%% apart", m.Memory.Bytes, want)
	}
	t.Logf("50 a group: %d bytes estimated, MEMORY USAGE sums to %d (%+.1f%%)", m.Memory.Bytes, want, 100*float64(m.Memory.Bytes-want)/float64(want))
	fams = parsePrometheus(t, cli.Expect(0, "inspect", "--match", "mem:*", "--memory", "--samples", "50", "-o", "prometheus").Stdout)
	if got := sampleValue(t, fams, "idmpctl_scan_memory_exact", map[string]string{"pattern": "mem:*"}); got != 0 {
		t.Errorf("exact = %v for a sample", got)
	}
	tbl := cli.With("IDMPCTL_FORCE_TTY=1", "NO_COLOR=1").Expect(0, "inspect", "--match", "mem:*", "--memory", "--samples", "50")
	if !strings.Contains(tbl.Stdout, "Memory (estimated: MEMORY USAGE of 250 sampled of 1,350 keys; ~ marks estimates):") ||
		!strings.Contains(tbl.Stdout, "~") {
		t.Errorf("table:\n%s", tbl.Stdout)
	}
	raw := cli.Expect(0, "inspect", "--match", "mem:*", "--memory", "--samples", "50")
	if !strings.Contains(raw.Stderr, "memory: ") || !strings.Contains(raw.Stderr, "(estimate: MEMORY USAGE of 250 sampled of 1,350 keys)") {
		t.Errorf("raw stderr:\n%s", raw.Stderr)
	}

	// --memory goes with --match, --samples with --memory.
	cli.Expect(64, "inspect", "mem:c:1", "--memory")
	cli.Expect(64, "inspect", "--match", "mem:*", "--samples", "5")
	cli.Expect(64, "inspect", "--match", "mem:*", "--memory", "--samples", "0")
}

func TestInspectMemoryCluster(t *testing.T) {
	cl := redistest.NewCluster(t)
	cli := clitest.New(t, "IDMPCTL_URL="+cl.URL)
	for i := range 60 {
		cli.Expect(0, "claim", "acquire", "memc:"+strconv.Itoa(i))
	}
	var want int64
	for _, n := range cl.Nodes {
		opt, _ := redis.ParseURL(n.URL)
		rc := redis.NewClient(opt)
		ctx := context.Background()
		iter := rc.Scan(ctx, 0, "memc:*", 1000).Iterator()
		for iter.Next(ctx) {
			u, err := rc.MemoryUsage(ctx, iter.Val(), 0).Result()
			if err != nil {
				t.Fatal(err)
			}
			want += u
		}
		rc.Close()
	}
	m := lastMemoryJSON(t, cli.Expect(0, "inspect", "--match", "memc:*", "--memory", "-o", "json").Stdout)
	if m.Memory.Records != 60 || m.Memory.Estimated || m.Memory.Bytes != want {
		t.Errorf("cluster: %+v, MEMORY USAGE sums to %d", m.Memory, want)
	}
}
