package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The pages whose tables and examples run as tests: the README's exit-code
// table (exitcodes_test.go), docs/roles.md's ACL rules (roles_test.go),
// docs/claim-run.md's consumer loop (readme_loop_test.go), docs/consume.md's
// line that replaces it (consume_test.go); and the pages
// about the tests themselves, checked below.
const (
	rolesDoc    = "../docs/roles.md"
	claimRunDoc = "../docs/claim-run.md"
	consumeDoc  = "../docs/consume.md"
	scriptsDoc  = "../testdata/script/README.md"
)

// TestReadmeListsEveryFile: e2e/README.md's table has a row for every
// file of this folder's tests, and no row for a file that is gone.
func TestReadmeListsEveryFile(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9_]+_test\\.go)` \\|").FindAllStringSubmatch(string(b), -1) {
		rows = append(rows, m[1])
	}
	files, _ := filepath.Glob("*_test.go")
	if len(files) < 30 {
		t.Fatalf("only %d test files found in e2e/", len(files))
	}
	for _, f := range files {
		if !slices.Contains(rows, f) {
			t.Errorf("e2e/README.md: no row for %s: say what it covers", f)
		}
	}
	for _, r := range rows {
		if !slices.Contains(files, r) {
			t.Errorf("e2e/README.md: a row for %s, which is not here", r)
		}
	}
}

// TestScriptsReadmeDocumentsHarness: testdata/script/README.md has a
// section for every command the harness gives the scripts, and every
// condition it documents is one the harness knows (and the other way
// round, for the conditions named in condition's switch).
func TestScriptsReadmeDocumentsHarness(t *testing.T) {
	b, err := os.ReadFile(scriptsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var headings []string
	for _, m := range regexp.MustCompile(`(?m)^### (.+)$`).FindAllStringSubmatch(doc, -1) {
		for _, h := range strings.Split(m[1], ", ") {
			headings = append(headings, h)
		}
	}
	cmds := scriptParams("../testdata/script").Cmds
	if len(cmds) == 0 {
		t.Fatal("the harness defines no commands")
	}
	for name := range cmds {
		if !slices.Contains(headings, name) {
			t.Errorf("%s: no section (### %s) for the harness's command %s", scriptsDoc, name, name)
		}
	}
	conds := 0
	for _, h := range headings {
		if strings.HasPrefix(h, "[") {
			conds++
			if _, err := condition(strings.Trim(h, "[]")); err != nil {
				t.Errorf("%s documents %s: %v", scriptsDoc, h, err)
			}
		} else if _, ok := cmds[h]; !ok {
			t.Errorf("%s documents a command %s the harness does not define", scriptsDoc, h)
		}
	}
	for _, c := range []string{"redis:8.6", "redis:7.0", "redis:7.2", "valkey"} {
		if !slices.Contains(headings, "["+c+"]") {
			t.Errorf("%s: no section for the condition [%s]", scriptsDoc, c)
		}
	}
	if conds == 0 {
		t.Errorf("%s documents no conditions", scriptsDoc)
	}
}
