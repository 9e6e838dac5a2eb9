package redistest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Cluster is a running Redis Cluster of primaries, without replicas
// unless AddReplica adds some.
type Cluster struct {
	Nodes    []*Server
	Replicas []*Server // added by AddReplica
	URL      string    // redis://host:port/0 of the first node; clients discover the rest

	// moving serialises MoveSlot's MIGRATEs and hand-overs (see there).
	moving sync.Mutex
}

// CLIBinary is redis-cli, which creates the cluster: $IDMPCTL_TEST_REDIS_CLI,
// else the redis-cli beside the server binary when that is a path (an 8.6
// build's own), else redis-cli from PATH.
func CLIBinary() string {
	if b := os.Getenv("IDMPCTL_TEST_REDIS_CLI"); b != "" {
		return b
	}
	if dir := filepath.Dir(Binary()); strings.ContainsRune(Binary(), filepath.Separator) {
		b := filepath.Join(dir, "redis-cli")
		if st, err := os.Stat(b); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return b
		}
	}
	return "redis-cli"
}

// HaveCLI reports whether redis-cli can be run (tests skip the cluster without it).
func HaveCLI() bool {
	_, err := exec.LookPath(CLIBinary())
	return err == nil
}

// StartCluster starts n (>= 3) cluster-enabled servers on free loopback
// ports under dir, joins them with redis-cli --cluster create and waits until
// every node reports cluster_state:ok. Every wait is bounded.
func StartCluster(dir string, n int) (*Cluster, error) { return StartClusterOf(dir, n, "") }

// StartClusterOf is StartCluster with the server binary given ("" the
// server under test; NativeBinary() a Redis 8.6 cluster).
func StartClusterOf(dir string, n int, binary string) (*Cluster, error) {
	if n < 3 {
		return nil, fmt.Errorf("redistest: a cluster needs at least 3 primaries, got %d", n)
	}
	c := &Cluster{}
	for i := range n {
		port, err := freeClusterPort()
		if err != nil {
			c.Stop()
			return nil, err
		}
		s, err := Start(Options{Dir: filepath.Join(dir, "node"+strconv.Itoa(i)), Port: port, Binary: binary, Config: clusterConfig})
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	c.URL = c.Nodes[0].URL
	args := []string{"--cluster", "create"}
	for _, s := range c.Nodes {
		args = append(args, s.Addr)
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, CLIBinary(), args...).CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redistest: redis-cli --cluster create: %v: %s", err, tail(string(out), 600))
	}
	if err := c.waitOK(20 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// clusterConfig makes a server a cluster node.
var clusterConfig = []string{"cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 5000"}

// freeClusterPort finds a loopback port p with p+10000 (the cluster bus,
// which Redis before 7.0 cannot move) also free and below 65536.
func freeClusterPort() (int, error) {
	for range 200 {
		p := 20000 + rand.IntN(35000)
		l1, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		l1.Close()
		if err != nil {
			continue
		}
		l2.Close()
		return p, nil
	}
	return 0, errors.New("redistest: no free port pair for a cluster node")
}

// waitOK waits until CLUSTER INFO says cluster_state:ok on every node.
func (c *Cluster) waitOK(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for _, s := range c.Nodes {
		for {
			reply, err := s.Do("CLUSTER", "INFO")
			if err == nil && strings.Contains(reply, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				return errors.New("redistest: cluster not ok within " + limit.String() + " on " + s.Addr + ": " + reply)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// Stop shuts every node down.
func (c *Cluster) Stop() {
	for _, s := range append(c.Replicas, c.Nodes...) {
		s.Stop()
	}
}

// ClusterID is the node's ID in its cluster (CLUSTER MYID).
func (s *Server) ClusterID() (string, error) {
	id, err := s.Do("CLUSTER", "MYID")
	if err == nil && len(id) != 40 {
		err = fmt.Errorf("redistest: CLUSTER MYID on %s: %q", s.Addr, id)
	}
	return id, err
}

// ok runs a command whose reply must be OK (Do returns error replies as
// text).
func (s *Server) ok(args ...string) error {
	r, err := s.Do(args...)
	if err == nil && r != "OK" {
		err = fmt.Errorf("redistest: %s on %s: %s", strings.Join(args, " "), s.Addr, r)
	}
	return err
}

// Owner is the primary that serves slot, as that primary says.
func (c *Cluster) Owner(slot int) (*Server, error) {
	for _, s := range c.Nodes {
		ranges, err := s.slots()
		if err != nil {
			return nil, err
		}
		for _, r := range ranges {
			if r[0] <= slot && slot <= r[1] {
				return s, nil
			}
		}
	}
	return nil, fmt.Errorf("redistest: no primary claims slot %d", slot)
}

// slots are the slot ranges s serves, as its "myself" line of CLUSTER
// NODES lists them (not those being migrated or imported, "[...]").
func (s *Server) slots() ([][2]int, error) {
	nodes, err := s.clusterNodes()
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if strings.Contains(n.flags, "myself") {
			return n.slots, nil
		}
	}
	return nil, nil
}

// nodeLine is a line of CLUSTER NODES.
type nodeLine struct {
	id, addr, flags, epoch string
	slots                  [][2]int // served ranges
	open                   []string // "[slot->-id]" MIGRATING, "[slot-<-id]" IMPORTING
}

func (n nodeLine) serves(slot int) bool {
	for _, r := range n.slots {
		if r[0] <= slot && slot <= r[1] {
			return true
		}
	}
	return false
}

// opens reports a MIGRATING or IMPORTING mark of slot.
func (n nodeLine) opens(slot int) bool {
	return slices.ContainsFunc(n.open, func(o string) bool { return strings.HasPrefix(o, "["+strconv.Itoa(slot)+"-") })
}

func (s *Server) clusterNodes() ([]nodeLine, error) {
	reply, err := s.Do("CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	var out []nodeLine
	for _, line := range strings.Split(reply, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := nodeLine{id: f[0], addr: addr, flags: f[2], epoch: f[6]}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				n.open = append(n.open, r)
				continue
			}
			lo, hi, ranged := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if !ranged {
				b, err2 = a, nil
			}
			if err1 == nil && err2 == nil {
				n.slots = append(n.slots, [2]int{a, b})
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// SlotReport is every primary's view of slot, for a failed test to say
// why: the owner it knows (and that owner's config epoch), its own epoch,
// its MIGRATING or IMPORTING mark, its keys in the slot, its cluster_state,
// and its log's last lines about epochs and slots.
func (c *Cluster) SlotReport(slot int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "slot %d as each primary sees it:", slot)
	for _, s := range c.Nodes {
		nodes, err := s.clusterNodes()
		if err != nil {
			fmt.Fprintf(&b, "\n  %s: CLUSTER NODES: %v", s.Addr, err)
			continue
		}
		owner, mine := "none", ""
		for _, n := range nodes {
			if n.serves(slot) {
				owner = n.addr + " (epoch " + n.epoch + ")"
			}
			if strings.Contains(n.flags, "myself") {
				mine = "epoch " + n.epoch
				if n.opens(slot) {
					mine += " " + strings.Join(n.open, " ")
				}
			}
		}
		keys, _ := s.Do("CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot))
		info, _ := s.Do("CLUSTER", "INFO")
		_, state, _ := strings.Cut(info, "cluster_state:")
		state, _, _ = strings.Cut(state, "\r")
		fmt.Fprintf(&b, "\n  %s (%s, %s keys, cluster_state %s): owner %s", s.Addr, mine, keys, state, owner)
		log, _ := os.ReadFile(filepath.Join(s.Opts.Dir, "redis.log"))
		var notes []string
		for _, l := range strings.Split(string(log), "\n") {
			if strings.Contains(l, "poch") || strings.Contains(l, "slot") {
				notes = append(notes, l)
			}
		}
		for _, l := range notes[max(0, len(notes)-8):] {
			b.WriteString("\n    log: " + l)
		}
	}
	return b.String()
}

// Slot is the cluster slot of key (CLUSTER KEYSLOT).
func (c *Cluster) Slot(key string) (int, error) {
	r, err := c.Nodes[0].Do("CLUSTER", "KEYSLOT", key)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(r)
}

// StartMigration sets slot MIGRATING on from and IMPORTING on to, the
// first step of a reshard (the target first, as redis-cli does).
func (c *Cluster) StartMigration(slot int, from, to *Server) error {
	fromID, err := from.ClusterID()
	if err != nil {
		return err
	}
	toID, err := to.ClusterID()
	if err != nil {
		return err
	}
	s := strconv.Itoa(slot)
	if err := to.ok("CLUSTER", "SETSLOT", s, "IMPORTING", fromID); err != nil {
		return err
	}
	return from.ok("CLUSTER", "SETSLOT", s, "MIGRATING", toID)
}

// StableSlot ends a migration without moving the slot (SETSLOT STABLE on
// both nodes).
func (c *Cluster) StableSlot(slot int, from, to *Server) error {
	s := strconv.Itoa(slot)
	if err := from.ok("CLUSTER", "SETSLOT", s, "STABLE"); err != nil {
		return err
	}
	return to.ok("CLUSTER", "SETSLOT", s, "STABLE")
}

// MoveSlot moves slot between primaries as redis-cli --cluster reshard
// does (IMPORTING and MIGRATING, MIGRATE batch keys at a time, SETSLOT NODE
// everywhere), pausing after MIGRATING and each batch to let clients run.
//
// Moves may run at once, but their MIGRATEs and hand-overs take turns.
// A MIGRATE blocks its source until the target answers: moves around the
// ring (A to B, B to C, C to A) each wait on a node that waits too, until
// MIGRATE's own timeout. SETSLOT NODE raises the target's config epoch
// without the cluster's consent (or keeps it, if it is the highest). If
// another move raises the source's epoch meanwhile (it imports a slot too,
// or wins a collision of two such raises), the source still owns this slot
// until its own SETSLOT NODE, and its higher epoch out-claims the target:
// the target drops the slot and deletes the keys it received, then the
// source hands it over, and no node serves the slot (MOVED back and forth)
// or ever claims it again. So each hand-over waits until every primary
// agrees on the slot's owner and on every node's epoch.
func (c *Cluster) MoveSlot(slot int, from, to *Server, batch int, pause time.Duration) error {
	if err := c.StartMigration(slot, from, to); err != nil {
		return err
	}
	time.Sleep(pause)
	host, port, _ := strings.Cut(to.Addr, ":")
	s := strconv.Itoa(slot)
	for range 100000 {
		keys, err := from.Do("CLUSTER", "GETKEYSINSLOT", s, strconv.Itoa(batch))
		if err != nil {
			return err
		}
		if keys == "" {
			break
		}
		c.moving.Lock()
		err = from.ok(append([]string{"MIGRATE", host, port, "", "0", "10000", "KEYS"}, strings.Split(keys, "\n")...)...)
		c.moving.Unlock()
		if err != nil {
			return err
		}
		time.Sleep(pause)
	}
	toID, err := to.ClusterID()
	if err != nil {
		return err
	}
	c.moving.Lock()
	defer c.moving.Unlock()
	// The target first, then the source, then the other primaries.
	for i, n := range append([]*Server{to, from}, c.Nodes...) {
		if i >= 2 && (n == from || n == to) {
			continue
		}
		if err := n.ok("CLUSTER", "SETSLOT", s, "NODE", toID); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !c.agree(slot, toID) {
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: the primaries do not agree on slot %d within 10s\n%s", slot, c.SlotReport(slot))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// agree reports whether every primary names owner as slot's, holds it
// open nowhere, and sees the same distinct config epochs of the primaries.
func (c *Cluster) agree(slot int, owner string) bool {
	var first string
	for i, s := range c.Nodes {
		nodes, err := s.clusterNodes()
		if err != nil {
			return false
		}
		var epochs []string
		seen := map[string]bool{}
		for _, n := range nodes {
			if n.id != owner && n.serves(slot) || n.id == owner && !n.serves(slot) || n.opens(slot) {
				return false
			}
			if strings.Contains(n.flags, "master") {
				if seen[n.epoch] {
					return false
				}
				seen[n.epoch] = true
				epochs = append(epochs, n.id+":"+n.epoch)
			}
		}
		slices.Sort(epochs)
		if view := strings.Join(epochs, " "); i == 0 {
			first = view
		} else if view != first {
			return false
		}
	}
	return true
}

// FirstSlot is the lowest slot s serves (the one redis-cli --cluster
// reshard takes first from it).
func (c *Cluster) FirstSlot(s *Server) (int, error) {
	ranges, err := s.slots()
	if err != nil {
		return 0, err
	}
	if len(ranges) == 0 {
		return 0, fmt.Errorf("redistest: %s serves no slot", s.Addr)
	}
	first := ranges[0][0]
	for _, r := range ranges {
		first = min(first, r[0])
	}
	return first, nil
}
