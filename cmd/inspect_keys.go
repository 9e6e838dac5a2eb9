package cmd

import (
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/spf13/cobra"
)

// The key and stream views arrive with the stream and claim work.
func inspectKeys(c *cobra.Command, o *InspectOptions) error {
	return exit.Usagef("inspect KEY is not available yet")
}

func inspectMatch(c *cobra.Command, o *InspectOptions) error {
	return exit.Usagef("inspect --match is not available yet")
}
