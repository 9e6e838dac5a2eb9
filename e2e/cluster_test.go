package e2e

import (
	"hash/crc32"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestClusterScript runs the golden scripts of testdata/cluster against one
// real three-primary Redis Cluster, started once for all of them (a cluster
// takes seconds to form). Scripts run in parallel on the same cluster, so
// no two scripts use the same key name (most use a prefix of their own:
// mt:, sa:, cl:...), and checks count keys by name or pattern, never DBSIZE.
//
// Each script gets IDMPCTL_URL of one node (chosen by its name, so the
// client's discovery from any node is exercised), CLUSTER_PORT (that node's
// port, for redis-cli -c -p $CLUSTER_PORT) and NODE0_PORT..NODE2_PORT: the
// primaries in the order redis-cli --cluster create gave them slots 0-5460,
// 5461-10922 and 10923-16383, so `redis-cli -p $NODE1_PORT EXISTS k`
// proves which primary holds k.
func TestClusterScript(t *testing.T) {
	cl := redistest.NewCluster(t) // skipped with -short or without redis-cli
	ports := make([]string, len(cl.Nodes))
	for i, n := range cl.Nodes {
		ports[i] = strconv.Itoa(n.Opts.Port)
	}

	p := scriptParams("../testdata/cluster")
	// The single-server commands (redis-stop, redis-freeze...) have no
	// cluster meaning: an unknown command beats a nil-pointer panic.
	for name := range p.Cmds {
		if strings.HasPrefix(name, "redis-") {
			delete(p.Cmds, name)
		}
	}
	p.Setup = func(env *testscript.Env) error {
		name := strings.TrimPrefix(filepath.Base(env.WorkDir), "script-")
		node := cl.Nodes[crc32.ChecksumIEEE([]byte(name))%uint32(len(cl.Nodes))]
		env.Vars = clitest.Scrub(env.Vars)
		env.Setenv("IDMPCTL_URL", node.URL)
		env.Setenv("CLUSTER_PORT", strconv.Itoa(node.Opts.Port))
		for i, port := range ports {
			env.Setenv("NODE"+strconv.Itoa(i)+"_PORT", port)
		}
		env.Setenv("HOME", env.WorkDir)
		return nil
	}
	testscript.Run(t, p)
}
