package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/idmpctl/idmpctl/internal/render"
)

// TestProgressOnTerminal runs the real idmpctl on a tmux pane (stderr on a
// terminal, stdout to a file) against a real server, and reads the screen:
// xadd --batch over a 200,000-line file, inspect --match and purge --match
// over 200,000 records each draw their progress line while they work, and
// the summary takes its place at the end with nothing of it left. With its
// results streaming to the same terminal, xadd --batch draws none.
func TestProgressOnTerminal(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux not installed")
	}
	if testing.Short() {
		t.Skip("200,000 adds in -short mode")
	}
	srv := redistest.New(t)
	dir := t.TempDir()
	const lines = 200_000
	n := render.Count(lines) // the summaries count with separators
	writeBatch(t, filepath.Join(dir, "big.ndjson"), lines)

	sock := filepath.Join(dir, "tmux.sock")
	term := &tmuxServer{t: t, bin: tmux, sock: sock, dir: dir, env: clitest.Env("IDMPCTL_URL=" + srv.URL)}
	t.Cleanup(term.kill)

	t.Run("xadd --batch", func(t *testing.T) {
		pane := term.run(t, "batch", "idmpctl xadd orders --pid p1 --batch big.ndjson --timeout 30s > results.txt")
		// count, rate, bar, percentage and ETA: the file's size is known.
		line := pane.waitFor(`^xadd --batch: \d{1,3}(,\d{3})* lines  \d[\d.]*[kM]? lines/s  \[=*>? *\] \d{1,3}%  ETA \d+:\d\d$`, time.Minute)
		t.Logf("progress: %q", line)
		pane.waitDone(2 * time.Minute)
		mode := "emulated" // the chunk script of the server's own mode
		if native, _ := condition("redis:8.6"); native {
			mode = "native"
		}
		pane.wantFinal(fmt.Sprintf("xadd --batch: %s lines: %s added, 0 duplicates (%s)", n, n, mode))
		if n := countLines(t, filepath.Join(dir, "results.txt")); n != lines {
			t.Errorf("results.txt has %d lines, want %d: stdout carries the results alone", n, lines)
		}
	})

	t.Run("xadd --batch to the terminal", func(t *testing.T) {
		// The results stream to the terminal: no progress line among them.
		pane := term.run(t, "batch-tty", "idmpctl xadd orders2 --pid p1 --batch big.ndjson --timeout 30s")
		pane.waitDone(2 * time.Minute)
		written := pane.written("exit=0")
		if n := strings.Count(written, "\tadded\r\n"); n != lines {
			t.Errorf("%d results on the terminal, want %d", n, lines)
		}
		if strings.Contains(written, "lines/s") {
			i := strings.Index(written, "lines/s")
			t.Errorf("a progress line among the results: %q", written[max(i-200, 0):i+10])
		}
		if want := fmt.Sprintf("\nxadd --batch: %s lines: %s added", n, n); !strings.Contains(written, want) {
			t.Errorf("no summary %q", want)
		}
	})

	// 200,000 claim records for the scans.
	if _, err := srv.Do("EVAL", `for i = 1, tonumber(ARGV[1]) do redis.call('HSET', 'idem:' .. i, 'status', 'COMPLETED', 'token', '1', 'created', '1', 'updated', '1') end return 1`, "0", fmt.Sprint(lines)); err != nil {
		t.Fatal(err)
	}

	t.Run("inspect --match", func(t *testing.T) {
		pane := term.run(t, "scan", "idmpctl inspect --match 'idem:*' -o raw > keys.txt")
		// The size of a scan is not known: count, rate and elapsed time.
		line := pane.waitFor(`^inspect --match: \d{1,3}(,\d{3})* keys  \d[\d.]*[kM]? keys/s  \d+:\d\d elapsed$`, time.Minute)
		t.Logf("progress: %q", line)
		pane.waitDone(2 * time.Minute)
		pane.wantFinal(fmt.Sprintf("scanned %s keys, matched %s: COMPLETED %s", n, n, n))
	})

	t.Run("purge --match", func(t *testing.T) {
		pane := term.run(t, "purge", "idmpctl purge --match 'idem:*' --yes -o raw > purged.txt")
		line := pane.waitFor(`^purge --match: \d{1,3}(,\d{3})* keys  \d[\d.]*[kM]? keys/s  \d{1,3}(,\d{3})* deleted  \d+:\d\d elapsed$`, time.Minute)
		t.Logf("progress: %q", line)
		pane.waitDone(2 * time.Minute)
		pane.wantFinal(fmt.Sprintf("purge: scanned %s, matched %s, deleted %s, kept 0, changed 0", n, n, n))
	})
}

// writeBatch writes n NDJSON lines of xadd --batch input.
func writeBatch(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, `{"iid":"order-%d","fields":{"amount":"%d"}}`+"\n", i, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// tmuxServer is a tmux server of the test's own, on a private socket.
type tmuxServer struct {
	t         *testing.T
	bin, sock string
	dir       string   // working directory of the commands
	env       []string // their environment, exported by the pane's script
}

func (s *tmuxServer) tmux(args ...string) (string, error) {
	out, err := exec.Command(s.bin, append([]string{"-S", s.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out), err
}

func (s *tmuxServer) kill() { _, _ = s.tmux("kill-server") }

// run starts a session whose one pane (120x20) runs the shell command line
// in the test's directory, with the environment env alone, then prints
// "exit=CODE" and waits to be killed.
func (s *tmuxServer) run(t *testing.T, name, line string) *tmuxPane {
	t.Helper()
	var script strings.Builder
	for _, kv := range s.env {
		if name, _, _ := strings.Cut(kv, "="); strings.ContainsAny(name, "-.") || name == "" {
			continue // not a shell name
		}
		fmt.Fprintf(&script, "export %s\n", shellQuote(kv))
	}
	// The command waits for NAME.go, which is created once everything
	// written to the pane is being recorded in NAME.log.
	fmt.Fprintf(&script, "export TERM=screen\ncd %s || exit 1\nwhile [ ! -e %s.go ]; do sleep 0.02; done\n%s\necho \"exit=$?\"\nexec sleep 600\n",
		shellQuote(s.dir), name, line)
	path := filepath.Join(s.dir, name+".sh")
	if err := os.WriteFile(path, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := s.tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "20", "env -i /bin/sh "+shellQuote(path)); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	pane := &tmuxPane{t: t, s: s, name: name, log: filepath.Join(s.dir, name+".log")}
	if out, err := s.tmux("pipe-pane", "-o", "-t", name, "cat > "+shellQuote(pane.log)); err != nil {
		t.Fatalf("tmux pipe-pane: %v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(s.dir, name+".go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return pane
}

type tmuxPane struct {
	t    *testing.T
	s    *tmuxServer
	name string
	log  string // everything the command wrote to the terminal
}

// written is everything the command wrote to the terminal, once the
// record holds last (waited for 10 s at most: tmux writes it behind the
// screen).
func (p *tmuxPane) written(last string) string {
	p.t.Helper()
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if b, err = os.ReadFile(p.log); err != nil {
			p.t.Fatal(err)
		}
		if strings.Contains(string(b), last) {
			break
		}
	}
	return string(b)
}

func (p *tmuxPane) screen() string {
	p.t.Helper()
	out, err := p.s.tmux("capture-pane", "-p", "-t", p.name)
	if err != nil {
		p.t.Fatalf("tmux capture-pane: %v: %s", err, out)
	}
	return out
}

// waitFor polls the screen every 20 ms until one of its lines matches
// pattern, and returns that line; after bound it fails.
func (p *tmuxPane) waitFor(pattern string, bound time.Duration) string {
	p.t.Helper()
	re := regexp.MustCompile(pattern)
	var screen string
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		screen = p.screen()
		for _, line := range strings.Split(screen, "\n") {
			if re.MatchString(line) {
				return line
			}
		}
	}
	p.t.Fatalf("no line matches %s within %v; the pane shows:\n%s", re, bound, screen)
	return ""
}

// waitDone waits for the command's "exit=0".
func (p *tmuxPane) waitDone(bound time.Duration) {
	p.t.Helper()
	p.waitFor(`^exit=0$`, bound)
}

// wantFinal checks the screen once the command is done: the summary on the
// first line (where the progress line was drawn), "exit=0" under it, and
// nothing else: no rest of the progress line.
func (p *tmuxPane) wantFinal(summary string) {
	p.t.Helper()
	screen := strings.TrimRight(p.screen(), "\n")
	if want := summary + "\nexit=0"; screen != want {
		p.t.Errorf("final screen:\n%s\nwant:\n%s", screen, want)
	}
	for _, s := range []string{"/s", "elapsed", "ETA", "%"} {
		if strings.Contains(screen, s) {
			p.t.Errorf("the progress line is still on the screen (%q):\n%s", s, screen)
		}
	}
	p.t.Logf("final screen:\n%s", screen)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
