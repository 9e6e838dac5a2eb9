package cmd

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/spf13/cobra"
)

// Shell completion beyond commands and flags: the values of -o, --status
// and --mode, and key names from the server (a bounded SCAN).

const (
	keyCompletionBound = time.Second // connecting and the scan (--timeout, if shorter)
	keyCompletionLimit = 100         // key names offered
)

// registerCompletions adds value completions to the commands of root.
func registerCompletions(root *cobra.Command, f *Factory) {
	_ = root.RegisterFlagCompletionFunc("output", fixedValues(
		"table\tdrawn tables and views; the default on a terminal",
		"json\tone JSON object a result",
		"raw\tlines for scripts; the default otherwise",
		"prometheus\tmetrics, for inspect"))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Flags().Lookup("mode") != nil {
			_ = c.RegisterFlagCompletionFunc("mode", fixedValues(
				"auto\tnative where the server has IDMP, else emulated",
				"native\tthe server's XADD IDMP, Redis 8.6+",
				"emulated\tidmpctl's atomic Lua"))
		}
		if c.Flags().Lookup("status") != nil {
			_ = c.RegisterFlagCompletionFunc("status", completeStatuses)
		}
		switch path := strings.TrimPrefix(c.CommandPath(), root.Name()+" "); {
		case path == "inspect":
			c.ValidArgsFunction = keyNames(f, 0, 0)
		case path == "claim run":
			c.ValidArgsFunction = keyNames(f, 1, cobra.ShellCompDirectiveDefault)
		case path == "xadd", path == "cfgset", strings.HasPrefix(path, "claim "):
			c.ValidArgsFunction = keyNames(f, 1, cobra.ShellCompDirectiveNoFileComp)
		case path == "purge":
			_ = c.RegisterFlagCompletionFunc("stream", keyNames(f, 0, 0))
		}
	}
	walk(root)
}

// fixedValues completes a flag from a fixed list ("value<TAB>what it is").
func fixedValues(values ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// keyNames completes key names for the first most arguments (0: any
// number); past them, then (claim run's command: the shell's own).
func keyNames(f *Factory, most int, then cobra.ShellCompDirective) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if most > 0 && len(args) >= most {
			return nil, then
		}
		// The server's keys that start with toComplete (none, silently, on failure).
		f.Global.Timeout = min(f.Global.Timeout, keyCompletionBound)
		ctx, cancel := context.WithTimeout(context.Background(), keyCompletionBound)
		defer cancel()
		conn, err := f.Conn(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		keys, _ := keyspace.CompleteKeys(ctx, conn, toComplete, keyCompletionLimit)
		keys = slices.DeleteFunc(keys, func(k string) bool { return slices.Contains(args, k) })
		return keys, cobra.ShellCompDirectiveNoFileComp
	}
}
