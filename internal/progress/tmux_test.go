package progress

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/term"
)

// demoEnv makes the test binary run demo instead of the tests: the program
// that TestInTmux runs on a real terminal.
const demoEnv = "IDMPCTL_PROGRESS_DEMO"

func TestMain(m *testing.M) {
	if dir := os.Getenv(demoEnv); dir != "" {
		demo(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// demo is xadd --batch in miniature: progress on stderr while lines are
// "read" (until dir/stop appears, 8 s at most), then a summary line.
func demo(dir string) {
	const total = 4_000_000 // bytes: 20 a line
	enabled := term.IsTerminal(int(os.Stderr.Fd()))
	bar := New(os.Stderr, enabled, Options{Label: "xadd --batch", Unit: "lines", Total: total})
	defer bar.Finish()
	var lines int64
	for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); {
		if _, err := os.Stat(filepath.Join(dir, "stop")); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
		lines += 100
		bar.Set(lines, min(lines*20, total))
	}
	bar.Finish()
	fmt.Fprintf(os.Stderr, "xadd: %d lines, terminal %v\n", lines, enabled)
	time.Sleep(8 * time.Second) // keep the pane until the test ends it
}

// TestInTmux runs demo on a tmux pane (stderr on the terminal) and reads
// the screen: the progress line appears and reads sensibly, and is gone
// when the summary prints.
func TestInTmux(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux not installed")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "sock")
	run := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		return string(out), err
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf("env %s=%s %s -test.run=^$ >/dev/null", demoEnv, shellQuote(dir), shellQuote(self))
	if out, err := run("new-session", "-d", "-s", "demo", "-x", "100", "-y", "10", cmd); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = run("kill-server") })

	// waitFor polls the pane (for 5 s at most) until a line matches re.
	waitFor := func(re *regexp.Regexp) (string, string) {
		t.Helper()
		var screen string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			out, err := run("capture-pane", "-p", "-t", "demo")
			if err != nil {
				t.Fatalf("capture-pane: %v: %s", err, out)
			}
			screen = out
			for _, line := range strings.Split(out, "\n") {
				if re.MatchString(line) {
					return line, screen
				}
			}
		}
		t.Fatalf("no line matches %s; the pane shows:\n%s", re, screen)
		return "", ""
	}

	progress := regexp.MustCompile(`^xadd --batch: \d{1,3}(,\d{3})* lines  \d[\d.]*k? lines/s  \[=*>? *\] \d{1,3}%  ETA \d+:\d\d$`)
	line, _ := waitFor(progress)
	t.Logf("progress line: %q", line)

	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	line, screen := waitFor(regexp.MustCompile(`^xadd: \d+ lines, terminal true$`))
	t.Logf("summary line: %q", line)
	// The summary took the progress line's place, and nothing of it is left.
	if first, _, _ := strings.Cut(screen, "\n"); first != line {
		t.Errorf("the summary is not on the first line:\n%s", screen)
	}
	if strings.Contains(screen, "lines/s") || strings.Contains(screen, "ETA") {
		t.Errorf("the progress line is still on the screen:\n%s", screen)
	}
}

func shellQuote(s string) string {
	if strings.ContainsRune(s, '\'') {
		panic(errors.New("quote in path: " + s))
	}
	return "'" + s + "'"
}
