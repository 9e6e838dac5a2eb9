package cmd

// Verb routing: the top-level verbs in one list, the verb a run needs
// (a run builds only it), help, and the usage error of an unknown verb.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claimrun"
	"github.com/spf13/cobra"
)

// newHelpCmd is "idmpctl help [VERB...]", where a typo is a usage error
// (64): cobra's own exits 0 for "help claim aquire" and "help nosuch".
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:               "help [command]",
		Short:             "Help about any command",
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeHelp,
		RunE: func(c *cobra.Command, args []string) error {
			target := c.Root()
			for _, a := range args {
				next := findVerb(target, a)
				if next == nil {
					return unknownVerb(target, a)
				}
				target = next
			}
			return target.Help()
		},
	}
}

// findVerb is c's sub-command called name (or one of its aliases).
func findVerb(c *cobra.Command, name string) *cobra.Command {
	for _, s := range c.Commands() {
		if s.Name() == name || s.HasAlias(name) {
			return s
		}
	}
	return nil
}

// refuseUnknownVerbs makes every group of verbs (the root, claim) refuse
// an argument that names none of them (64), where cobra prints help and
// exits 0: TOKEN=$(idmpctl claim aquire k) would go on with help text.
func refuseUnknownVerbs(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownVerbs(sub)
	}
	if !c.HasSubCommands() || c.Run != nil || c.RunE != nil {
		return // the root has its own RunE (--version), which refuses too
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		return unknownVerb(c, args[0])
	}
}

// refuseTyposWithHelp does refuseUnknownVerbs' work for "claim acquir
// --help", which cobra answers before any RunE: the group's help prints
// nothing and sets *typo to the usage error, which the run returns. So
// for a --help among xadd's fields: a VALUE, not a request for help.
func refuseTyposWithHelp(root *cobra.Command, typo *error) {
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if a := c.Flags().Args(); c.HasSubCommands() && len(a) > 0 {
			*typo = unknownVerb(c, a[0])
			return
		}
		if amongFields(c) {
			e := exit.New(exit.Usage, verbPath(c), "--help among the FIELD VALUE arguments is read as a flag: nothing was added")
			e.Hint = fieldsHint + "; for help alone: " + c.CommandPath() + " --help"
			*typo = e
			return
		}
		help(c, args)
	})
}

// unknownVerb is the usage error for name, which is none of c's verbs,
// with the verbs and help topics it may have meant: cobra's suggestions,
// and a verb it starts with ("run-it"). With none close, the hint sends
// the reader to the group's help rather than listing every verb.
func unknownVerb(c *cobra.Command, name string) error {
	var meant []string
	add := func(s string) {
		if !slices.Contains(meant, s) {
			meant = append(meant, s)
		}
	}
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default, set where it suggests itself
	}
	for _, s := range c.Commands() {
		if !s.IsAvailableCommand() && !s.IsAdditionalHelpTopicCommand() {
			continue
		}
		if len(s.Name()) >= 3 && strings.HasPrefix(name, s.Name()) {
			add(s.Name())
		}
	}
	for _, s := range c.SuggestionsFor(name) {
		add(s)
	}
	// The help topics (exit-codes), which cobra's suggestions leave out.
	low := strings.ToLower(name)
	for _, s := range c.Commands() {
		if !s.IsAdditionalHelpTopicCommand() {
			continue
		}
		if levenshtein(low, s.Name()) <= c.SuggestionsMinimumDistance ||
			(low != "" && strings.HasPrefix(s.Name(), low)) {
			add(s.Name())
		}
	}
	hint := "run '" + c.CommandPath() + " --help' for the commands"
	if len(meant) > 0 {
		hint = "did you mean " + quoteJoin(meant, " or ") + "? see '" + c.CommandPath() + " --help'"
	}
	return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("unknown command %q for %q", name, c.CommandPath()),
		Hint: hint}
}

// levenshtein is the edit distance between a and b, in bytes (verbs are ASCII).
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// verbs are the top-level commands: newRoot builds only the one a run
// needs. A build returns nil where its verb does not exist (the guard).
var verbs = []struct {
	name  string
	build func(*Factory) *cobra.Command
}{
	{"xadd", func(f *Factory) *cobra.Command { return NewCmdXAdd(f, nil) }},
	{"cfgset", func(f *Factory) *cobra.Command { return NewCmdCfgSet(f, nil) }},
	{"inspect", func(f *Factory) *cobra.Command { return NewCmdInspect(f, nil) }},
	{"claim", NewCmdClaim},
	{"consume", func(f *Factory) *cobra.Command { return NewCmdConsume(f, nil) }},
	{"purge", func(f *Factory) *cobra.Command { return NewCmdPurge(f, nil) }},
	{"restore", func(f *Factory) *cobra.Command { return NewCmdRestore(f, nil) }},
	{"migrate", func(f *Factory) *cobra.Command { return NewCmdMigrate(f, nil) }},
	{"exec", func(f *Factory) *cobra.Command { return NewCmdExec(f, nil) }},
	{"calc-maxsize", func(f *Factory) *cobra.Command { return NewCmdCalcMaxsize(f, nil) }},
	{"calc-ttl", func(f *Factory) *cobra.Command { return NewCmdCalcTTL(f, nil) }},
	{"version", NewCmdVersion},
	{"completion", NewCmdCompletion},
	{claimrun.GuardCommand, newCmdGuard},
}

// words are the first most args before "--" that are neither a global flag
// nor its value.
func words(args []string, most int) []string {
	var out []string
	for i := 0; i < len(args) && args[i] != "--" && len(out) < most; i++ {
		switch a := args[i]; {
		case strings.HasPrefix(a, "--"):
			if valueFlags[a] {
				i++ // "--url URL"; "--url=URL" carries its value
			}
		case strings.HasPrefix(a, "-") && a != "-":
			if valueShorthands[a] {
				i++ // "-o json"; "-ojson" carries its value
			}
		default:
			out = append(out, a)
		}
	}
	return out
}

// verbOf is the verb args run: their first word; "" (the whole tree) when
// it is none, so that help, completion (whose scripts describe the whole
// tree) and "unknown command"'s suggestions see every verb.
func verbOf(args []string) string {
	if w := words(args, 1); len(w) > 0 && w[0] != "completion" {
		for _, v := range verbs {
			if v.name == w[0] {
				return v.name
			}
		}
	}
	return ""
}

// valueFlags are the global flags that take a value, with their short forms.
var (
	valueFlags = map[string]bool{
		"--url": true, "--tls-ca": true, "--tls-cert": true, "--tls-key": true,
		"--timeout": true, "--retries": true, "--output": true,
		"--host": true, "--port": true, "--pass": true, "--db": true,
	}
	valueShorthands = map[string]bool{"-o": true, "-h": true, "-p": true, "-a": true, "-n": true}
)

// fewRoundTrips reports a command of a few round trips (no input stream, no scan).
func fewRoundTrips(args []string) bool {
	switch verbOf(args) {
	case "claim", "cfgset", "calc-maxsize", "calc-ttl", "version":
		return true
	case "xadd":
		return !slices.ContainsFunc(args, func(a string) bool { return a == "--batch" || strings.HasPrefix(a, "--batch=") })
	}
	return false
}

// isClaimRun says whether args run "claim run", for starting its guard early
// (wrong guesses cost a guard let go at exit).
func isClaimRun(args []string) bool {
	w := words(args, 2)
	return len(w) > 1 && w[0] == "claim" && w[1] == "run"
}
