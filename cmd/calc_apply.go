package cmd

import (
	"github.com/idmpctl/idmpctl/internal/capacity"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/spf13/cobra"
)

// emulatedBytesPerIID is the measured cost of one iid in emulated mode;
// the stream issue's benchmark sets it.
var emulatedBytesPerIID int64 = 0

func addApplyFlags(c *cobra.Command, o *CalcMaxsizeOptions) {}

func applyCalc(c *cobra.Command, o *CalcMaxsizeOptions, r capacity.Result) error {
	return exit.Usagef("--apply is not available yet")
}
