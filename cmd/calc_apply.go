package cmd

import (
	"context"

	"github.com/idmpctl/idmpctl/internal/capacity"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/spf13/cobra"
)

// emulatedBytesPerIID is the measured cost of one iid in emulated mode
// (BenchmarkEmulatedMemoryPerIID; a test holds it within 30%).
var emulatedBytesPerIID int64 = stream.EmulatedBytesPerIID

func addApplyFlags(c *cobra.Command, o *CalcMaxsizeOptions) {
	fl := c.Flags()
	fl.StringVar(&o.Apply, "apply", "", "apply the result to STREAM through cfgset (same confirmation rules; IDMP-DURATION only with --recovery)")
	fl.BoolVar(&o.Yes, "yes", false, "with --apply: confirm a change that clears tracked iids")
	fl.BoolVar(&o.DryRun, "dry-run", false, "with --apply: show what would change, change nothing")
	fl.StringVar(&o.Mode, "mode", "auto", "with --apply: IDMP mode: auto, native or emulated")
}

// applyCalc sets the computed MAXSIZE on the stream, and its DURATION only
// with --recovery: the server's default must not replace (and maybe
// shorten) a window the stream already has.
func applyCalc(ctx context.Context, o *CalcMaxsizeOptions, r capacity.Result) error {
	var duration int64 // 0: keep the stream's
	if o.RecoveryFlag != "" {
		duration = r.Duration
	}
	return cfgsetRun(ctx, &CfgSetOptions{Factory: o.Factory, Stream: o.Apply, Duration: duration, MaxSize: r.MaxSize,
		Yes: o.Yes, DryRun: o.DryRun, Mode: o.Mode})
}
