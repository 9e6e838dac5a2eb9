package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/cmd"
	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/script and testdata/cluster")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"idmpctl": func() { os.Exit(cmd.Main()) },
	})
}

// TestScript runs the golden CLI scripts of testdata/script, each against a
// redis-server of its own on a unix socket in $WORK ($IDMPCTL_URL). A
// script may add a `redis.conf` section with extra server config lines.
// The scripts are grouped by verb, a folder each (xadd/, claim/, ...,
// general/ for what every verb shares): a subtest per folder, and in it
// one per script, TestScript/xadd/xadd_basic. The folders run in
// parallel, as the scripts of one folder do. Their custom commands and
// conditions are in testdata/script/README.md.
func TestScript(t *testing.T) {
	const root = "../testdata/script"
	if loose, _ := filepath.Glob(filepath.Join(root, "*.tx*")); len(loose) > 0 {
		t.Fatalf("%v: a script goes in the folder of its verb (or general/), where TestScript runs it", loose)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	folders := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if scripts, _ := filepath.Glob(filepath.Join(dir, "*.txtar")); len(scripts) == 0 {
			t.Errorf("%s: no scripts", dir)
			continue
		}
		folders++
		t.Run(e.Name(), func(t *testing.T) {
			t.Parallel()
			testscript.Run(t, scriptParams(dir))
		})
	}
	if folders == 0 {
		t.Fatalf("%s: no folders of scripts", root)
	}
}

func scriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       *update,
		Setup:               setupRedis,
		Condition:           condition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":         cmdExits,
			"sleep":         cmdSleep,
			"redis-stop":    cmdRedisStop,
			"redis-freeze":  cmdRedisSignal("STOP"),
			"redis-thaw":    cmdRedisSignal("CONT"),
			"redis-restart": cmdRedisRestart,
			"envstdout":     cmdEnvStdout,
			"http-listen":   cmdHTTPListen,
			"jsonshape":     cmdJSONShape,
			"waitfile":      cmdWaitFile,
		},
	}
}

func setupRedis(env *testscript.Env) error {
	var extra []string
	if b, err := os.ReadFile(filepath.Join(env.WorkDir, "redis.conf")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				extra = append(extra, line)
			}
		}
	}
	srv, err := redistest.Start(redistest.Options{Dir: filepath.Join(env.WorkDir, ".redis"), Unix: true, Config: extra})
	if err != nil {
		return err
	}
	env.Values["redis"] = srv
	env.Defer(srv.Stop)
	env.Vars = clitest.Scrub(env.Vars)
	env.Setenv("IDMPCTL_URL", srv.URL)
	env.Setenv("REDIS_SOCK", srv.Addr)
	env.Setenv("HOME", env.WorkDir)
	// The fake terminal of IDMPCTL_FORCE_TTY is 120 columns wide, what-
	// ever the terminal running the tests: tables fit it the same way
	// everywhere. A script sets COLUMNS to test other widths.
	env.Setenv("COLUMNS", "120")
	return nil
}

// cmdExits runs a program and checks its exact exit code:
//
//	exits 64 idmpctl calc-maxsize --rate 0 --mark-delay 80ms
//
// Its stdout and stderr are kept for the stdout/stderr/cmp checks after it.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// cmdSleep waits: sleep 400ms. Scripts use it only where a lease or a
// duration must pass on the server's clock; they never assert a speed.
func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

// cmdHTTPListen starts an HTTP server (net/http) on a loopback port for the
// rest of the script, and sets HTTP_ADDR to its host:port: something that
// answers on a port, but not in Redis's protocol.
//
//	http-listen
func cmdHTTPListen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: http-listen")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not found", http.StatusNotFound)
	}))
	ts.Defer(srv.Close)
	ts.Setenv("HTTP_ADDR", srv.Listener.Addr().String())
}

// cmdEnvStdout sets the variable NAME to the last command's stdout,
// trimmed: the fencing token claim acquire printed, for the next steps
// (tokens come from the server's clock).
func cmdEnvStdout(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: envstdout NAME")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
}

// cmdWaitFile waits (10 s at most) until a file exists: a command in the
// background (exec ... &name&) says it started by creating it.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
	}
	ts.Fatalf("%s: not created within 10s", args[0])
}

// cmdJSONShape replaces stdout with the shape of the JSON values the last
// command printed (one object a line, or indented): a line a key, its path
// and its kind, strings and booleans with their value, sorted, an empty
// line between values. Numbers (server times, tokens) are <number>: the
// golden holds the names, which must not change.
func cmdJSONShape(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: jsonshape")
	}
	dec := json.NewDecoder(strings.NewReader(ts.ReadFile("stdout")))
	out := ts.Stdout()
	for n := 0; dec.More(); n++ {
		var v any
		ts.Check(dec.Decode(&v))
		if n > 0 {
			fmt.Fprintln(out)
		}
		var lines []string
		var walk func(v any, at string)
		walk = func(v any, at string) {
			switch v := v.(type) {
			case map[string]any:
				for k, e := range v {
					walk(e, strings.TrimPrefix(at+"."+k, "."))
				}
				return
			case []any:
				for _, e := range v {
					walk(e, at+"[]")
				}
				return
			case float64:
				lines = append(lines, at+": <number>")
			case nil:
				lines = append(lines, at+": null")
			default:
				b, _ := json.Marshal(v)
				lines = append(lines, at+": "+string(b))
			}
		}
		walk(v, "")
		slices.Sort(lines)
		fmt.Fprintln(out, strings.Join(slices.Compact(lines), "\n"))
	}
}

func server(ts *testscript.TestScript) *redistest.Server {
	return ts.Value("redis").(*redistest.Server)
}

func cmdRedisStop(ts *testscript.TestScript, neg bool, args []string) {
	server(ts).Kill()
}

func cmdRedisRestart(ts *testscript.TestScript, neg bool, args []string) {
	ts.Check(server(ts).Restart())
}

func cmdRedisSignal(sig string) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		p, err := os.FindProcess(server(ts).Pid())
		ts.Check(err)
		if sig == "STOP" {
			ts.Check(p.Signal(stopSignal))
		} else {
			ts.Check(p.Signal(contSignal))
		}
	}
}

var (
	nativeOnce sync.Once
	nativeIDMP bool
	nativeErr  error
)

// condition knows [redis:8.6]: the test server binary has native IDMP
// (probed once, with COMMAND INFO XCFGSET), [redis:7.0] and [redis:7.2]:
// its version is 7.0 (redis.acl_check_cmd) or 7.2 (WAITAOF) or later, and
// [valkey].
func condition(cond string) (bool, error) {
	switch cond {
	case "redis:7.0":
		return redistest.AtLeast(7, 0), nil
	case "redis:7.2":
		return redistest.AtLeast(7, 2), nil
	case "redis:8.6":
		nativeOnce.Do(func() { nativeIDMP, nativeErr = probeNativeIDMP() })
		return nativeIDMP, nativeErr
	case "valkey":
		return redistest.IsValkey(), nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// nativeServer reports whether the server under test has native IDMP
// (Redis 8.6+): auto mode is native there, and inspect shows the native
// view of a stream. Probed once, as [redis:8.6] is.
func nativeServer(t testing.TB) bool {
	t.Helper()
	native, err := condition("redis:8.6")
	if err != nil {
		t.Fatal(err)
	}
	return native
}

func probeNativeIDMP() (bool, error) {
	dir, err := os.MkdirTemp("", "idmp-probe")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	srv, err := redistest.Start(redistest.Options{Dir: dir, Unix: true})
	if err != nil {
		return false, err
	}
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := redistest.Dial(ctx, redisconn.ConnConfig{URL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		return false, err
	}
	defer c.Close()
	caps, err := c.Capabilities(ctx)
	return caps.NativeIDMP, err
}
