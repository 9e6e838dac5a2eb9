package redistest

import (
	"fmt"
	"slices"
	"strconv"
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

// TestConcurrentMoveSlots: three slots, one key each, move around the
// ring at once, round after round. Before: two nodes finishing an import
// at once took the same config epoch; the collision's winner, still the
// owner of a slot being moved away, out-claimed the slot's importer, which
// dropped it and deleted its keys, while SETSLOT NODE pointed the winner
// at the importer: nobody served the slot (MOVED from node to node).
func TestConcurrentMoveSlots(t *testing.T) {
	if !HaveCLI() {
		t.Skip("redis-cli not found: cluster tests need it")
	}
	if testing.Short() {
		t.Skip("cluster test in -short mode")
	}
	c, err := StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	keys := make([]string, len(c.Nodes))
	slots := make([]int, len(c.Nodes))
	for i, n := range c.Nodes {
		if slots[i], err = c.FirstSlot(n); err != nil {
			t.Fatal(err)
		}
		for j := 0; keys[i] == ""; j++ {
			k := "k" + strconv.Itoa(j)
			if s, err := c.Slot(k); err == nil && s == slots[i] {
				keys[i] = k
			}
		}
		if err := n.ok("SET", keys[i], "v"); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 10 {
		errs := make(chan error, len(c.Nodes))
		for i := range c.Nodes {
			go func() {
				from, err := c.Owner(slots[i])
				if err == nil {
					err = c.MoveSlot(slots[i], from, c.Nodes[(slices.Index(c.Nodes, from)+1)%len(c.Nodes)], 1, 0)
				}
				errs <- err
			}()
		}
		for range c.Nodes {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		for i, slot := range slots {
			owner, err := c.Owner(slot)
			if err == nil {
				var v string
				if v, err = owner.Do("GET", keys[i]); err == nil && v != "v" {
					err = fmt.Errorf("GET %s on %s: %s", keys[i], owner.Addr, v)
				}
			}
			if err != nil {
				t.Fatalf("round %d: %v\n%s", round, err, c.SlotReport(slot))
			}
		}
	}
}
