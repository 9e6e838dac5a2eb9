package cmd

import (
	"strings"
	"testing"
)

func TestExecOptions(t *testing.T) {
	var got *ExecOptions
	runF := func(o *ExecOptions) error { got = o; return nil }
	f := testFactory("")
	// Flags before COMMAND; COMMAND's arguments are Redis's, dashes too.
	if err := execute(t, f, NewCmdExec(f, runF), "exec", "--mode", "emulated", "-o", "json", "XADD", "s", "MAXLEN", "-1", "--x", "*", "f", "v"); err != nil {
		t.Fatal(err)
	}
	if got.Mode != "emulated" || strings.Join(got.Args, " ") != "XADD s MAXLEN -1 --x * f v" || f.Global.Output != "json" {
		t.Fatalf("options %+v (output %q)", got, f.Global.Output)
	}
	f = testFactory("")
	if err := execute(t, f, NewCmdExec(f, runF), "exec", "--escapes", "XADD", "s", "IDMP", `\x00\xff`, `a\\b`, "*", "f", "v"); err != nil {
		t.Fatal(err)
	}
	if got.Args[3] != "\x00\xff" || got.Args[4] != `a\b` {
		t.Fatalf("--escapes: %q", got.Args)
	}
	f = testFactory("")
	if err := execute(t, f, NewCmdExec(f, runF), "exec"); err != nil || len(got.Args) != 0 {
		t.Fatalf("stdin mode: %v, %q", err, got.Args)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "--mode", "sideways", "PING"}, `invalid mode "sideways"`},
		{[]string{"exec", "--escapes"}, "--escapes reads COMMAND's arguments"},
		{[]string{"exec", "--escapes", "SET", "k", `\q`}, `--escapes: argument 3 "\\q"`},
		{[]string{"exec", "-o", "prometheus", "PING"}, "prometheus"},
	} {
		f := testFactory("")
		wantUsage(t, execute(t, f, NewCmdExec(f, runF), c.args...), c.want)
	}
}
