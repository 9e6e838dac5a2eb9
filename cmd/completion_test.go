package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCompletionsCurrent fails when completions/ no longer matches the
// command tree: run `make completions` and commit the result.
func TestCompletionsCurrent(t *testing.T) {
	for shell, file := range map[string]string{
		"bash": "idmpctl.bash", "zsh": "_idmpctl", "fish": "idmpctl.fish", "powershell": "idmpctl.ps1",
	} {
		var out, errb bytes.Buffer
		f := &Factory{Out: &out, Err: &errb, Getenv: func(string) string { return "" },
			IsTTY: func(any) bool { return false }}
		if code := run(f, []string{"completion", shell}); code != 0 {
			t.Fatalf("completion %s: exit %d: %s", shell, code, errb.String())
		}
		want, err := os.ReadFile(filepath.Join("..", "completions", file))
		if err != nil {
			t.Fatalf("%v (run make completions)", err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("completions/%s is stale: run make completions", file)
		}
	}
}
