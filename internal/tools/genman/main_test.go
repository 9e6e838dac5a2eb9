package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// manDir is the checked-in man/ folder, from this package's directory.
var manDir = filepath.Join("..", "..", "..", "man")

// TestManPagesCurrent fails when man/ no longer matches the command tree,
// the exit codes or the environment list: run `make man` and commit the
// result. It regenerates into a temporary directory, as `make man` would.
func TestManPagesCurrent(t *testing.T) {
	tmp := t.TempDir()
	if err := write(tmp); err != nil {
		t.Fatal(err)
	}
	fresh, err := filepath.Glob(filepath.Join(tmp, "*.1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fresh) == 0 {
		t.Fatal("no pages generated")
	}
	for _, f := range fresh {
		name := filepath.Base(f)
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(manDir, name))
		if err != nil {
			t.Errorf("man/%s: %v (run make man)", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("man/%s is stale: run make man", name)
		}
	}
	checkedIn, err := filepath.Glob(filepath.Join(manDir, "*.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range checkedIn {
		if _, err := os.Stat(filepath.Join(tmp, filepath.Base(f))); err != nil {
			t.Errorf("man/%s belongs to no command: run make man", filepath.Base(f))
		}
	}
}

// TestReproducible: two runs give the same bytes (no date, no map order).
func TestReproducible(t *testing.T) {
	a, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	b, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names(a), " ") != strings.Join(names(b), " ") {
		t.Fatalf("page sets differ: %v vs %v", names(a), names(b))
	}
	for n := range a {
		if !bytes.Equal(a[n], b[n]) {
			t.Errorf("%s differs between two runs", n)
		}
	}
}

// TestRootPageSections: idmpctl(1) carries the exit-code contract and the
// environment, and every page has EXIT STATUS: the other pages point to
// idmpctl(1) and the exit-codes help topic rather than repeat the table.
func TestRootPageSections(t *testing.T) {
	pages, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	root := string(pages["idmpctl.1"])
	for _, want := range []string{
		".TH \"IDMPCTL\" \"1\" \"Nov 2026\" \"idmpctl\" \"idmpctl manual\"",
		".SH EXIT STATUS\n", ".SH ENVIRONMENT\n", ".B 64\nusage: bad flag",
		".B 78\nconfiguration: bad URL", ".B IDMPCTL_URL\n", ".B REDISCLI_AUTH\n",
		".SH SEE ALSO\n", "idmpctl-xadd(1)",
	} {
		if !strings.Contains(root, want) {
			t.Errorf("idmpctl.1 lacks %q", want)
		}
	}
	if strings.Contains(root, "Auto generated") {
		t.Error("idmpctl.1 has cobra's auto-generated tag")
	}
	if strings.Index(root, ".SH EXIT STATUS") > strings.Index(root, ".SH SEE ALSO") {
		t.Error("EXIT STATUS comes after SEE ALSO")
	}
	for _, n := range []string{"idmpctl-xadd.1", "idmpctl-claim-acquire.1", "idmpctl-claim-run.1", "idmpctl-version.1"} {
		p, ok := pages[n]
		if !ok {
			t.Errorf("no page %s among %v", n, names(pages))
			continue
		}
		if !bytes.Contains(p, []byte(".SH EXIT STATUS\n")) {
			t.Errorf("%s lacks EXIT STATUS", n)
		}
		if !bytes.Contains(p, []byte("idmpctl help exit\\-codes")) || bytes.Contains(p, []byte(".B 64\n")) {
			t.Errorf("%s: EXIT STATUS should point to idmpctl(1) and idmpctl help exit-codes, not repeat the table", n)
		}
	}
}

// TestEnvironmentDocumented: every variable cmd/ reads is in the
// ENVIRONMENT section.
func TestEnvironmentDocumented(t *testing.T) {
	documented := map[string]bool{}
	for _, v := range environment {
		for _, n := range strings.Split(v.Name, ",") {
			documented[strings.TrimSpace(n)] = true
		}
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "cmd", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("cmd/*.go: %v", err)
	}
	re := regexp.MustCompile(`(?i)getenv\("([A-Za-z0-9_]+)"\)`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(src, -1) {
			if name := string(m[1]); !documented[name] {
				t.Errorf("%s reads %s, which the ENVIRONMENT section does not list (internal/tools/genman)", filepath.Base(f), name)
			}
		}
	}
}

// names returns the page names in order (for messages).
func names(pages map[string][]byte) []string {
	var out []string
	for n := range pages {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
