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
	"strconv"
	"strings"
	"time"
)

// Cluster is a running Redis Cluster of primaries, without replicas
// unless AddReplica adds some.
type Cluster struct {
	Nodes    []*Server
	Replicas []*Server // added by AddReplica
	URL      string    // redis://host:port/0 of the first node; clients discover the rest
}

// CLIBinary is redis-cli, which creates the cluster: $IDMPCTL_TEST_REDIS_CLI
// or redis-cli from PATH.
func CLIBinary() string {
	if b := os.Getenv("IDMPCTL_TEST_REDIS_CLI"); b != "" {
		return b
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
func StartCluster(dir string, n int) (*Cluster, error) {
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
		s, err := Start(Options{
			Dir:  filepath.Join(dir, "node"+strconv.Itoa(i)),
			Port: port,
			Config: []string{
				"cluster-enabled yes",
				"cluster-config-file nodes.conf",
				"cluster-node-timeout 5000",
			},
		})
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
