//go:build unix

package e2e

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// TestBatchReaderGoesAway: xadd --batch FILE | head -1. The reader goes
// after the first result, and idmpctl dies of SIGPIPE at its next write
// (as a filter does) with chunks in flight: the progress record accounts
// for every entry, and the same command again resumes after the last
// committed line: every line once.
func TestBatchReaderGoesAway(t *testing.T) {
	t.Parallel()
	eachBatchMode(t, func(t *testing.T, m batchMode) {
		t.Parallel()
		srv := redistest.NewWith(t, redistest.Options{})
		rdb := faultRedis(t, srv)
		c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
		const lines = 50_000
		file := filepath.Join(c.Dir, "b.ndjson")
		faultBatchFile(t, file, lines)
		args := append([]string{"xadd", "s", "--pid", "p", "--batch", file}, m.flags...)
		cmd := exec.Command("idmpctl", args...)
		cmd.Env = clitest.Env("IDMPCTL_URL=" + srv.URL)
		cmd.Dir = c.Dir
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		first, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatalf("no first result: %v", err)
		}
		_ = out.Close() // head -1 exits
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			t.Fatal("idmpctl went on without its reader")
		}
		xlen := rdb.XLen(context.Background(), "s").Val()
		t.Logf("first result %q; idmpctl: %v; XLEN %d", strings.TrimSpace(first), err, xlen)
		faultBatchInvariant(t, rdb, "s", lines)
		r := c.Expect(0, args...)
		wantPath(t, m, r.Stderr)
		if missing, extra := faultScanStream(t, rdb, "s", lines); missing != 0 || extra != 0 {
			t.Fatalf("%d missing, %d duplicated", missing, extra)
		}
	})
}

// TestNativeBatchACLRefusedBeforeWrite: a user who may not run one of the
// commands the native chunk script runs is refused (77) with nothing
// written, and so is a user who may not run scripts at all, whose single
// adds go natively all the same (they need no script).
func TestNativeBatchACLRefusedBeforeWrite(t *testing.T) {
	t.Parallel()
	srv := redistest.NewNative(t)
	rdb := faultRedis(t, srv)
	ctx := context.Background()
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	sock := strings.TrimPrefix(srv.URL, "unix://")
	as := func(user string) *clitest.CLI {
		return c.With("IDMPCTL_URL=unix://" + user + ":pw@" + sock)
	}
	file := filepath.Join(c.Dir, "b.ndjson")
	writeLines(t, file, 50)
	c.Expect(0, "xadd", "s", "--pid", "p", "--batch", file, "--batch-id", "b0")
	for _, cmd := range []string{"xadd", "xinfo", "xrange", "hset", "hdel", "persist", "zadd"} {
		user := "no-" + cmd
		if err := rdb.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-"+cmd).Err(); err != nil {
			t.Fatal(err)
		}
		before := keyDump(t, rdb)
		r := as(user).Run("xadd", "s", "--pid", "p", "--batch", file, "--batch-id", "b-"+cmd)
		if r.Code != 77 || !strings.Contains(r.Stderr, "nothing was written") {
			t.Errorf("without %s: want 77, nothing written; got %s", cmd, r)
			continue
		}
		sameDump(t, "without "+cmd, before, keyDump(t, rdb))
	}
	for _, deny := range []string{"-evalsha", "-@scripting"} {
		user := "no" + strings.Trim(deny, "-@")
		if err := rdb.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", deny).Err(); err != nil {
			t.Fatal(err)
		}
		before := keyDump(t, rdb)
		r := as(user).Expect(77, "xadd", "s", "--pid", user, "--batch", file)
		if !strings.Contains(r.Stderr, "NOPERM") {
			t.Errorf("%s: %s", deny, r)
		}
		sameDump(t, "batch "+deny, before, keyDump(t, rdb))
		as(user).Expect(0, "xadd", "s", "--pid", user, "--iid", "single", "f", "v")
	}
	if n := rdb.XLen(ctx, "s").Val(); n != 52 {
		t.Fatalf("XLEN %d, want 52", n)
	}
}

// TestNativeSingleACLRefusedBeforeWrite: a native single add (MULTI/EXEC,
// no script) by a user who may not run one of the commands it sends is
// refused (77, the command named) with nothing written. Before: without
// MULTI, the XADD ran outside the transaction after the refusal (77 and an
// entry written, unguarded); without WATCH, the add went on unguarded (0);
// without XINFO, it was 70 (EXECABORT, the denied command unnamed).
func TestNativeSingleACLRefusedBeforeWrite(t *testing.T) {
	t.Parallel()
	srv := redistest.NewNative(t)
	rdb := faultRedis(t, srv)
	ctx := context.Background()
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	sock := strings.TrimPrefix(srv.URL, "unix://")
	c.Expect(0, "xadd", "s", "--pid", "p", "--iid", "i0", "f", "v")
	for _, cmd := range []string{"multi", "watch", "exec", "exists", "xinfo", "xadd"} {
		user := "no-" + cmd
		if err := rdb.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-"+cmd).Err(); err != nil {
			t.Fatal(err)
		}
		as := c.With("IDMPCTL_URL=unix://" + user + ":pw@" + sock)
		for _, out := range []string{"json", "raw"} {
			if cmd == "xinfo" && out == "raw" {
				continue // raw output asks no outcome: no XINFO sent
			}
			before := keyDump(t, rdb)
			r := as.Run("xadd", "s", "--pid", "p", "--iid", "i-"+cmd, "f", "v", "-o", out)
			if r.Code != 77 || !strings.Contains(r.Stderr, "'"+cmd) {
				t.Errorf("without %s, -o %s: want 77 naming it; got %s", cmd, out, r)
			}
			sameDump(t, "without "+cmd+", -o "+out, before, keyDump(t, rdb))
		}
	}
	if n := rdb.XLen(ctx, "s").Val(); n != 1 {
		t.Fatalf("XLEN %d, want 1", n)
	}
}
