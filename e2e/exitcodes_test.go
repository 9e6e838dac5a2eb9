package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
)

// TestGoldenExitCodes: every `exits N` of the golden scripts is a code of
// the contract (the README's table, which "idmpctl help exit-codes" and
// idmpctl(1) print too: exit.Table), except what claim run passes through
// from the command it ran.
func TestGoldenExitCodes(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	contract := contractCodes(t, string(readme))
	for code := range contract {
		if !strings.Contains(exit.Table, "\n"+pad(code)+"  ") && !strings.Contains(exit.Table, pad(code)+", ") {
			t.Errorf("exit code %d is in the README's table but not in the help topic's (exit.Table)", code)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^ *([0-9]+)  `).FindAllStringSubmatch(exit.Table, -1) {
		if code, _ := strconv.Atoi(m[1]); !contract[code] {
			t.Errorf("exit code %d is in the help topic's table (exit.Table) but not in the README's", code)
		}
	}
	files, _ := filepath.Glob("../testdata/script/*/*.txtar")
	more, _ := filepath.Glob("../testdata/cluster/*.txtar")
	exits := regexp.MustCompile(`^\s*(?:\[[^]]*\]\s*)*exits (\d+) (.*)$`)
	checked := 0
	for _, name := range append(files, more...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "-- ") { // the archive's files begin
				break
			}
			m := exits.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			code, _ := strconv.Atoi(m[1])
			checked++
			if strings.Contains(m[2], "claim run") && !contract[code] {
				continue // the command's own code, passed through
			}
			if !contract[code] {
				t.Errorf("%s:%d: exits %d is not a code of the contract: %s", name, i+1, code, line)
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d exits lines found: is the pattern right?", checked)
	}
}

// contractCodes reads the codes of the README's "## Exit codes" table.
func contractCodes(t *testing.T, readme string) map[int]bool {
	_, section, ok := strings.Cut(readme, "\n## Exit codes\n")
	if !ok {
		t.Fatal("README.md has no ## Exit codes section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile(`(?m)^\| ([0-9, ]+) \|`)
	codes := map[int]bool{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		for _, f := range strings.Split(m[1], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("README exit code %q: %v", f, err)
			}
			codes[n] = true
		}
	}
	if len(codes) < 10 {
		t.Fatalf("README's exit code table has %d codes", len(codes))
	}
	return codes
}

func pad(code int) string {
	s := strconv.Itoa(code)
	return strings.Repeat(" ", max(0, 4-len(s))) + s
}
