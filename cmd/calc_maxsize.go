package cmd

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/idmpctl/idmpctl/internal/capacity"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/render"
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
}

// Validate parses every input; it needs no server.
func (o *CalcMaxsizeOptions) Validate() error {
	usage := func(err error) error { return &exit.Error{Code: exit.Usage, Err: err} }
	if o.RateFlag == "" {
		return exit.Usagef("--rate is required (for example --rate 1000/s)")
	}
	if o.MarkDelayFlag == "" {
		return exit.Usagef("--mark-delay is required (for example --mark-delay 80ms)")
	}
	if o.Apply == "" && (o.Yes || o.DryRun || o.ModeSet) {
		return exit.Usagef("%s goes with --apply STREAM", givenFlag(map[string]bool{"--yes": o.Yes, "--dry-run": o.DryRun, "--mode": o.ModeSet}))
	}
	rate, err := capacity.ParseRate("rate", o.RateFlag)
	if err != nil {
		return usage(err)
	}
	delay, err := capacity.ParseDuration("mark-delay", o.MarkDelayFlag, "80ms or 1.5s")
	if err != nil {
		return usage(err)
	}
	var recovery time.Duration
	if o.RecoveryFlag != "" {
		if recovery, err = capacity.ParseDuration("recovery", o.RecoveryFlag, "1000s or 17m"); err != nil {
			return usage(err)
		}
	}
	if o.Producers < 1 {
		return exit.Usagef("--producers %d: must be at least 1 (for example --producers 4)", o.Producers)
	}
	margin, err := capacity.ParseMargin("margin", o.MarginFlag)
	if err != nil {
		return usage(err)
	}
	o.Inputs = capacity.Inputs{Rate: rate, MarkDelay: delay, Recovery: recovery,
		Producers: o.Producers, Margin: margin, EmulatedBytesPerIID: emulatedBytesPerIID}
	return nil
}

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

  IDMP-MAXSIZE  = ceil(mark-delay[ms] x rate per pid[msg/ms] x (1 + margin)), at least 1, at most 10000
  IDMP-DURATION = ceil(recovery[s]), at least 1, at most 86400 (the server default 100 without --recovery)

Rates: 1000 (per second), 1000/s, 1k/s, 2.5k/s, 60000/m, 3.6M/h, 1/ms.
Durations carry a unit (80ms, 1.5s, 17m): a bare number is refused.

Raw output is one line to paste after XCFGSET key:
  IDMP-DURATION 1000 IDMP-MAXSIZE 100`,
		Example: `  idmpctl calc-maxsize --rate 1000/s --mark-delay 80ms --recovery 1000s
  idmpctl calc-maxsize --rate 2.5k/s --mark-delay 1.5s --producers 4 --margin 50% -o json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.ModeSet = c.Flags().Changed("mode")
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return calcMaxsizeRun(c.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.RateFlag, "rate", "", "messages per second, all producers together (1000/s, 2.5k/s, 60000/m, 1/ms)")
	fl.StringVar(&o.MarkDelayFlag, "mark-delay", "", "longest time from the XADD reply until the message is marked delivered (80ms)")
	fl.StringVar(&o.RecoveryFlag, "recovery", "", "longest time a crashed producer needs to come back and resend (1000s, 17m)")
	fl.Int64Var(&o.Producers, "producers", 1, "how many producer IDs share the rate")
	fl.StringVar(&o.MarginFlag, "margin", "25%", "safety margin on MAXSIZE: 25% or 0.25 (a bare number is a fraction, below 1)")
	addApplyFlags(c, o)
	return c
}

func calcMaxsizeRun(ctx context.Context, o *CalcMaxsizeOptions) error {
	res := capacity.Calculate(o.Inputs)
	p := o.Factory.Printer
	switch p.Format {
	case render.JSON:
		if err := p.JSON(calcJSON(o.Inputs, res)); err != nil {
			return err
		}
	case render.Table:
		calcTable(p, o, res)
	default:
		p.Line("IDMP-DURATION %d IDMP-MAXSIZE %d", res.Duration, res.MaxSize)
		for _, w := range res.Warnings {
			p.Warnf("%s", w)
		}
	}
	if o.Apply != "" {
		return applyCalc(ctx, o, res)
	}
	return nil
}

func ratFloat(r *big.Rat) float64 { f, _ := r.Float64(); return f }

func calcJSON(in capacity.Inputs, r capacity.Result) map[string]any {
	warnings := r.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	inputs := map[string]any{
		"rate_per_s":    ratFloat(in.Rate),
		"mark_delay_ms": float64(in.MarkDelay) / float64(time.Millisecond),
		"producers":     in.Producers,
		"margin":        ratFloat(in.Margin),
	}
	if in.Recovery > 0 {
		inputs["recovery_s"] = in.Recovery.Seconds()
	}
	return map[string]any{
		"inputs":                 inputs,
		"idmp-duration":          r.Duration,
		"idmp-maxsize":           r.MaxSize,
		"needed":                 map[string]int64{"idmp-duration": r.DurationNeeded, "idmp-maxsize": r.MaxSizeNeeded},
		"per_pid_rate_per_ms":    r.PerPIDRate,
		"evict_after_s":          r.EvictAfter,
		"pids_needed":            r.PIDsNeeded,
		"formula":                []string{r.MaxSizeFormula, r.DurationFormula},
		"interplay":              r.Interplay,
		"memory_bytes":           map[string]int64{"native_per_pid": r.Memory.NativePerPID, "native_total": r.Memory.NativeTotal, "emulated_per_pid": r.Memory.EmulatedPerPID, "emulated_total": r.Memory.EmulatedTotal},
		"memory_native_estimate": true,
		"warnings":               warnings,
	}
}

func calcTable(p *render.Printer, o *CalcMaxsizeOptions, r capacity.Result) {
	in := o.Inputs
	recovery := "not given (server default duration)"
	if in.Recovery > 0 {
		recovery = render.Duration(in.Recovery)
	}
	p.KV("Inputs", []render.Pair{
		{"rate", fmt.Sprintf("%s msg/s over %s: %s msg/ms per pid", rateText(in.Rate), render.N(in.Producers, "producer"), trimFloat(r.PerPIDRate))},
		{"mark-delay", render.Duration(in.MarkDelay)},
		{"recovery", recovery},
		{"margin", capacity.RatString(new(big.Rat).Mul(in.Margin, big.NewRat(100, 1))) + "%"},
	})
	p.KV("Result", []render.Pair{
		{"idmp-maxsize", p.Good(render.N(r.MaxSize, "iid")) + " per pid"},
		{"idmp-duration", p.Good(fmt.Sprintf("%ds", r.Duration))},
	})
	p.Notes("Formula", []render.Pair{{"maxsize", r.MaxSizeFormula}, {"duration", r.DurationFormula}, {"interplay", r.Interplay}})
	p.KV("Memory at full occupancy", []render.Pair{
		{"native", fmt.Sprintf("~%s per pid, ~%s total (estimate)", render.Bytes(r.Memory.NativePerPID), render.Bytes(r.Memory.NativeTotal))},
		{"emulated", fmt.Sprintf("%s per pid, %s total (measured %d B/iid)", render.Bytes(r.Memory.EmulatedPerPID), render.Bytes(r.Memory.EmulatedTotal), in.EmulatedBytesPerIID)},
	})
	if len(r.Warnings) > 0 {
		pairs := make([]render.Pair, len(r.Warnings))
		for i, w := range r.Warnings {
			pairs[i] = render.Pair{p.Warn("!"), w}
		}
		p.Notes("Warnings", pairs)
	}
	title := "Run" // what the user may run; with --apply, what it does next
	switch {
	case o.Apply != "" && o.DryRun:
		title = "Apply (dry run)"
	case o.Apply != "":
		title = "Apply"
	}
	p.View(title, runLine(o, r))
}

// runLine is the cfgset command that does what --apply does (and did, with
// --apply): without --recovery it sets IDMP-MAXSIZE alone, as --apply
// does, since the server's default duration must not replace a longer
// window the stream has. Copying the line never does more than --apply.
func runLine(o *CalcMaxsizeOptions, r capacity.Result) []render.Row {
	name := "STREAM"
	if o.Apply != "" {
		name = render.ShellWord(o.Apply)
	}
	if o.RecoveryFlag != "" {
		return []render.Row{{Label: "$", Value: fmt.Sprintf("idmpctl cfgset %s --duration %d --maxsize %d", name, r.Duration, r.MaxSize), Fit: render.Whole}}
	}
	return []render.Row{
		{Label: "$", Value: fmt.Sprintf("idmpctl cfgset %s --maxsize %d", name, r.MaxSize), Fit: render.Whole},
		{Value: "IDMP-DURATION stays as the stream has it (--recovery computes one)", Fit: render.Wrap},
	}
}

// rateText is a rate in messages a second, with thousands separators when
// it is whole.
func rateText(r *big.Rat) string {
	if r.IsInt() && r.Num().IsInt64() {
		return render.Count(r.Num().Int64())
	}
	return capacity.RatString(r)
}

func trimFloat(f float64) string { return fmt.Sprintf("%.6g", f) }
