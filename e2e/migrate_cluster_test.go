package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// migrate in a Redis 8.6.3 cluster: streams in several slots, written in
// emulated mode, migrated with --match over every primary; retries in
// auto mode afterwards are duplicates.
func TestMigrateCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test in -short mode")
	}
	native := redistest.RequireNative(t)
	if !redistest.HaveCLI() {
		t.Skip("redis-cli not found: cluster tests need it")
	}
	cl, err := redistest.StartClusterOf(t.TempDir(), 3, native)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop)
	cli := clitest.New(t, "IDMPCTL_URL="+cl.URL)
	streams := []string{"orders", "payments", "{x}.log", "shipments", "refunds", "users"}
	ids := map[string]string{}
	for _, s := range streams {
		for k := range 3 {
			r := cli.Expect(0, "xadd", s, "--mode", "emulated", "--pid", "p", "--iid", fmt.Sprint("i", k), "k", fmt.Sprint(k))
			ids[fmt.Sprint(s, k)] = strings.TrimSpace(r.Stdout)
		}
	}
	slots := map[int]bool{}
	for _, s := range streams {
		n, err := cl.Slot(s)
		if err != nil {
			t.Fatal(err)
		}
		owner, err := cl.Owner(n)
		if err != nil {
			t.Fatal(err)
		}
		slots[owner.Opts.Port] = true
	}
	if len(slots) < 2 {
		t.Fatalf("the streams are on %d node(s): the test needs several", len(slots))
	}
	dry := cli.Expect(0, "migrate", "--match", "*", "--dry-run")
	for _, s := range streams {
		if !strings.Contains(dry.Stdout, s+"\tdone\tequal\t3\t0\t0\tdry-run\n") {
			t.Fatalf("dry run:\n%s\nwant %s done with 3 iids", dry.Stdout, s)
		}
	}
	r := cli.Expect(0, "migrate", "--match", "*")
	if r.Stdout != strings.ReplaceAll(dry.Stdout, "\tdry-run\n", "\n") {
		t.Fatalf("migrate:\n%s\ndry run said:\n%s", r.Stdout, dry.Stdout)
	}
	for _, s := range streams {
		for k := range 3 {
			got := cli.Expect(0, "xadd", s, "--pid", "p", "--iid", fmt.Sprint("i", k), "k", fmt.Sprint(k), "-o", "json")
			if !strings.Contains(got.Stdout, `"id":"`+ids[fmt.Sprint(s, k)]+`"`) || !strings.Contains(got.Stdout, `"duplicate":true`) {
				t.Fatalf("retry on %s: %s", s, got.Stdout)
			}
		}
		info := cli.Expect(0, "inspect", s, "-o", "json")
		if !strings.Contains(info.Stdout, `"length":3`) || !strings.Contains(info.Stdout, `"iids-tracked":3`) || strings.Contains(info.Stdout, "mixed-modes") {
			t.Fatalf("%s after: %s", s, info.Stdout)
		}
	}
	again := cli.Expect(0, "migrate", "--match", "*")
	for _, s := range streams {
		if !strings.Contains(again.Stdout, s+"\tnone\t\t0\t0\t0\n") {
			t.Fatalf("re-run:\n%s", again.Stdout)
		}
	}
}
