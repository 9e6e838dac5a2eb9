//go:build unix

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// TestBatchPipeLineByLine: xadd --batch - whose stdout is a pipe writes
// each line's result once the line is committed, while its input is still
// open: a consumer that acknowledges its messages on those results must not
// wait for EOF. Each result is awaited with a generous bound (a failure, not
// a speed: the old build wrote nothing before EOF).
func TestBatchPipeLineByLine(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	cmd := exec.Command("idmpctl", "xadd", "orders", "--pid", "p1", "--batch", "-")
	cmd.Env = clitest.Env("IDMPCTL_URL=" + srv.URL)
	cmd.Dir = t.TempDir()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outPipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	result := regexp.MustCompile(`^\d+-\d+\tadded$`)
	for i := 1; i <= 3; i++ {
		if _, err := fmt.Fprintf(in, `{"iid":"order-%d","fields":{"n":"%d"}}`+"\n", i, i); err != nil {
			t.Fatal(err)
		}
		select {
		case l, ok := <-lines:
			if !ok || !result.MatchString(l) {
				t.Fatalf("line %d: result %q (open %v)", i, l, ok)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("line %d: no result while the input stays open", i)
		}
	}
	_ = in.Close()
	if rest, _ := io.ReadAll(outPipe); len(rest) > 0 {
		t.Errorf("after EOF: %q", rest)
	}
}
