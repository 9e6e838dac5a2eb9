//go:build unix

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/redistest"
)

// redisSuiteTests is how many tests of Redis 8.6.3's stream.tcl the suite
// selects (scripts/redis-idmp-suite.tcl's filter: the IDMP ones).
const redisSuiteTests = 113

// redisSuiteSkips are the only tests the suite may skip, each with the
// server feature it needs: a server without it (Redis 7.0, Valkey) skips
// them. Any other skip fails the test.
var redisSuiteSkips = []struct{ re, needs string }{
	{`^XADD IDMP tracking works with diskless replication \(swapdb mode\) rdbchannel=(yes|no)$`,
		"repl-rdb-channel (Redis 8.0+): the test sets it on the primary"},
}

// TestRedisOwnIDMPSuite runs the IDMP tests of Redis 8.6.3's own
// tests/unit/type/stream.tcl through idmpctl exec
// (scripts/redis-idmp-suite.tcl), on servers the script starts from the
// server under test: emulated on a server without IDMP (make test, Redis
// 7.0), natively and with --mode emulated on one with it (make
// test-native, Redis 8.6.3). Every test that runs must pass; only the
// tests of redisSuiteSkips may be skipped, on a server without their
// feature. Without tclsh or the test tree it skips, or fails when
// IDMPCTL_REQUIRE_NATIVE=1 (make test: scripts/install-redis.sh installs
// both).
func TestRedisOwnIDMPSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("Redis's own IDMP tests take about a minute")
	}
	missing := func(msg string) {
		t.Helper()
		if os.Getenv("IDMPCTL_REQUIRE_NATIVE") == "1" {
			t.Fatal(msg + " (IDMPCTL_REQUIRE_NATIVE=1: run scripts/install-redis.sh)")
		}
		t.Skip(msg)
	}
	tree := redistest.NativeStreamTests()
	if tree == "" {
		missing("Redis 8.6.3's tests/unit/type/stream.tcl is not cached (scripts/install-redis.sh)")
	}
	tclsh, err := exec.LookPath("tclsh")
	if err != nil {
		missing("tclsh not found (apt-get install tcl)")
	}
	bin, err := exec.LookPath("idmpctl") // the test binary (TestMain)
	if err != nil {
		t.Fatal(err)
	}
	bin, err = filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}

	// What the server under test has: IDMP, and repl-rdb-channel.
	probe := redistest.New(t)
	native := false
	if out, err := probe.Do("COMMAND", "INFO", "XCFGSET"); err == nil && strings.Contains(out, "xcfgset") {
		native = true
	}
	rdbChannel := false
	if out, err := probe.Do("CONFIG", "GET", "repl-rdb-channel"); err == nil && strings.Contains(out, "repl-rdb-channel") {
		rdbChannel = true
	}
	probe.Stop()

	var skip []string
	if !rdbChannel {
		for _, s := range redisSuiteSkips {
			skip = append(skip, s.re)
		}
	}
	modes := []string{"emulated"}
	if native {
		modes = []string{"native", "emulated"}
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			runRedisSuite(t, tclsh, bin, tree, mode, skip)
		})
	}
}

var suiteLine = regexp.MustCompile(`(?m)^\[(ok|err|skip)\]: (.*?)(?: \((IDMP_SUITE_SKIP|[^()]*)\))?$`)

func runRedisSuite(t *testing.T, tclsh, bin, tree, mode string, skip []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tclsh, "../scripts/redis-idmp-suite.tcl", tree)
	cmd.Env = append(os.Environ(),
		"IDMPCTL_BIN="+bin,
		"IDMP_SUITE_SERVER="+redistest.Binary(),
		"IDMP_SUITE_EXEC_ARGS=--mode "+mode,
		"IDMP_SUITE_SKIP="+strings.Join(skip, "|"),
		"TMPDIR="+t.TempDir(),
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// The script's servers and exec processes are in its process group:
	// a timeout or a failed test kills them all, not tclsh alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err := cmd.Wait()
	text := out.String()

	var passed, failed []string
	var skipped []string
	for _, m := range suiteLine.FindAllStringSubmatch(text, -1) {
		switch m[1] {
		case "ok":
			passed = append(passed, m[2])
		case "err":
			failed = append(failed, m[2])
		case "skip":
			skipped = append(skipped, m[2])
		}
	}
	t.Logf("%s on %s: %d passed, %d failed, %d skipped", mode, redistest.Binary(), len(passed), len(failed), len(skipped))
	for _, name := range skipped {
		why := ""
		for _, s := range redisSuiteSkips {
			if regexp.MustCompile(s.re).MatchString(name) {
				why = s.needs
			}
		}
		if why == "" {
			t.Errorf("skipped without a reason the test lists: %s", name)
		} else {
			t.Logf("skipped (needs %s): %s", why, name)
		}
	}
	if len(failed) > 0 || err != nil {
		t.Errorf("%s: %d of Redis's IDMP tests failed (%v): %s\n%s", mode, len(failed), err, strings.Join(failed, "; "), failures(text))
	}
	if n := len(passed) + len(failed) + len(skipped); n != redisSuiteTests {
		t.Errorf("%s: the suite reported %d tests, want %d (a test lost, or the tree changed):\n%s", mode, n, redisSuiteTests, text)
	}
}

// failures is the suite's output for the failed tests only.
func failures(text string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "[err]"):
			in = true
		case strings.HasPrefix(l, "[ok]"), strings.HasPrefix(l, "[skip]"):
			in = false
		}
		if in || (!strings.HasPrefix(l, "[") && l != "" && !strings.Contains(l, " passed, ")) {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
