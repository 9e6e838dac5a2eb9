//go:build unix

package e2e

import (
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
)

// shell starts an interactive bash on a pane of its own (cols x 20) as a
// user's clean one: bash --norc --noprofile, the environment env alone
// (NAME=value), the prompt "$ ".
func (s *tmuxServer) shell(t *testing.T, name string, cols int, env []string) *tmuxPane {
	t.Helper()
	args := []string{"new-session", "-d", "-s", name, "-c", s.dir, "-x", fmt.Sprint(cols), "-y", "20", "--", "env", "-i"}
	args = append(append(args, env...), "PS1=$ ", "TERM=screen", "bash", "--norc", "--noprofile")
	if out, err := s.tmux(args...); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	pane := &tmuxPane{t: t, s: s, name: name}
	pane.waitFor(`^\$ ?$`, 10*time.Second)
	return pane
}

// send types keys on the pane, as tmux send-keys names them ("Tab",
// "Enter", "C-u"; anything else is typed as it is).
func (p *tmuxPane) send(keys ...string) {
	p.t.Helper()
	if out, err := p.s.tmux(append([]string{"send-keys", "-t", p.name}, keys...)...); err != nil {
		p.t.Fatalf("tmux send-keys: %v: %s", err, out)
	}
}

// shellEnv is what a user's shell would have: idmpctl on PATH (the test
// binary, as for the other tests), HOME, and the server's URL.
func shellEnv(t *testing.T, url string) []string {
	env := []string{"HOME=" + t.TempDir(), "IDMPCTL_URL=" + url}
	for _, kv := range clitest.Env() {
		if name, _, _ := strings.Cut(kv, "="); name == "PATH" || name == "GORACE" {
			env = append(env, kv)
		}
	}
	return env
}

// TestCompletionInPlainBash sources the checked-in bash script (kept
// current by TestCompletionsCurrent) in a bash without the bash-completion
// package, as a new user's is, and presses Tab: commands, flag values
// (--status=..., -o, --mode) and key names from the server complete, and
// no Tab prints "_get_comp_words_by_ref: command not found" (cobra's V2
// script alone needs that package). With the package loaded (where it is
// installed), the same.
func TestCompletionInPlainBash(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux not installed")
	}
	srv := redistest.New(t)
	for _, k := range []string{"job:1", "job:2", "other"} {
		if _, err := srv.Do("SET", k, "x"); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs("../completions/idmpctl.bash")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	term := &tmuxServer{t: t, bin: tmux, sock: filepath.Join(dir, "tmux.sock"), dir: dir}
	t.Cleanup(term.kill)

	setups := map[string]string{"plain": "source " + shellQuote(script)}
	const pkg = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(pkg); err == nil {
		setups["bash-completion"] = "source " + pkg + "; source " + shellQuote(script)
	} else {
		t.Logf("%s not installed: only the plain bash", pkg)
	}
	for name, setup := range setups {
		t.Run(name, func(t *testing.T) {
			pane := term.shell(t, name, 120, shellEnv(t, srv.URL))
			pane.send(setup, "Enter")
			pane.waitFor(`^\$ ?$`, 10*time.Second)
			// The screen cleared and bash's prompt back before typing: keys
			// sent while clear ran were echoed ahead of the prompt, and the
			// completed line did not start the row ("idmpctl insp    $
			// idmpctl inspect").
			pane.send("clear; echo READY", "Enter")
			pane.waitFor(`^READY$`, 10*time.Second)
			pane.waitFor(`^\$ ?$`, 10*time.Second)

			// A verb.
			pane.send("idmpctl insp", "Tab")
			pane.waitFor(`^\$ idmpctl inspect ?$`, 10*time.Second)
			// --status=: the word after the = (bash splits there).
			pane.send("C-u", "idmpctl purge --match 'job:*' --status=DO", "Tab")
			pane.waitFor(`^\$ idmpctl purge --match 'job:\*' --status=DONE$`, 10*time.Second)
			// Key names from the server, past the colon bash splits at.
			pane.send("C-u", "idmpctl inspect job:", "Tab", "Tab")
			pane.waitFor(`^1\s+2$`, 10*time.Second)
			pane.send("C-u", "idmpctl inspect ot", "Tab")
			pane.waitFor(`^\$ idmpctl inspect other ?$`, 10*time.Second)
			// -o and --mode values, with what each is.
			pane.send("C-u", "idmpctl -o ", "Tab", "Tab")
			pane.waitFor(`^prometheus\s+\(metrics, for inspect\)$`, 10*time.Second)
			pane.send("C-u", "idmpctl xadd s --mode ", "Tab", "Tab")
			pane.waitFor(`^emulated\s+\(idmpctl's atomic Lua\)$`, 10*time.Second)
			screen := pane.screen()
			t.Logf("screen:\n%s", screen)
			if strings.Contains(screen, "command not found") || strings.Contains(screen, "_get_comp_words_by_ref") {
				t.Errorf("a Tab printed an error:\n%s", screen)
			}
		})
	}
}

// TestExecPromptOnTerminal runs exec with no COMMAND on a real terminal
// (tmux): redis-cli's prompt, replies in redis-cli's interactive form,
// line editing (Ctrl-A, arrows) and history (Up), help, and Ctrl-D to
// leave with 0 and the terminal as it was; piped stdin on the same
// terminal keeps the script mode (no prompt).
func TestExecPromptOnTerminal(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux not installed")
	}
	srv := redistest.New(t)
	dir := t.TempDir()
	term := &tmuxServer{t: t, bin: tmux, sock: filepath.Join(dir, "tmux.sock"), dir: dir}
	t.Cleanup(term.kill)
	pane := term.shell(t, "exec", 100, shellEnv(t, srv.URL))
	pane.send("stty -a > before.txt; clear; idmpctl exec; echo exit=$?", "Enter")
	prompt := `^redis ` + regexp.QuoteMeta(srv.Addr) + `>`
	pane.waitFor(prompt+` ?$`, 10*time.Second) // capture-pane drops trailing blanks

	pane.send("SET greeting hello", "Enter")
	pane.waitFor(`^OK$`, 10*time.Second)
	// Editing: typed wrong, fixed at the line's start (Ctrl-A) and by
	// moving left, as in redis-cli.
	pane.send("ET greetin", "C-a", "G", "C-e", "g", "Enter")
	pane.waitFor(`^"hello"$`, 10*time.Second)
	// History: Up twice brings back the SET; edited at its end.
	pane.send("Up", "Up", "BSpace", "BSpace", "BSpace", "BSpace", "BSpace", "world", "Enter")
	pane.waitFor(prompt+` SET greeting world$`, 10*time.Second)
	pane.send("Up", "Up", "Enter")
	pane.waitFor(`^"world"$`, 10*time.Second)
	pane.send("help XADD", "Enter")
	pane.waitFor(`^XADD key \[NOMKSTREAM\]`, 10*time.Second)
	pane.send("NOSUCH", "Enter")
	pane.waitFor(`^\(error\) ERR unknown command 'NOSUCH'`, 10*time.Second)
	// Ctrl-D leaves: 0, the shell's prompt on a line of its own.
	pane.send("C-d")
	pane.waitFor(`^exit=0$`, 10*time.Second)
	pane.send("stty -a > after.txt; echo PING | idmpctl exec; echo exit=$?", "Enter")
	pane.waitFor(`^PONG$`, 10*time.Second)
	screen := pane.screen()
	t.Logf("screen:\n%s", screen)
	if strings.Count(screen, "> PING") > 0 {
		t.Errorf("piped stdin got a prompt:\n%s", screen)
	}
	before, err1 := os.ReadFile(filepath.Join(term.dir, "before.txt"))
	after, err2 := os.ReadFile(filepath.Join(term.dir, "after.txt"))
	if err1 != nil || err2 != nil || string(before) != string(after) {
		t.Errorf("the terminal's modes changed (%v, %v):\nbefore: %s\nafter:  %s", err1, err2, before, after)
	}
}
