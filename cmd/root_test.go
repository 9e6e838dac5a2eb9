package cmd

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claimrun"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func TestVerbOf(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"xadd", "s", "f", "v"}, "xadd"},
		{[]string{"--url", "redis://h:1", "claim", "acquire", "k"}, "claim"},
		{[]string{"--url=redis://h:1", "-o", "json", "inspect", "server"}, "inspect"},
		{[]string{"-ojson", "--cluster", "--timeout", "1s", "purge"}, "purge"},
		{[]string{"-o", "xadd", "cfgset"}, "cfgset"}, // "xadd" is -o's value
		{[]string{"--help"}, ""},
		{[]string{"help", "xadd"}, ""},
		{[]string{"completion", "bash"}, ""},
		{[]string{"__complete", "x"}, ""},
		{[]string{"xad"}, ""}, // unknown: the whole tree suggests "xadd"
		{[]string{"--", "xadd"}, ""},
		{[]string{"--retries", "2", "--tls-ca", "ca.pem", "--tls-cert", "c", "--tls-key", "k", "--output", "raw", "version"}, "version"},
		// redis-cli's -h, -p, -a, -n take a value: "-h exec" is a host.
		{[]string{"-h", "exec", "-p", "6380", "-a", "s3cret", "-n", "2", "inspect", "k"}, "inspect"},
		{[]string{"--host", "redis.internal", "--port", "6380", "--pass", "x", "--db", "1", "xadd"}, "xadd"},
	} {
		if got := verbOf(tc.args); got != tc.want {
			t.Errorf("verbOf(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestValueFlags keeps valueFlags in step with the global flags that take a
// value: a new one missing from it would make verbOf read its value as the
// verb.
func TestValueFlags(t *testing.T) {
	root := NewRootCmd(testFactory(""))
	n := 0
	root.PersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Value.Type() == "bool" {
			return
		}
		n++
		if !valueFlags["--"+fl.Name] {
			t.Errorf("--%s takes a value but is not in valueFlags", fl.Name)
		}
		if fl.Shorthand != "" && !valueShorthands["-"+fl.Shorthand] {
			t.Errorf("-%s takes a value but is not in valueShorthands: verbOf must skip it", fl.Shorthand)
		}
	})
	if n != len(valueFlags) {
		t.Errorf("valueFlags has %d flags, the root %d", len(valueFlags), n)
	}
}

// TestVerbTreeHelp: a verb's help is the same whether the tree holds one
// verb or all of them.
func TestVerbTreeHelp(t *testing.T) {
	for _, v := range verbs {
		if v.name == claimrun.GuardCommand {
			continue
		}
		help := func(root func(*Factory) *cobra.Command) string {
			f := testFactory("")
			r := root(f)
			r.SetArgs([]string{v.name, "--help"})
			if err := r.Execute(); err != nil {
				t.Fatal(err)
			}
			return f.Out.(*bytes.Buffer).String()
		}
		whole := help(NewRootCmd)
		one := help(func(f *Factory) *cobra.Command { return newRoot(f, v.name) })
		if whole != one || whole == "" {
			t.Errorf("%s --help differs with the verb alone:\n%s\n---\n%s", v.name, whole, one)
		}
	}
}

// TestIsClaimRun: Main starts claim run's guard before the tree is built
// when the arguments say claim run; a wrong "no" only starts it later.
func TestIsClaimRun(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"claim", "run", "k", "--", "true"}, true},
		{[]string{"--url", "redis://x", "claim", "run", "k", "--", "true"}, true},
		{[]string{"-o", "json", "claim", "run", "k", "--lease", "1m", "--", "true"}, true},
		// A flag's value between claim and run reads as the sub-verb: a
		// wrong "no", the guard starts in claimRunRun instead.
		{[]string{"claim", "--lease", "1m", "run", "k", "--", "true"}, false},
		{[]string{"claim", "acquire", "k"}, false},
		{[]string{"claim", "-h", "db1", "run", "k", "--", "true"}, true},
		{[]string{"-h", "claim", "inspect", "run"}, false},
		{[]string{"claim", "--", "run"}, false},
		{[]string{"xadd", "s", "--pid", "p", "--iid", "run", "f", "v"}, false},
		{[]string{"claim"}, false},
		{nil, false},
	} {
		if got := isClaimRun(c.args); got != c.want {
			t.Errorf("isClaimRun(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// TestErrorWording runs usage mistakes through the whole command (no
// server is reached: each fails first) and checks the error line: it names
// the command once ("idmpctl: claim acquire needs ...", never "idmpctl:
// idmpctl ..."), and no Go internals reach the user.
func TestErrorWording(t *testing.T) {
	internals := regexp.MustCompile(`strconv\.|time: |parse "|invalid argument "|first path segment|missing protocol scheme|\(s\)`)
	for _, args := range [][]string{
		{"claim", "acquire", "a", "b"},
		{"version", "extra"},
		{"calc-maxsize", "--rate", "1000", "--mark-delay", "80ms", "extra"},
		{"xadd"},
		{"inspect", "s", "--timeout", "5"},
		{"xadd", "s", "--pid", "p", "--iid", "x", "--retries", "abc", "f", "v"},
		{"xadd", "s", "--pid", "p", "--iid", "x", "--maxlen", "1e3", "f", "v"},
		{"claim", "acquire", "k", "--lease", "5"},
		{"claim", "acquire", "k", "--max-attempts", "99999999999999999999"},
		{"cfgset", "s", "--duration", "5", "--timeout", "x"},
		{"inspect", "--server", "--url", "127.0.0.1:6379"},
		{"inspect", "--server", "--url", ":6379"},
		{"inspect", "--server", "--url", "redis://h:1/x"},
		{"inspect", "--server", "--url", "unix:///s.sock?db=x"},
		{"inspect", "s", "--watch", "5"},
		{"purge", "--match", "x", "--older-than", "5"},
	} {
		f := testFactory("")
		if code := run(f, args); code != 64 && code != 78 {
			t.Errorf("%q: exit %d", args, code)
		}
		msg := f.Err.(*bytes.Buffer).String()
		line, _, _ := strings.Cut(msg, "\n")
		if !strings.HasPrefix(line, "idmpctl: ") || strings.HasPrefix(line, "idmpctl: idmpctl") || internals.MatchString(msg) {
			t.Errorf("%q:\n%s", args, msg)
		}
	}
}

func TestCompactDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{24 * time.Hour: "24h", 5 * time.Minute: "5m", 168 * time.Hour: "168h",
		90 * time.Second: "1m30s", time.Second: "1s", 0: "0", 1500 * time.Millisecond: "1.5s", time.Hour + time.Second: "1h0m1s"} {
		got := compactDuration(d)
		if got != want {
			t.Errorf("compactDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != d {
			t.Errorf("%q parses to %v, %v", got, back, err)
		}
	}
}

// A connection the server closed (restart, CLIENT KILL, timeout) reads as
// such, not as Go's "EOF" or "unexpected EOF"; what the command adds stays.
func TestPrintErrorClosedConnection(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{exit.Wrap(exit.Wrap(io.EOF, `inspect "st"`), "inspect --watch"), `idmpctl: inspect --watch: inspect "st": the server closed the connection` + "\n"},
		{exit.Wrap(io.ErrUnexpectedEOF, "purge"), "idmpctl: purge: the server closed the connection\n"},
		{exit.Wrap(fmt.Errorf("read tcp 127.0.0.1:1->127.0.0.1:2: %w", syscall.ECONNRESET), "xadd"), "idmpctl: xadd: the server closed the connection\n"},
		{&exit.Error{Code: exit.Unavailable, What: "xadd --batch", Err: io.EOF, Hint: "lines 1-3 are committed"}, "idmpctl: xadd --batch: the server closed the connection\nhint: lines 1-3 are committed\n"},
	} {
		var errOut bytes.Buffer
		f := &Factory{Err: &errOut, Getenv: func(string) string { return "" }}
		printError(f, "", c.err)
		got := errOut.String()
		if !strings.HasPrefix(got, c.want) || strings.Contains(got, "EOF") || strings.Contains(got, "reset by peer") {
			t.Errorf("%v:\n%s\nwant it to start %q", c.err, got, c.want)
		}
		if exit.Code(c.err) != exit.Unavailable {
			t.Errorf("%v: exit %d, want 69", c.err, exit.Code(c.err))
		}
	}
}

// A claim verb's --help states the default that holds: renew keeps the
// lease the claim was taken with, and every write keeps the record's own
// retention; cobra's "(default 5m)" and "(default 24h)" said otherwise.
func TestClaimHelpDefaults(t *testing.T) {
	help := func(verb string) string {
		f := testFactory("")
		out := &bytes.Buffer{}
		f.Out = out
		if code := run(f, []string{"claim", verb, "--help"}); code != 0 {
			t.Fatalf("claim %s --help: exit %d", verb, code)
		}
		return out.String()
	}
	for _, verb := range []string{"acquire", "renew", "complete", "fail", "run"} {
		h := help(verb)
		if strings.Contains(h, "(default 24h)") {
			t.Errorf("claim %s --help: --ttl says \"(default 24h)\":\n%s", verb, h)
		}
	}
	if h := help("renew"); strings.Contains(h, "(default 5m)") || !strings.Contains(h, "default: the lease the claim was taken with") {
		t.Errorf("claim renew --help, --lease:\n%s", h)
	}
	if h := help("acquire"); !strings.Contains(h, "(default 5m)") {
		t.Errorf("claim acquire --help: --lease lost its default:\n%s", h)
	}
}
