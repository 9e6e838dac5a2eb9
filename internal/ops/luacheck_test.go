package ops_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/idmp"
	_ "github.com/idmpctl/idmpctl/internal/ops/claim"
	_ "github.com/idmpctl/idmpctl/internal/ops/consume"
	_ "github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	_ "github.com/idmpctl/idmpctl/internal/ops/stream"
)

// TestLuacheck lints every script of idmpctl with luacheck (Debian's
// lua-check) and the repository's .luacheckrc, each as the server gets it:
// assembled from its parts (the redisconn prelude, the IDMP limits, a
// package's shared helpers, its own file), so that every name a part uses
// is one a part before it defines. A warning is told at its part's file
// and line. A part that several scripts share is linted in each of them:
// a warning there counts when every script that has the part gives it (a
// helper that one script does not use is no fault of the helper; one that
// no script uses is). make test sets IDMPCTL_REQUIRE_LUACHECK=1: without
// luacheck the test then fails rather than skips.
func TestLuacheck(t *testing.T) {
	bin, err := exec.LookPath("luacheck")
	if err != nil {
		if os.Getenv("IDMPCTL_REQUIRE_LUACHECK") == "1" {
			t.Fatal("luacheck not found (apt-get install lua-check, or bash scripts/install-redis.sh)")
		}
		t.Skip("luacheck not found (apt-get install lua-check)")
	}
	rc, err := filepath.Abs("../../.luacheckrc")
	if err != nil {
		t.Fatal(err)
	}
	files := luaFiles(t)
	scripts := redisconn.Scripts()
	if len(scripts) < 20 {
		t.Fatalf("only %d scripts registered", len(scripts))
	}

	// Each script to a file of its own; parts named by their files.
	dir := t.TempDir()
	type part struct {
		name  string
		first int // its first line in the assembled script
		lines int
	}
	layout := map[string][]part{} // the assembled file's name: its parts
	users := map[string]int{}     // a part: the scripts that have it
	var paths []string
	for i, s := range scripts {
		var src strings.Builder
		var parts []part
		line, own := 1, ""
		for k, p := range s.Parts() {
			if !strings.HasSuffix(p, "\n") {
				t.Fatalf("script %d: part %d does not end its last line: the next part would start on it", i, k)
			}
			name, ok := files[p]
			switch {
			case p == idmp.LuaConstants():
				name = "(internal/idmp LuaConstants)"
			case !ok:
				name = fmt.Sprintf("(generated part %d of %%s)", k)
			case !shared(name):
				own = name
			}
			n := strings.Count(p, "\n")
			parts = append(parts, part{name: name, first: line, lines: n})
			line += n
			src.WriteString(p)
		}
		if own == "" {
			t.Fatalf("script %d: none of its parts is a file of its own", i)
		}
		for k := range parts {
			if strings.Contains(parts[k].name, "%s") {
				parts[k].name = fmt.Sprintf(parts[k].name, own)
			}
			users[parts[k].name]++
		}
		file := filepath.Join(dir, fmt.Sprintf("%02d-%s", i, filepath.Base(own)))
		if err := os.WriteFile(file, []byte(src.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		layout[file] = parts
		paths = append(paths, file)
	}

	cmd := exec.Command(bin, append([]string{"--config", rc, "--formatter", "plain", "--codes", "--no-color"}, paths...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("luacheck: %v\n%s%s", err, out.String(), stderr.String())
	}

	// path:line:col: (Wnnn) message
	re := regexp.MustCompile(`^(.+?):(\d+):(\d+): (.*)$`)
	seen := map[string]int{} // a warning at its part's file and line: the scripts that gave it
	var order []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Errorf("luacheck: %s", sc.Text())
			continue
		}
		line, _ := strconv.Atoi(m[2])
		where := m[1] + ":" + m[2]
		for _, p := range layout[m[1]] {
			if line >= p.first && line < p.first+p.lines {
				where = fmt.Sprintf("%s:%d", p.name, line-p.first+1)
				break
			}
		}
		w := where + ":" + m[3] + ": " + m[4]
		if seen[w] == 0 {
			order = append(order, w)
		}
		seen[w]++
	}
	for _, w := range order {
		name := w[:strings.Index(w, ":")]
		if n := users[name]; seen[w] >= n || n == 0 {
			t.Errorf("%s", w)
		}
	}
	if t.Failed() {
		t.Logf("luacheck %s, %d scripts assembled in %s", rc, len(paths), dir)
	}

	// The settings let a fault through to this test: an unused variable
	// and a global (which Redis refuses a script) are told.
	bad := filepath.Join(dir, "bad.lua")
	if err := os.WriteFile(bad, []byte("local unused = KEYS[1]\nundeclared = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := exec.Command(bin, "--config", rc, "--formatter", "plain", "--codes", "--no-color", bad).Output()
	for _, want := range []string{"(W211) unused variable 'unused'", "(W111) setting non-standard global variable 'undeclared'"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("luacheck on a faulty script: no %q in\n%s", want, got)
		}
	}
}

// luaFiles maps the content of each internal/ops/*/lua/*.lua file to its
// path.
func luaFiles(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("*/lua/*.lua")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Lua files (%v)", err)
	}
	slices.Sort(paths)
	files := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[string(b)] = "internal/ops/" + p
	}
	return files
}

// shared reports a part that several scripts have.
func shared(name string) bool {
	switch filepath.Base(name) {
	case "prelude.lua", "stream_common.lua", "claim_lib.lua", "(internal/idmp LuaConstants)":
		return true
	}
	return false
}

// TestLuaReadsArgumentsByName: no script reads KEYS or ARGV at a position
// of its own (ARGV[3], KEYS[1], #ARGV - 2, unpack(KEYS, 4)): the fixed
// ones are locals named by the script's argument struct
// (redisconn.NewLua), and a variable part is read from its named first
// index. A position written in a script would drift from the struct.
func TestLuaReadsArgumentsByName(t *testing.T) {
	literal := regexp.MustCompile(`\b(ARGV|KEYS|argv)\s*\[\s*[0-9]|#(ARGV|KEYS|argv)\s*-\s*[0-9]|unpack\(\s*(ARGV|KEYS|argv)\s*,\s*[0-9]`)
	files := luaFiles(t)
	if len(files) < 20 {
		t.Fatalf("only %d Lua files", len(files))
	}
	for src, name := range files {
		for i, line := range strings.Split(src, "\n") {
			code, _, _ := strings.Cut(line, "--")
			if m := literal.FindString(code); m != "" {
				t.Errorf("%s:%d: %q reads an argument by its position: name it in the script's argument struct", name, i+1, m)
			}
		}
	}
}
