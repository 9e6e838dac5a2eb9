package cmd

import (
	"context"

	"github.com/idmpctl/idmpctl/internal/capacity"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/view"
	"github.com/spf13/cobra"
)

// CalcMaxsizeOptions are calc-maxsize's inputs, as given and as parsed.
type CalcMaxsizeOptions struct {
	Factory *Factory

	RateFlag, MarkDelayFlag, RecoveryFlag, MarginFlag string
	Producers                                         int64
	Apply                                             string
	Yes, DryRun                                       bool
	Mode                                              string
	ModeSet                                           bool // --mode was given

	Inputs capacity.Inputs
	Result capacity.Result // computed by Validate
}

// Validate parses every input; it needs no server.
func (o *CalcMaxsizeOptions) Validate() error {
	switch {
	case o.RateFlag == "":
		return exit.Usagef("--rate is required (for example --rate 1000/s)")
	case o.MarkDelayFlag == "":
		return exit.Usagef("--mark-delay is required (for example --mark-delay 80ms)")
	case o.Apply == "" && (o.Yes || o.DryRun || o.ModeSet):
		return exit.Usagef("%s goes with --apply STREAM", givenFlag(map[string]bool{"--yes": o.Yes, "--dry-run": o.DryRun, "--mode": o.ModeSet}))
	}
	in := capacity.Inputs{Producers: o.Producers, EmulatedBytesPerIID: stream.EmulatedBytesPerIID}
	var err error
	if in.Rate, err = capacity.ParseRate("rate", o.RateFlag); err != nil {
		return usageErr(err)
	}
	if in.MarkDelay, err = capacity.ParseDuration("mark-delay", o.MarkDelayFlag, "80ms or 1.5s"); err != nil {
		return usageErr(err)
	}
	if o.RecoveryFlag != "" {
		if in.Recovery, err = capacity.ParseDuration("recovery", o.RecoveryFlag, "1000s or 17m"); err != nil {
			return usageErr(err)
		}
	}
	if o.Producers < 1 {
		return exit.Usagef("--producers %d: must be at least 1 (for example --producers %s)", o.Producers, producersExample)
	}
	if in.Margin, err = capacity.ParseMargin("margin", o.MarginFlag); err != nil {
		return usageErr(err)
	}
	o.Inputs = in
	if o.Result, err = capacity.Calculate(in); err != nil {
		return usageErr(err)
	}
	return nil
}

// producersExample is the --producers of its errors' examples.
const producersExample = "4"

// NewCmdCalcMaxsize builds calc-maxsize; runF replaces the run step in tests.
func NewCmdCalcMaxsize(f *Factory, runF func(*CalcMaxsizeOptions) error) *cobra.Command {
	o := &CalcMaxsizeOptions{Factory: f}
	c := &cobra.Command{
		Annotations: map[string]string{writesAnnotation: writesWithApply},
		Use:         "calc-maxsize --rate R --mark-delay D [--recovery D]",
		Short:       "Compute IDMP-DURATION and IDMP-MAXSIZE from rate and mark-delay",
		Long: `Compute IDMP-DURATION and IDMP-MAXSIZE for a stream from what you know about
its producers, and what the IDMP state costs in memory. Needs no server
unless --apply is given.

  IDMP-MAXSIZE  = ceil(mark-delay[ms] x rate per pid[msg/ms] x (1 + margin)),
                  at least 1, at most 10000
  IDMP-DURATION = ceil(recovery[s]), at least 1, at most 86400
                  (the server default 100 without --recovery)

Rates: 1000 (per second), 1000/s, 1k/s, 2.5k/s, 60000/m, 3.6M/h, 1/ms.
Durations carry a unit (80ms, 1.5s, 17m): a bare number is refused.

Raw output is one line to paste after XCFGSET key:
  IDMP-DURATION 1000 IDMP-MAXSIZE 100
and IDMP-MAXSIZE alone without --recovery (-o json: "idmp-duration": null):
the stream keeps its own duration, as with --apply.`,
		Example: `  idmpctl calc-maxsize --rate 1000/s --mark-delay 80ms --recovery 1000s
  idmpctl calc-maxsize --rate 2.5k/s --mark-delay 1.5s --producers 4 \
    --margin 50% -o json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.ModeSet = c.Flags().Changed("mode")
			return runValidated(c, o, runF, calcMaxsizeRun, o.Validate)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.RateFlag, "rate", "", "messages per second, all producers together (1000/s, 2.5k/s, 60000/m, 1/ms)")
	fl.StringVar(&o.MarkDelayFlag, "mark-delay", "", "longest time from the XADD reply until the message is marked delivered (80ms)")
	fl.StringVar(&o.RecoveryFlag, "recovery", "", "longest time a crashed producer needs to come back and resend (1000s, 17m)")
	fl.Int64Var(&o.Producers, "producers", 1, "how many producer IDs share the rate")
	annotateExample(fl, "producers", "", producersExample)
	fl.StringVar(&o.MarginFlag, "margin", "25%", "safety margin on MAXSIZE: 25% or 0.25 (a bare number is a fraction, below 1)")
	fl.StringVar(&o.Apply, "apply", "", "apply the result to STREAM through cfgset (same confirmation rules; IDMP-DURATION only with --recovery)")
	fl.BoolVar(&o.Yes, "yes", false, "with --apply: confirm a change that clears tracked iids")
	fl.BoolVar(&o.DryRun, "dry-run", false, "with --apply: show what would change, change nothing")
	fl.StringVar(&o.Mode, "mode", "auto", "with --apply: IDMP mode: auto, native or emulated")
	return c
}

func calcMaxsizeRun(ctx context.Context, o *CalcMaxsizeOptions) error {
	res := o.Result
	v := view.CalcMaxsize{Inputs: o.Inputs, Result: res, Apply: o.Apply, DryRun: o.DryRun, RecoveryGiven: o.RecoveryFlag != ""}
	if err := o.Factory.Printer.Show(v); err != nil || o.Apply == "" {
		return err
	}
	// --apply sets the computed MAXSIZE on the stream, and its DURATION only
	// with --recovery: the server's default must not replace (and maybe
	// shorten) a window the stream already has.
	var duration int64 // 0: keep the stream's
	if o.RecoveryFlag != "" {
		duration = res.Duration
	}
	return cfgsetRun(ctx, &CfgSetOptions{Factory: o.Factory, Stream: o.Apply, Duration: duration, MaxSize: res.MaxSize,
		Yes: o.Yes, DryRun: o.DryRun, Mode: o.Mode})
}
