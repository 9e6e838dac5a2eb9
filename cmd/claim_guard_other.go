//go:build !linux

package cmd

import "github.com/spf13/cobra"

// newCmdGuard: only Linux has claim run's guard, and its verb.
func newCmdGuard(*Factory) *cobra.Command { return nil }
