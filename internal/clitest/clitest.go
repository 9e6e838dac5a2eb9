// Package clitest runs the idmpctl on PATH (e2e's TestMain puts its test
// binary there) in tests, in a directory of the test, with an environment
// scrubbed of what would change where or how idmpctl connects or prints.
package clitest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Unset lists the variables a test's idmpctl never inherits: a host's URL
// or password (an empty REDISCLI_AUTH still sends AUTH), and the colour and
// terminal switches.
var Unset = []string{"IDMPCTL_URL", "REDIS_URL", "IDMPCTL_PASSWORD", "REDISCLI_AUTH",
	"NO_COLOR", "CLICOLOR_FORCE", "IDMPCTL_FORCE_TTY", "IDMPCTL_FORCE_TTY_IN", "COLUMNS"}

// Scrub returns env (NAME=value pairs) without the variables of Unset, and
// with atexit_sleep_ms=0 added to GORACE: idmpctl is a test binary, which
// under -race otherwise sleeps 1 s at exit.
func Scrub(env []string) []string {
	var out []string
	gorace := ""
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case name == "GORACE":
			gorace = value
		case !slices.Contains(Unset, name):
			out = append(out, kv)
		}
	}
	return append(out, "GORACE="+strings.TrimSpace(gorace+" atexit_sleep_ms=0"))
}

// Env is the test process's environment, scrubbed, plus extra.
func Env(extra ...string) []string {
	return append(Scrub(os.Environ()), extra...)
}

// CLI runs idmpctl for one test.
type CLI struct {
	Dir   string    // working directory of every run; Start keeps its output files here
	Env   []string  // environment of every run
	Stdin io.Reader // standard input of its runs (a reader is used up by the first); nil: /dev/null
	t     testing.TB
}

// New is a CLI for t in a temporary directory of t, with the scrubbed
// environment plus env (for example "IDMPCTL_URL="+srv.URL).
func New(t testing.TB, env ...string) *CLI {
	return &CLI{Dir: t.TempDir(), Env: Env(env...), t: t}
}

// With is a copy of c whose runs get env as well (later values win).
func (c *CLI) With(env ...string) *CLI {
	cp := *c
	cp.Env = append(slices.Clip(c.Env), env...)
	return &cp
}

// WithStdin is a copy of c whose runs read stdin (an *os.File, such as a
// pipe's read end, is handed to idmpctl as is).
func (c *CLI) WithStdin(stdin io.Reader) *CLI {
	cp := *c
	cp.Stdin = stdin
	return &cp
}

// Run runs idmpctl to completion, bounded by a minute.
func (c *CLI) Run(args ...string) Result {
	c.t.Helper()
	return c.start(args).Wait(time.Minute)
}

// Expect runs idmpctl and fails the test unless it exits with code.
func (c *CLI) Expect(code int, args ...string) Result {
	c.t.Helper()
	r := c.Run(args...)
	if r.Code != code {
		c.t.Fatalf("want exit %d, got %s", code, r)
	}
	return r
}

// Start launches idmpctl in the background, killed at cleanup. Its output
// goes to files, not pipes: Wait returns when idmpctl exits even when a
// grandchild still holds an inherited descriptor.
func (c *CLI) Start(args ...string) *Proc {
	c.t.Helper()
	p := c.start(args)
	c.t.Cleanup(func() {
		_ = p.Kill()
		<-p.done
	})
	return p
}

func (c *CLI) start(args []string) *Proc {
	t := c.t
	t.Helper()
	outF, err := os.CreateTemp(c.Dir, ".stdout-*")
	if err != nil {
		t.Fatal(err)
	}
	errF, err := os.CreateTemp(c.Dir, ".stderr-*")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("idmpctl", args...)
	cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Dir, c.Env, c.Stdin, outF, errF
	p := &Proc{t: t, cmd: cmd, errPath: errF.Name(), done: make(chan struct{})}
	p.res.Args = args
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start idmpctl: %v", err)
	}
	go func() {
		_ = cmd.Wait()
		p.res.Elapsed = time.Since(start)
		p.res.Code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.res.Signal = ws.Signal()
		}
		p.res.Stdout, p.res.Stderr = readAndRemove(outF), readAndRemove(errF)
		close(p.done)
	}()
	return p
}

func readAndRemove(f *os.File) string {
	b, _ := os.ReadFile(f.Name())
	_ = f.Close()
	_ = os.Remove(f.Name())
	return string(b)
}

// Result is how one idmpctl ended.
type Result struct {
	Args           []string
	Code           int            // exit code; -1 when ended by a signal
	Signal         syscall.Signal // the signal that ended it, if any
	Stdout, Stderr string
	Elapsed        time.Duration
}

func (r Result) String() string {
	how := fmt.Sprintf("exit %d", r.Code)
	if r.Signal != 0 {
		how = "killed by " + r.Signal.String()
	}
	return fmt.Sprintf("idmpctl %s: %s after %s\n--- stdout\n%s\n--- stderr\n%s",
		strings.Join(r.Args, " "), how, r.Elapsed.Round(time.Millisecond), clip(r.Stdout), clip(r.Stderr))
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:1000] + "\n...\n" + s[len(s)-1000:]
	}
	return s
}

// Proc is an idmpctl started in the background.
type Proc struct {
	t       testing.TB
	cmd     *exec.Cmd
	errPath string
	done    chan struct{}
	res     Result
}

// Pid is idmpctl's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL to idmpctl (never to a reused pid: os.Process tracks
// the child it started).
func (p *Proc) Kill() error { return p.cmd.Process.Kill() }

// Exited reports whether idmpctl has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// StderrSoFar is what idmpctl has written to stderr yet.
func (p *Proc) StderrSoFar() string {
	if p.Exited() {
		return p.res.Stderr
	}
	b, _ := os.ReadFile(p.errPath)
	return string(b)
}

// Status describes how idmpctl ended, or that it still runs.
func (p *Proc) Status() string {
	if !p.Exited() {
		return "still running"
	}
	return p.res.String()
}

// Wait waits up to bound for idmpctl to end; past it, kills it and fails
// the test.
func (p *Proc) Wait(bound time.Duration) Result {
	p.t.Helper()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.res
	case <-timer.C:
	}
	_ = p.Kill()
	<-p.done
	p.t.Fatalf("still running after %s, killed: %s", bound, p.res)
	return p.res
}
