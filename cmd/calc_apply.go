package cmd

import (
	"github.com/idmpctl/idmpctl/internal/capacity"
	"github.com/idmpctl/idmpctl/internal/stream"
	"github.com/spf13/cobra"
)

// emulatedBytesPerIID is the measured cost of one iid in emulated mode
// (BenchmarkEmulatedMemoryPerIID; a test holds it within 30%).
var emulatedBytesPerIID int64 = stream.EmulatedBytesPerIID

func addApplyFlags(c *cobra.Command, o *CalcMaxsizeOptions) {
	fl := c.Flags()
	fl.StringVar(&o.Apply, "apply", "", "apply the result to STREAM through cfgset (same confirmation rules)")
	fl.BoolVar(&o.Yes, "yes", false, "with --apply: confirm a change that clears tracked iids")
	fl.BoolVar(&o.DryRun, "dry-run", false, "with --apply: show what would change, change nothing")
	fl.StringVar(&o.Mode, "mode", "auto", "with --apply: IDMP mode: auto, native or emulated")
}

func applyCalc(c *cobra.Command, o *CalcMaxsizeOptions, r capacity.Result) error {
	return cfgsetRun(c.Context(), o.Factory, o.Apply, r.Duration, r.MaxSize, o.Yes, o.DryRun, o.Mode)
}
