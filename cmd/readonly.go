package cmd

// The read-only policy: which commands could write, and their refusal
// under --read-only or IDMPCTL_READ_ONLY before anything connects.

import (
	"fmt"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/spf13/cobra"
)

// writesAnnotation says when a command writes to Redis, for --read-only. A
// command without it is taken to write: a new command is refused under
// --read-only until it says otherwise.
const (
	writesAnnotation   = "idmpctl/writes"
	writesNever        = "never"
	writesUnlessDryRun = "unless-dry-run" // its --dry-run writes nothing
	writesWithApply    = "with-apply"     // only with --apply, and not with --dry-run
	writesPerCommand   = "per-command"    // exec: judges each command by COMMAND INFO
)

// mayWrite reports whether c, with the flags given, could write to Redis.
func mayWrite(c *cobra.Command) bool {
	if c.Hidden || c.Name() == "help" || !c.Runnable() {
		return false // help, completion requests, the guard
	}
	dryRun, _ := c.Flags().GetBool("dry-run") // false, "" where there is no such flag
	apply, _ := c.Flags().GetString("apply")
	switch c.Annotations[writesAnnotation] {
	case writesNever, writesPerCommand:
		return false
	case writesUnlessDryRun:
		return !dryRun
	case writesWithApply:
		return apply != "" && !dryRun
	}
	return true
}

// readOnly is --read-only, else IDMPCTL_READ_ONLY: on for any value but
// "", 0, false and no (a typo keeps it on).
func (f *Factory) readOnly(c *cobra.Command) bool {
	if fl := c.Flags().Lookup("read-only"); fl != nil && fl.Changed {
		return f.Global.ReadOnly
	}
	switch strings.ToLower(strings.TrimSpace(f.Getenv("IDMPCTL_READ_ONLY"))) {
	case "", "0", "false", "no":
		return false
	}
	return true
}

// checkReadOnly refuses (64) a command that could write under --read-only.
func (f *Factory) checkReadOnly(c *cobra.Command) error {
	if !f.readOnly(c) || !mayWrite(c) {
		return nil
	}
	hint := "drop --read-only (and IDMPCTL_READ_ONLY) to write"
	if c.Annotations[writesAnnotation] == writesUnlessDryRun || c.Annotations[writesAnnotation] == writesWithApply {
		hint = "--dry-run shows what it would do without writing; " + hint
	}
	return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("%s could write to Redis: refused in read-only mode (--read-only or IDMPCTL_READ_ONLY)", c.CommandPath()), Hint: hint}
}
