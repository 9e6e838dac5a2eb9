//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
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
		{"consume", [][]string{{"consume", "s", "--group", "g", "--create", "--until-empty", "--block", "10ms", "--", "true"}}},
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
				for _, bad := range badNames(v, "") {
					t.Errorf("%s -o json: %s", strings.Join(args, " "), bad)
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

// oldNames are names kept as aliases of their new ones (docs/output.md):
// an object that has one has the new one too, with the same value.
var oldNames = map[string]string{
	"attempt": "attempts", "created": "created_ms", "updated": "updated_ms", "lease_until": "lease_until_ms",
	"deadline": "deadline_ms", "expires": "expires_ms", "now": "now_ms",
}

// badNames walks v and returns what breaks the naming rules beyond case:
// an old name without its new one beside it, and a millisecond timestamp
// (an integer between 2001 and 5138 in Unix ms) whose key does not end in
// _ms.
func badNames(v any, at string) []string {
	var bad []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p := strings.TrimPrefix(at+"."+k, ".")
			if slices.Contains(dataMaps, p) || slices.Contains(dataMaps, k) {
				continue
			}
			if n, ok := oldNames[k]; ok {
				if got, ok := v[n]; !ok || got != e {
					bad = append(bad, fmt.Sprintf("%s (%v) without %s beside it (%v)", p, e, n, got))
				}
				continue
			}
			if f, ok := e.(float64); ok && f >= 1e12 && f < 1e14 && !strings.HasSuffix(k, "_ms") {
				bad = append(bad, fmt.Sprintf("%s = %.0f looks like a timestamp in ms: name it %s_ms", p, f, k))
			}
			bad = append(bad, badNames(e, p)...)
		}
	case []any:
		for _, e := range v {
			bad = append(bad, badNames(e, at+"[]")...)
		}
	}
	return bad
}

// TestJSONNamesCatch: badNames finds what it is for.
func TestJSONNamesCatch(t *testing.T) {
	var v any
	if err := json.Unmarshal([]byte(`{"record":{"created":1795719111618,"created_ms":1795719111618,"updated":1795719111619},"attempt":2,"seen":1795719111618,"token":1795719111618172,"fields":{"created":"x","at":1795719111618}}`), &v); err != nil {
		t.Fatal(err)
	}
	got := badNames(v, "")
	slices.Sort(got)
	want := []string{
		"attempt (2) without attempts beside it (<nil>)",
		"record.updated (1.795719111619e+12) without updated_ms beside it (<nil>)",
		"seen = 1795719111618 looks like a timestamp in ms: name it seen_ms",
	}
	if !slices.Equal(got, want) {
		t.Errorf("badNames:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// leafCommands are the paths of the runnable commands ("claim acquire"),
// hidden ones aside.
func leafCommands() []string {
	var out []string
	var walk func(c *cobra.Command, prefix string)
	walk = func(c *cobra.Command, prefix string) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.IsAdditionalHelpTopicCommand() {
				continue // help, and help topics (exit-codes): no output of their own
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
