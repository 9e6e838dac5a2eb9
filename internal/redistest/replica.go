package redistest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// replicaWait bounds the wait for a new replica's link and first sync.
const replicaWait = 20 * time.Second

// NewReplica starts a replica of primary (on TCP: replication has no unix
// socket) for one test, stopped when the test ends, and waits until the
// link is up on both sides, so that WAIT counts it. The primary's diskless
// sync delay is set to 0 first (its default 5 s would hold every first
// sync back).
func NewReplica(t testing.TB, primary *Server, config ...string) *Server {
	t.Helper()
	if primary.Opts.Unix {
		t.Fatal("redistest: a replica needs a primary on a TCP port (Options.Unix false)")
	}
	if err := primary.ok("CONFIG", "SET", "repl-diskless-sync-delay", "0"); err != nil {
		t.Fatal(err)
	}
	before, err := primary.OnlineReplicas()
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(primary.Addr, ":")
	// The primary's own build: an 8.6 primary beside a 7.0 server under
	// test replicates to an 8.6 replica.
	r := NewWith(t, Options{Dir: filepath.Join(t.TempDir(), "replica"), Binary: primary.Opts.Binary,
		Config: append([]string{"replicaof " + host + " " + port}, config...)})
	if err := r.WaitLinkUp(replicaWait); err != nil {
		t.Fatal(err)
	}
	if err := primary.WaitReplicas(before+1, replicaWait); err != nil {
		t.Fatal(err)
	}
	return r
}

// Replication is the server's INFO replication, field by field.
func (s *Server) Replication() (map[string]string, error) {
	info, err := s.Do("INFO", "replication")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// OnlineReplicas counts the replicas the primary lists with state=online:
// the ones WAIT counts.
func (s *Server) OnlineReplicas() (int, error) {
	m, err := s.Replication()
	if err != nil {
		return 0, err
	}
	n := 0
	for i := 0; ; i++ {
		v, ok := m["slave"+strconv.Itoa(i)]
		if !ok {
			return n, nil
		}
		if strings.Contains(v, "state=online") {
			n++
		}
	}
}

// WaitReplicas waits until the primary lists at least n replicas online
// (or, with n 0, none at all), for at most bound.
func (s *Server) WaitReplicas(n int, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		got, err := s.OnlineReplicas()
		if err == nil && (n == 0 && got == 0 || n > 0 && got >= n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: %s lists %d replicas online after %s, want %d (%v)", s.Addr, got, bound, n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitLinkUp waits until a replica says master_link_status:up, for at most
// bound.
func (s *Server) WaitLinkUp(bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		m, err := s.Replication()
		if err == nil && m["master_link_status"] == "up" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: replica %s: master_link_status %q after %s (%v)", s.Addr, m["master_link_status"], bound, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Promote makes a replica a primary (REPLICAOF NO ONE), as a failover does.
func (s *Server) Promote() error { return s.ok("REPLICAOF", "NO", "ONE") }

// AddReplica starts a cluster node under dir that joins the cluster as a
// replica of Nodes[primary] (CLUSTER MEET, then CLUSTER REPLICATE), and
// waits until the link is up on both sides. The replica is kept in
// Replicas and stopped with the cluster.
func (c *Cluster) AddReplica(dir string, primary int) (*Server, error) {
	p := c.Nodes[primary]
	if err := p.ok("CONFIG", "SET", "repl-diskless-sync-delay", "0"); err != nil {
		return nil, err
	}
	id, err := p.Do("CLUSTER", "MYID")
	if err != nil {
		return nil, err
	}
	port, err := freeClusterPort()
	if err != nil {
		return nil, err
	}
	r, err := Start(Options{Dir: dir, Port: port, Config: clusterConfig})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) {
		r.Stop()
		return nil, err
	}
	host, pport, _ := strings.Cut(p.Addr, ":")
	if err := r.ok("CLUSTER", "MEET", host, pport); err != nil {
		return fail(err)
	}
	// REPLICATE needs the primary known to the new node: retried until it is.
	deadline := time.Now().Add(replicaWait)
	for {
		reply, err := r.Do("CLUSTER", "REPLICATE", id)
		if err == nil && reply == "OK" {
			break
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("redistest: CLUSTER REPLICATE %s: %q %v", id, reply, err))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := r.WaitLinkUp(replicaWait); err != nil {
		return fail(err)
	}
	if err := p.WaitReplicas(1, replicaWait); err != nil {
		return fail(err)
	}
	c.Replicas = append(c.Replicas, r)
	return r, nil
}
