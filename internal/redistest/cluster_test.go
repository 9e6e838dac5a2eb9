package redistest

import (
	"strings"
	"testing"
)

func TestStartCluster(t *testing.T) {
	if !HaveCLI() {
		t.Skip("redis-cli not found: cluster tests need it")
	}
	c, err := StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if !strings.HasPrefix(c.URL, "redis://127.0.0.1:") {
		t.Fatalf("URL = %q", c.URL)
	}
	for _, s := range c.Nodes {
		info, err := s.Do("CLUSTER", "INFO")
		if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3") {
			t.Fatalf("%s: %v %q", s.Addr, err, info)
		}
	}
	// A migration shows in every node's view of the slot.
	slot, err := c.FirstSlot(c.Nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartMigration(slot, c.Nodes[0], c.Nodes[1]); err != nil {
		t.Fatal(err)
	}
	report := c.SlotReport(slot)
	t.Log(report)
	for _, want := range []string{"[0->-", "[0-<-", "owner " + c.Nodes[0].Addr, "cluster_state ok"} {
		if !strings.Contains(report, want) {
			t.Errorf("the slot's report lacks %q:\n%s", want, report)
		}
	}
	if _, err := StartCluster(t.TempDir(), 2); err == nil {
		t.Fatal("a 2-node cluster was accepted")
	}
}
