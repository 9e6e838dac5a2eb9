//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/cmd"
	"github.com/idmpctl/idmpctl/internal/clitest"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/spf13/cobra"
)

// xinfoNames are the names Redis gives in XINFO STREAM (and CONFIG, for
// the server's defaults), which idmpctl's JSON keeps with their hyphens;
// first-entry-id and last-entry-id are XINFO's first-entry and last-entry,
// by ID.
var xinfoNames = []string{"length", "first-entry-id", "last-entry-id", "last-generated-id", "entries-added",
	"idmp-duration", "idmp-maxsize", "pids-tracked", "iids-tracked", "iids-added", "iids-duplicates",
	"stream-idmp-duration", "stream-idmp-maxsize"}

// dataMaps hold data, not idmpctl's names: a record's stored fields (an
// application's hash field or JSON member names), counts keyed by status
// or format, and Prometheus-like labels.
var dataMaps = []string{"fields", "by_status", "by_format", "record.fields"}

var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// TestJSONKeyStyle runs every command with -o json and checks every key
// of every object it prints: idmpctl's own keys are snake_case; only the
// XINFO names keep their hyphens. A command added without a case here
// fails the test.
func TestJSONKeyStyle(t *testing.T) {
	t.Parallel()
	srv := redistest.NewWith(t, redistest.Options{})
	c := clitest.New(t, "IDMPCTL_URL="+srv.URL)
	batch := filepath.Join(c.Dir, "adds.ndjson")
	if err := os.WriteFile(batch, []byte(`{"iid":"a","fields":{"f":"1"}}`+"\n"+`{"iid":"b","fields":{"f":"2"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(c.Expect(0, "claim", "acquire", "done:1").Stdout)
	c.Expect(0, "claim", "complete", "done:1", "--token", token, "--result", `{"ok":true}`)
	c.Expect(0, "claim", "run", "exp:1", "--", "true")
	tok := map[string]string{} // the fencing tokens of the claims the steps below use
	for _, k := range []string{"j:1", "j:2", "j:3"} {
		tok[k] = strings.TrimSpace(c.Expect(0, "claim", "acquire", k).Stdout)
	}
	backupFile := filepath.Join(c.Dir, "purge.ndjson")
	// In order: later cases read what earlier ones wrote.
	type jsonCase struct {
		path string     // the command
		runs [][]string // its runs
	}
	cases := []jsonCase{
		{"xadd", [][]string{{"xadd", "s", "--pid", "p", "--iid", "x", "f", "v"}, {"xadd", "s", "--pid", "p", "--batch", batch}}},
		{"cfgset", [][]string{{"cfgset", "s", "--maxsize", "50", "--yes"}}},
		{"inspect", [][]string{{"inspect", "s", "done:1"}, {"inspect", "--match", "*", "--all"}, {"inspect", "--match", "*", "--memory"}, {"inspect", "--server"}, {"inspect", "s", "--watch", "10ms", "--count", "2"}}},
		{"claim acquire", [][]string{{"claim", "acquire", "j:0"}, {"claim", "acquire", "done:1"}}},
		{"claim renew", [][]string{{"claim", "renew", "j:1", "--token", tok["j:1"]}}},
		{"claim complete", [][]string{{"claim", "complete", "j:1", "--token", tok["j:1"], "--result", "r"}}},
		{"claim fail", [][]string{{"claim", "fail", "j:2", "--token", tok["j:2"], "--error", "e"}}},
		{"claim release", [][]string{{"claim", "release", "j:3", "--token", tok["j:3"]}}},
		{"claim run", [][]string{{"claim", "run", "r:1", "--", "echo", "hi"}, {"claim", "run", "r:1", "--", "echo", "hi"}}},
		{"purge", [][]string{{"purge", "--match", "j:*", "--dry-run"}, {"purge", "--match", "j:*", "--yes", "--backup", backupFile}, {"purge", "--stream", "s", "--yes"}}},
		{"restore", [][]string{{"restore", backupFile, "--dry-run"}, {"restore", backupFile}}},
		{"calc-maxsize", [][]string{{"calc-maxsize", "--rate", "100k/s", "--mark-delay", "80ms", "--recovery", "48h"}}},
		{"calc-ttl", [][]string{{"calc-ttl", "--rate", "100/s", "--ttl", "24h", "--key-size", "40", "--value-size", "80"},
			{"calc-ttl", "--rate", "100/s", "--max-processing", "5m", "--max-retry-delay", "1h", "--sample", "*", "--maxmemory", "1kb"}}},
		{"version", [][]string{{"version"}}},
		// exec prints Redis's replies as redis-cli --json does: their keys are
		// the server's (XINFO's radix-tree-keys, a hash's fields), data.
		{"exec", [][]string{{"exec", "XINFO", "STREAM", "s"}}},
	}
	// migrate needs Redis 8.6.2+: its case runs on one beside the server
	// under test.
	if native := redistest.NativeBinary(); native != "" {
		n := redistest.NewWith(t, redistest.Options{Unix: true, Binary: native})
		nc := c.With("IDMPCTL_URL=" + n.URL)
		nc.Expect(0, "xadd", "m", "--mode", "emulated", "--pid", "p", "--iid", "i", "f", "v")
		id := strings.TrimSpace(nc.Expect(0, "xadd", "m", "--mode", "emulated", "--pid", "p", "--iid", "gone", "f", "v").Stdout)
		nc.Expect(0, "exec", "XDEL", "m", id)
		for _, args := range [][]string{{"migrate", "m", "--dry-run"}, {"migrate", "--match", "*"}} {
			r := nc.Expect(0, append([]string{"-o", "json"}, args...)...)
			var v any
			if err := json.Unmarshal([]byte(strings.SplitN(r.Stdout, "\n", 2)[0]), &v); err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			for _, bad := range badKeys(v, "") {
				t.Errorf("%s -o json: key %s", strings.Join(args, " "), bad)
			}
		}
	} else {
		t.Log("migrate: no Redis 8.6 server beside (scripts/install-redis.sh): its -o json NOT checked")
	}
	cases = append(cases, jsonCase{path: "migrate"}) // checked above
	for _, path := range leafCommands() {
		if !slices.ContainsFunc(cases, func(c jsonCase) bool { return c.path == path }) && path != "completion" {
			t.Errorf("%s: no -o json case here", path)
		}
	}
	for _, cs := range cases {
		path := cs.path
		for _, args := range cs.runs {
			r := c.Run(append([]string{"-o", "json"}, args...)...)
			if r.Code != 0 && r.Code != 1 { // 1: acquire of a completed key
				t.Fatalf("%s: %s", path, r)
			}
			dec := json.NewDecoder(strings.NewReader(r.Stdout))
			n := 0
			for dec.More() {
				var v any
				if err := dec.Decode(&v); err != nil {
					t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, r.Stdout)
				}
				n++
				if path == "exec" {
					continue
				}
				for _, bad := range badKeys(v, "") {
					t.Errorf("%s -o json: key %s", strings.Join(args, " "), bad)
				}
			}
			if n == 0 && !bytes.Contains([]byte(path), []byte("claim acquire")) {
				t.Errorf("%s -o json printed no object:\n%s", strings.Join(args, " "), r)
			}
		}
	}
}

// badKeys walks v and returns the paths of keys that are neither
// snake_case nor XINFO names, skipping maps of data.
func badKeys(v any, at string) []string {
	var bad []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p := strings.TrimPrefix(at+"."+k, ".")
			if !snake.MatchString(k) && !slices.Contains(xinfoNames, k) {
				bad = append(bad, p)
			}
			if slices.Contains(dataMaps, p) || slices.Contains(dataMaps, k) {
				continue
			}
			bad = append(bad, badKeys(e, p)...)
		}
	case []any:
		for _, e := range v {
			bad = append(bad, badKeys(e, at+"[]")...)
		}
	}
	return bad
}

// leafCommands are the paths of the runnable commands ("claim acquire"),
// hidden ones aside.
func leafCommands() []string {
	var out []string
	var walk func(c *cobra.Command, prefix string)
	walk = func(c *cobra.Command, prefix string) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			p := strings.TrimPrefix(prefix+" "+sub.Name(), " ")
			if sub.HasSubCommands() {
				walk(sub, p)
				continue
			}
			out = append(out, p)
		}
	}
	walk(cmd.NewRootCmd(&cmd.Factory{}), "")
	return out
}
