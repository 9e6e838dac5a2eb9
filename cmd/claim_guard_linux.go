package cmd

import (
	"github.com/idmpctl/idmpctl/internal/ops/claimrun"
	"github.com/spf13/cobra"
)

// newCmdGuard is the hidden verb claim run starts as its guard where there
// is no /bin/sh (see claimrun.StartGuard).
func newCmdGuard(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:    claimrun.GuardCommand,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(*cobra.Command, []string) error { return claimrun.RunGuard(f.In, f.Out) },
	}
}
