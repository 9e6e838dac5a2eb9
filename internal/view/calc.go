package view

// calc-maxsize and calc-ttl: the arithmetic's results (internal/capacity)
// with their inputs, formulas and advice.

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/idmpctl/idmpctl/internal/bytesize"
	"github.com/idmpctl/idmpctl/internal/capacity"
	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/render"
)

// CalcMaxsize is calc-maxsize's result; Apply is --apply's stream ("":
// none), DryRun --dry-run, RecoveryGiven whether --recovery was given
// (without it the cfgset line sets IDMP-MAXSIZE alone).
type CalcMaxsize struct {
	Inputs        capacity.Inputs
	Result        capacity.Result
	Apply         string
	DryRun        bool
	RecoveryGiven bool
}

func ratFloat(r *big.Rat) float64 { f, _ := r.Float64(); return f }

func (v CalcMaxsize) JSON() any {
	in, r := v.Inputs, v.Result
	inputs := map[string]any{
		"rate_per_s":    ratFloat(in.Rate),
		"mark_delay_ms": float64(in.MarkDelay) / float64(time.Millisecond),
		"producers":     in.Producers,
		"margin":        ratFloat(in.Margin),
	}
	if in.Recovery > 0 {
		inputs["recovery_s"] = in.Recovery.Seconds()
	}
	// Without --recovery no duration is computed: null, never the
	// server's default, which would shorten a window the stream has.
	duration, needed := any(nil), any(nil)
	if v.RecoveryGiven {
		duration, needed = r.Duration, r.DurationNeeded
	}
	return map[string]any{
		"inputs":                 inputs,
		"idmp-duration":          duration,
		"idmp-maxsize":           r.MaxSize,
		"needed":                 map[string]any{"idmp-duration": needed, "idmp-maxsize": r.MaxSizeNeeded},
		"per_pid_rate_per_ms":    r.PerPIDRate,
		"evict_after_s":          math.Round(r.EvictAfter*1e6) / 1e6, // to the µs, no float noise
		"pids_needed":            r.PIDsNeeded,
		"formula":                []string{r.MaxSizeFormula, r.DurationFormula},
		"interplay":              r.Interplay,
		"memory_bytes":           map[string]int64{"native_per_pid": r.Memory.NativePerPID, "native_total": r.Memory.NativeTotal, "emulated_per_pid": r.Memory.EmulatedPerPID, "emulated_total": r.Memory.EmulatedTotal},
		"memory_native_estimate": true,
		"warnings":               append([]string{}, r.Warnings...), // [] rather than null
	}
}

func (v CalcMaxsize) Table(p *render.Printer) error {
	in, r := v.Inputs, v.Result
	recovery := "not given (server default duration)"
	if in.Recovery > 0 {
		recovery = render.Duration(in.Recovery)
	}
	p.KV("Inputs", []render.Pair{
		{"rate", fmt.Sprintf("%s msg/s over %s: %.6g msg/ms per pid", rateText(in.Rate), render.N(in.Producers, "producer"), r.PerPIDRate)},
		{"mark-delay", render.Duration(in.MarkDelay)},
		{"recovery", recovery},
		{"margin", capacity.RatString(new(big.Rat).Mul(in.Margin, big.NewRat(100, 1))) + "%"},
	})
	duration := "the stream's own (no --recovery)"
	if v.RecoveryGiven {
		duration = p.Good(fmt.Sprintf("%ds", r.Duration))
	}
	p.KV("Result", []render.Pair{
		{"idmp-maxsize", p.Good(render.N(r.MaxSize, "iid")) + " per pid"},
		{"idmp-duration", duration},
	})
	p.KV("Formula", []render.Pair{{"maxsize", r.MaxSizeFormula}, {"duration", r.DurationFormula}, {"interplay", r.Interplay}})
	p.KV("Memory at full occupancy", []render.Pair{
		{"native", fmt.Sprintf("~%s per pid, ~%s total (estimate)", bytesize.Format(r.Memory.NativePerPID), bytesize.Format(r.Memory.NativeTotal))},
		{"emulated", fmt.Sprintf("%s per pid, %s total (measured %d B/iid)", bytesize.Format(r.Memory.EmulatedPerPID), bytesize.Format(r.Memory.EmulatedTotal), in.EmulatedBytesPerIID)},
	})
	warnNotes(p, "Warnings", r.Warnings)
	title := "Run" // what the user may run; with --apply, what it does next
	if v.Apply != "" {
		title = "Apply"
		if v.DryRun {
			title += " (dry run)"
		}
	}
	p.View(title, v.runLine())
	return nil
}

// Raw is the line to paste after XCFGSET key: IDMP-MAXSIZE alone without
// --recovery, as --apply sets it.
func (v CalcMaxsize) Raw(p *render.Printer) error {
	if v.RecoveryGiven {
		p.Line("IDMP-DURATION %d IDMP-MAXSIZE %d", v.Result.Duration, v.Result.MaxSize)
	} else {
		p.Line("IDMP-MAXSIZE %d", v.Result.MaxSize)
	}
	for _, w := range v.Result.Warnings {
		p.Warnf("%s", w)
	}
	return nil
}

// runLine is the cfgset command that does what --apply does: without
// --recovery IDMP-MAXSIZE alone, since the server's default duration must
// not replace a longer window the stream has.
func (v CalcMaxsize) runLine() []render.Row {
	r := v.Result
	name := "STREAM"
	if v.Apply != "" {
		name = render.ShellWord(v.Apply)
	}
	if v.RecoveryGiven {
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

// warnNotes draws sentences to heed under title, each marked "!"; none, nothing.
func warnNotes(p *render.Printer, title string, texts []string) {
	if len(texts) == 0 {
		return
	}
	pairs := make([]render.Pair, len(texts))
	for i, t := range texts {
		pairs[i] = render.Pair{p.Warn("!"), t}
	}
	p.KV(title, pairs)
}

// CalcTTL is calc-ttl's result; Samples is --samples (-o json names it
// with a sample).
type CalcTTL struct {
	Inputs  capacity.TTLInputs
	Result  capacity.TTLResult
	Samples int
}

// secondsText is d in seconds, as short as exact.
func secondsText(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

func (v CalcTTL) JSON() any {
	in, r := v.Inputs, v.Result
	inputs := map[string]any{"rate_per_s": ratFloat(in.Rate)}
	durations := map[string]time.Duration{"ttl_s": in.TTL, "max_processing_s": in.MaxProcessing,
		"max_retry_delay_s": in.MaxRetryDelay, "buffer_s": in.Buffer}
	for name, d := range durations {
		if d > 0 {
			inputs[name] = d.Seconds()
		}
	}
	for name, n := range map[string]int64{"key_size_bytes": in.KeySize, "value_size_bytes": in.ValueSize} {
		if n >= 0 {
			inputs[name] = n
		}
	}
	if in.MaxMemory > 0 {
		inputs["maxmemory_bytes"] = in.MaxMemory
	}
	out := map[string]any{
		"inputs":           inputs,
		"ttl_s":            r.TTL.Seconds(),
		"ttl_ms":           r.TTL.Milliseconds(),
		"keys":             r.Keys,
		"key_size_bytes":   r.KeySize,
		"value_size_bytes": r.ValueSize,
		"memory_bytes":     r.Memory,
		"formula":          []string{r.TTLFormula, r.MemoryFormula},
		"advice":           append([]string{}, r.Advice...),
	}
	if in.Window {
		out["retry_window_s"] = r.RetryWindow.Seconds()
	}
	if m := in.Measured; m != nil {
		inputs["sample"] = m.Pattern
		inputs["samples"] = v.Samples
		out["measured"] = map[string]any{
			"pattern":                 m.Pattern,
			"keys_sampled":            m.Keys,
			"key_bytes_mean":          m.KeyBytes,
			"value_bytes_mean":        m.ValueBytes,
			"memory_usage_bytes_mean": m.UsageBytes,
			"memory_bytes":            r.MeasuredMemory,
			"formula":                 r.MeasuredFormula,
			"formula_vs_measured":     r.FormulaVsMeasured,
		}
	}
	return out
}

func (v CalcTTL) Table(p *render.Printer) error {
	in, r := v.Inputs, v.Result
	inputs := []render.Pair{{"rate", rateText(in.Rate) + " msg/s"}}
	inputs = addIf(inputs, in.TTL > 0, render.Pair{"ttl", duration.Format(in.TTL)})
	if in.Window {
		buffer := "none"
		if in.Buffer > 0 {
			buffer = duration.Format(in.Buffer)
		}
		inputs = append(inputs, render.Pair{"max-processing", duration.Format(in.MaxProcessing)},
			render.Pair{"max-retry-delay", duration.Format(in.MaxRetryDelay)}, render.Pair{"buffer", buffer})
	}
	sizeText := func(given int64, used int64) string {
		if given >= 0 {
			return render.Count(given) + " B"
		}
		return render.Count(used) + " B (measured)"
	}
	inputs = append(inputs, render.Pair{"key size", sizeText(in.KeySize, r.KeySize)},
		render.Pair{"value size", sizeText(in.ValueSize, r.ValueSize)})
	inputs = addIf(inputs, in.MaxMemory > 0, render.Pair{"maxmemory", fmt.Sprintf("%s (%s B)", bytesize.Format(in.MaxMemory), render.Count(in.MaxMemory))})
	p.KV("Inputs", inputs)
	secs := secondsText(r.TTL) // with thousands separators when whole ("4,500")
	if r.TTL%time.Second == 0 {
		secs = render.Count(int64(r.TTL / time.Second))
	}
	result := []render.Pair{
		{"TTL", p.Good(duration.Format(r.TTL)) + fmt.Sprintf(" (%s s)", secs)},
		{"keys", fmt.Sprintf("%s alive at a steady rate (rate x TTL)", render.Count(r.Keys))},
		{"memory", p.Good(bytesize.Format(r.Memory)) + fmt.Sprintf(" (%s B, by %s)", render.Count(r.Memory), capacity.RuleOfThumb)},
	}
	result = addIf(result, in.Measured != nil, render.Pair{"measured", p.Good(bytesize.Format(r.MeasuredMemory)) +
		fmt.Sprintf(" (%s B, at the sample's MEMORY USAGE; the formula is %+.0f%%)", render.Count(r.MeasuredMemory), 100*r.FormulaVsMeasured)})
	p.KV("Result", result)
	formula := []render.Pair{{"ttl", r.TTLFormula}, {"memory", r.MemoryFormula}}
	formula = addIf(formula, in.Measured != nil, render.Pair{"measured", r.MeasuredFormula})
	p.KV("Formula", formula)
	if m := in.Measured; m != nil {
		p.KV(fmt.Sprintf("Sample (%s, %d keys)", render.Field(m.Pattern), m.Keys), []render.Pair{
			{"key name", fmt.Sprintf("%.1f B mean", m.KeyBytes)},
			{"value", fmt.Sprintf("%.1f B mean", m.ValueBytes)},
			{"MEMORY USAGE", fmt.Sprintf("%.1f B mean a key (Redis's per-key overhead included: %.1f B beyond name and value)", m.UsageBytes, m.UsageBytes-m.KeyBytes-m.ValueBytes)},
		})
	}
	warnNotes(p, "Advice", r.Advice)
	p.View("Run", []render.Row{{Label: "$", Value: fmt.Sprintf("idmpctl claim run KEY --ttl %s -- COMMAND...", duration.Format(r.TTL)), Fit: render.Whole}})
	return nil
}

func (v CalcTTL) Raw(p *render.Printer) error {
	res := v.Result
	p.Line("ttl\t%s", duration.Format(res.TTL))
	p.Line("ttl-s\t%s", secondsText(res.TTL))
	p.Line("keys\t%d", res.Keys)
	p.Line("memory-bytes\t%d", res.Memory)
	if v.Inputs.Measured != nil {
		p.Line("measured-memory-bytes\t%d", res.MeasuredMemory)
	}
	for _, a := range res.Advice {
		p.Warnf("%s", a)
	}
	return nil
}
