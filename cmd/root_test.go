package cmd

import (
	"bytes"
	"testing"

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
		if fl.Shorthand != "" && fl.Shorthand != "o" {
			t.Errorf("-%s takes a value: verbOf must skip it", fl.Shorthand)
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
