//go:build unix

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// The consumer loop of docs/claim-run.md, run as it is written (its flags
// included): each message's side effect runs once, a redelivery of a done
// message is acknowledged without running it again, and a failure is nacked.
func TestScenarioReadmeConsumerLoop(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(claimRunDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "A consumer loop that runs each message's side effect at most once:\n\n```sh\n")
	loop, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 || !strings.Contains(loop, "claim run") {
		t.Fatal(claimRunDoc + ": the consumer loop is not where this test looks for it")
	}
	srv := redistest.NewWith(t, redistest.Options{})
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	write := func(name, body string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(c.Dir, name), []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("send-invoice.sh", "#!/bin/sh\necho \"$1\" >> effects\n[ \"$1\" = 2 ] && exit 3\nexit 0\n", 0o755)
	write("loop.sh", `ack() { echo "ack $1" >> decisions; }
requeue() { echo "requeue $1" >> decisions; }
nack() { echo "nack $1" >> decisions; }
dead_letter() { echo "dead_letter $1" >> decisions; }
`+loop, 0o644)
	cmd := exec.Command("sh", "loop.sh")
	cmd.Dir, cmd.Env = c.Dir, c.Env
	cmd.Stdin = strings.NewReader("1 {\"amount\":100}\n2 {\"amount\":7}\n1 {\"amount\":100}\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the loop: %v\n%s", err, out)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(c.Dir, name))
		return string(b)
	}
	if got, want := read("decisions"), "ack 1\nnack 2\nack 1\n"; got != want {
		t.Errorf("decisions:\n%s\nwant:\n%s\nloop output:\n%s", got, want, out)
	}
	if got, want := read("effects"), "1\n2\n"; got != want {
		t.Errorf("side effects:\n%s\nwant:\n%s", got, want)
	}

	// A command that cannot start (126 not executable, 127 not found)
	// fails alike at every retry: dead-lettered, not nacked for ever
	// (issue 30 item 8, finding 18).
	for _, m := range []struct{ id, why string }{{"3", "chmod"}, {"4", "remove"}} {
		var err error
		if m.why == "chmod" {
			err = os.Chmod(filepath.Join(c.Dir, "send-invoice.sh"), 0o644)
		} else {
			err = os.Remove(filepath.Join(c.Dir, "send-invoice.sh"))
		}
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", "loop.sh")
		cmd.Dir, cmd.Env = c.Dir, c.Env
		cmd.Stdin = strings.NewReader(m.id + " {}\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the loop: %v\n%s", err, out)
		}
	}
	if got, want := read("decisions"), "ack 1\nnack 2\nack 1\ndead_letter 3\ndead_letter 4\n"; got != want {
		t.Errorf("decisions:\n%s\nwant:\n%s", got, want)
	}
}
