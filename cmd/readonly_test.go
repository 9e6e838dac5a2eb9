package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// roFactory runs with env and nothing listening at its URL: a command that
// connected would fail with 69, not 64.
func roFactory(env map[string]string) (*Factory, *bytes.Buffer) {
	errOut := &bytes.Buffer{}
	env["IDMPCTL_URL"] = "redis://127.0.0.1:1/0"
	return &Factory{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: errOut,
		Getenv: func(k string) string { return env[k] }, IsTTY: func(any) bool { return false }, Now: time.Now}, errOut
}

// Under --read-only (or IDMPCTL_READ_ONLY) every command that could write is
// refused with 64 before it connects; the others run as usual.
func TestReadOnlyRefusesWriters(t *testing.T) {
	writers := [][]string{
		{"xadd", "s", "--pid", "p", "--iid", "i", "f", "v"},
		{"xadd", "s", "--pid", "p", "--batch", "-"},
		{"cfgset", "s", "--duration", "10"},
		{"claim", "acquire", "k"},
		{"claim", "renew", "k", "--token", "1"},
		{"claim", "complete", "k", "--token", "1"},
		{"claim", "fail", "k", "--token", "1"},
		{"claim", "release", "k", "--token", "1"},
		{"claim", "run", "k", "--", "true"},
		{"purge", "--match", "idem:*", "--yes"},
		{"purge", "--stream", "s", "--yes"},
		{"calc-maxsize", "--rate", "1k/s", "--mark-delay", "80ms", "--apply", "s", "--yes"},
		{"restore", "testdata/backup.ndjson"},
		{"restore", "testdata/backup.ndjson", "--replace"},
	}
	// Commands that write nothing: they are not refused (those that need a
	// server fail to connect here: 69).
	readers := []struct {
		args []string
		code int
	}{
		{[]string{"inspect", "s"}, 69},
		{[]string{"inspect", "--match", "idem:*"}, 69},
		{[]string{"inspect", "--server"}, 69},
		{[]string{"cfgset", "s", "--duration", "10", "--dry-run"}, 69},
		{[]string{"purge", "--match", "idem:*", "--dry-run"}, 69},
		{[]string{"calc-maxsize", "--rate", "1k/s", "--mark-delay", "80ms"}, 0},
		{[]string{"calc-maxsize", "--rate", "1k/s", "--mark-delay", "80ms", "--apply", "s", "--dry-run"}, 69},
		{[]string{"calc-ttl", "--rate", "100/s", "--ttl", "24h", "--key-size", "40", "--value-size", "80"}, 0},
		{[]string{"calc-ttl", "--rate", "100/s", "--ttl", "24h", "--sample", "idem:*"}, 69},
		{[]string{"restore", "testdata/backup.ndjson", "--dry-run"}, 69},
		// exec judges each command against the server's COMMAND INFO: not
		// refused before it connects.
		{[]string{"exec", "GET", "k"}, 69},
		{[]string{"exec", "SET", "k", "v"}, 69},
		{[]string{"version"}, 0},
		{[]string{"completion", "bash"}, 0},
		{[]string{"help", "xadd"}, 0},
		{[]string{"xadd", "--help"}, 0},
	}
	for _, on := range []struct {
		name string
		env  map[string]string
		flag []string
	}{
		{"flag", map[string]string{}, []string{"--read-only"}},
		{"env", map[string]string{"IDMPCTL_READ_ONLY": "1"}, nil},
		{"env, any other value keeps it on", map[string]string{"IDMPCTL_READ_ONLY": "on"}, nil},
	} {
		t.Run(on.name, func(t *testing.T) {
			for _, args := range writers {
				f, errOut := roFactory(on.env)
				code := run(f, append(append([]string{}, on.flag...), args...))
				if code != 64 || !strings.Contains(errOut.String(), "could write to Redis: refused in read-only mode") ||
					strings.Contains(errOut.String(), "connect") {
					t.Errorf("%v: exit %d\n%s", args, code, errOut)
				}
			}
			for _, r := range readers {
				f, errOut := roFactory(on.env)
				if code := run(f, append(append([]string{}, on.flag...), r.args...)); code != r.code || strings.Contains(errOut.String(), "read-only") {
					t.Errorf("%v: exit %d, want %d\n%s", r.args, code, r.code, errOut)
				}
			}
		})
	}
	// Off: IDMPCTL_READ_ONLY=0, or --read-only=false over the environment.
	for _, c := range []struct {
		env  map[string]string
		args []string
	}{
		{map[string]string{"IDMPCTL_READ_ONLY": "0"}, []string{"claim", "acquire", "k"}},
		{map[string]string{"IDMPCTL_READ_ONLY": "false"}, []string{"claim", "acquire", "k"}},
		{map[string]string{"IDMPCTL_READ_ONLY": "1"}, []string{"--read-only=false", "claim", "acquire", "k"}},
	} {
		f, errOut := roFactory(c.env)
		if code := run(f, c.args); code != 69 {
			t.Errorf("%v %v: exit %d, want 69 (it tried to connect)\n%s", c.env, c.args, code, errOut)
		}
	}
}

// Every runnable command of the tree is classified, and any command that
// says nothing is taken to write: a new verb is refused under --read-only
// until it declares otherwise.
func TestReadOnlyClassifiesEveryCommand(t *testing.T) {
	f := testFactory("")
	var walk func(c *cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c.Hidden || c.Name() == "help" {
			return
		}
		seen++
		if _, ok := c.Annotations[writesAnnotation]; !ok && !mayWrite(c) {
			t.Errorf("%s: unclassified and not taken to write", c.CommandPath())
		}
	}
	walk(NewRootCmd(f))
	if seen < 10 {
		t.Errorf("walked %d commands", seen)
	}
	if mayWrite(&cobra.Command{Use: "new-verb", RunE: func(*cobra.Command, []string) error { return nil }}) != true {
		t.Error("an unannotated command is not taken to write")
	}
}
