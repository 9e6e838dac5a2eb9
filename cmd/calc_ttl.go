package cmd

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/idmpctl/idmpctl/internal/capacity"
	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/progress"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/spf13/cobra"
)

// CalcTTLOptions are calc-ttl's inputs, as given and as parsed.
type CalcTTLOptions struct {
	Factory *Factory

	RateFlag, TTLFlag                                string
	MaxProcessingFlag, MaxRetryDelayFlag, BufferFlag string
	KeySizeFlag, ValueSizeFlag, MaxMemoryFlag        string
	Sample                                           string
	Samples                                          int

	Inputs capacity.TTLInputs
}

// defaultTTLSamples is how many keys --sample measures unless --samples says.
const defaultTTLSamples = 200

// Validate parses every input; it needs no server.
func (o *CalcTTLOptions) Validate() error {
	usage := func(err error) error { return &exit.Error{Code: exit.Usage, Err: err} }
	if o.RateFlag == "" {
		return exit.Usagef("--rate is required: keys written per second (for example --rate 100/s)")
	}
	rate, err := capacity.ParseRate("rate", o.RateFlag)
	if err != nil {
		return usage(err)
	}
	in := capacity.TTLInputs{Rate: rate, KeySize: -1, ValueSize: -1}
	dur := func(flag, s, example string, into *time.Duration) error {
		if s == "" {
			return nil
		}
		d, err := capacity.ParseDuration(flag, s, example)
		if err != nil {
			return usage(err)
		}
		*into = d
		return nil
	}
	for _, d := range []struct {
		flag, value, example string
		into                 *time.Duration
	}{
		{"ttl", o.TTLFlag, "24h", &in.TTL},
		{"max-processing", o.MaxProcessingFlag, "5m", &in.MaxProcessing},
		{"max-retry-delay", o.MaxRetryDelayFlag, "1h", &in.MaxRetryDelay},
		{"buffer", o.BufferFlag, "10m", &in.Buffer},
	} {
		if err := dur(d.flag, d.value, d.example, d.into); err != nil {
			return err
		}
	}
	in.Window = o.MaxProcessingFlag != "" || o.MaxRetryDelayFlag != "" || o.BufferFlag != ""
	switch {
	case in.Window && (o.MaxProcessingFlag == "" || o.MaxRetryDelayFlag == ""):
		return exit.Usagef("the retry window needs both --max-processing and --max-retry-delay (and --buffer): TTL = max-processing + max-retry-delay + buffer")
	case !in.Window && in.TTL == 0:
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("give --ttl, or --max-processing and --max-retry-delay (and --buffer) to compute it"),
			Hint: "for example: idmpctl calc-ttl --rate 100/s --max-processing 5m --max-retry-delay 1h --buffer 10m --key-size 40 --value-size 80"}
	}
	size := func(flag, s string, minimum int64, example string, into *int64) error {
		if s == "" {
			return nil
		}
		n, err := capacity.ParseBytes(flag, s, minimum, example)
		if err != nil {
			return usage(err)
		}
		*into = n
		return nil
	}
	if err := size("key-size", o.KeySizeFlag, 1, "40 or 40b", &in.KeySize); err != nil {
		return err
	}
	if err := size("value-size", o.ValueSizeFlag, 0, "80 or 2kb", &in.ValueSize); err != nil {
		return err
	}
	if err := size("maxmemory", o.MaxMemoryFlag, 1, "4gb", &in.MaxMemory); err != nil {
		return err
	}
	switch {
	case o.Samples < 1 || o.Samples > keyspace.MaxSamples:
		return exit.Usagef("--samples %d: want 1 to %d", o.Samples, keyspace.MaxSamples)
	case o.Sample == "" && (in.KeySize < 0 || in.ValueSize < 0):
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("give --key-size and --value-size, or --sample PATTERN to measure them on the live keyspace"),
			Hint: "for example --key-size 40 --value-size 80, or --sample 'idem:*'"}
	}
	// Inputs whose results do not fit are refused before any server is
	// asked (a sample can only be priced once measured).
	if _, err := capacity.CalculateTTL(in); err != nil {
		return usage(err)
	}
	o.Inputs = in
	return nil
}

// NewCmdCalcTTL builds calc-ttl; runF replaces the run step in tests.
func NewCmdCalcTTL(f *Factory, runF func(*CalcTTLOptions) error) *cobra.Command {
	o := &CalcTTLOptions{Factory: f}
	c := &cobra.Command{
		Annotations: map[string]string{writesAnnotation: writesNever},
		Use:         "calc-ttl --rate R (--ttl D | --max-processing D --max-retry-delay D [--buffer D]) (--key-size B --value-size B | --sample PATTERN)",
		Short:       "Compute the TTL and memory of idempotency keys, by formula or measured",
		Long: `Compute the TTL of idempotency keys from the retry window, and what the keys
cost in memory, by the formulas most guides give:

  TTL    = longest processing + longest retry delay + buffer
  memory = (key size + value size) x rate x TTL x 1.2

--sample PATTERN measures the keys that are there instead: the mean size of
their names and values, and their MEMORY USAGE (Redis's own per-key overhead
included), and prices rate x TTL keys at that too. Both figures are shown side
by side: for small keys the formula's x 1.2 is far from what Redis spends.
Needs no server unless --sample is given.

Sizes take redis.conf's units: 40, 40b, 2k (2000), 2kb (2048), 4gb.
Durations carry a unit (5m, 1h, 24h). Rates: 100, 100/s, 6000/m, 1k/s.

Raw output: "name<TAB>value" lines (ttl, ttl_s, keys, memory_bytes, and with
--sample measured_memory_bytes); advice goes to stderr.`,
		Example: `  idmpctl calc-ttl --rate 100/s --ttl 24h --key-size 40 --value-size 80
  idmpctl calc-ttl --rate 100/s --max-processing 5m --max-retry-delay 1h --buffer 10m --key-size 40 --value-size 80
  idmpctl calc-ttl --rate 100/s --ttl 24h --sample 'idem:*' --maxmemory 1gb`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return calcTTLRun(c.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.RateFlag, "rate", "", "idempotency keys written per second (100/s, 6000/m, 1k/s)")
	fl.StringVar(&o.TTLFlag, "ttl", "", "the key TTL, given directly (24h); with the window flags, checked against it")
	fl.StringVar(&o.MaxProcessingFlag, "max-processing", "", "longest time one attempt of the work takes (5m)")
	fl.StringVar(&o.MaxRetryDelayFlag, "max-retry-delay", "", "longest time until the last retry of a message arrives (1h)")
	fl.StringVar(&o.BufferFlag, "buffer", "", "margin on top of the retry window (10m)")
	fl.StringVar(&o.KeySizeFlag, "key-size", "", "bytes of a key's name (40, 40b)")
	fl.StringVar(&o.ValueSizeFlag, "value-size", "", "bytes of a key's value (80, 2kb)")
	fl.StringVar(&o.MaxMemoryFlag, "maxmemory", "", "memory the keys may use (4gb): advice when they need more")
	fl.StringVar(&o.Sample, "sample", "", "measure the keys matching this glob pattern on the server (MEMORY USAGE)")
	fl.IntVar(&o.Samples, "samples", defaultTTLSamples, "with --sample: keys to measure (of each primary in a cluster)")
	return c
}

func calcTTLRun(ctx context.Context, o *CalcTTLOptions) error {
	if o.Sample != "" {
		conn, err := o.Factory.Conn(ctx)
		if err != nil {
			return err
		}
		m, err := keyspace.MeasureSample(ctx, conn, o.Sample, o.Samples)
		if err != nil {
			return err
		}
		o.Inputs.Measured = m
	}
	res, err := capacity.CalculateTTL(o.Inputs)
	if err != nil {
		return &exit.Error{Code: exit.Usage, What: "calc-ttl", Err: err}
	}
	p := o.Factory.Printer
	switch p.Format {
	case render.JSON:
		return p.JSON(calcTTLJSON(o, res))
	case render.Table:
		calcTTLTable(p, o, res)
	default:
		p.Line("ttl\t%s", duration.Format(res.TTL))
		p.Line("ttl_s\t%s", secondsText(res.TTL))
		p.Line("keys\t%d", res.Keys)
		p.Line("memory_bytes\t%d", res.Memory)
		if o.Inputs.Measured != nil {
			p.Line("measured_memory_bytes\t%d", res.MeasuredMemory)
		}
		for _, a := range res.Advice {
			p.Warnf("%s", a)
		}
	}
	return nil
}

// secondsText is d in seconds, as short as exact.
func secondsText(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

func calcTTLJSON(o *CalcTTLOptions, r capacity.TTLResult) map[string]any {
	in := o.Inputs
	inputs := map[string]any{"rate_per_s": ratFloat(in.Rate)}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"ttl_s", in.TTL}, {"max_processing_s", in.MaxProcessing}, {"max_retry_delay_s", in.MaxRetryDelay}, {"buffer_s", in.Buffer}} {
		if d.d > 0 {
			inputs[d.name] = d.d.Seconds()
		}
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"key_size_bytes", in.KeySize}, {"value_size_bytes", in.ValueSize}, {"maxmemory_bytes", in.MaxMemory}} {
		if n.v >= 0 && (n.name != "maxmemory_bytes" || n.v > 0) {
			inputs[n.name] = n.v
		}
	}
	advice := r.Advice
	if advice == nil {
		advice = []string{}
	}
	formula := []string{r.TTLFormula, r.MemoryFormula}
	out := map[string]any{
		"inputs":           inputs,
		"ttl_s":            r.TTL.Seconds(),
		"ttl_ms":           r.TTL.Milliseconds(),
		"keys":             r.Keys,
		"key_size_bytes":   r.KeySize,
		"value_size_bytes": r.ValueSize,
		"memory_bytes":     r.Memory,
		"formula":          formula,
		"advice":           advice,
	}
	if in.Window {
		out["retry_window_s"] = r.RetryWindow.Seconds()
	}
	if m := in.Measured; m != nil {
		inputs["sample"] = m.Pattern
		inputs["samples"] = o.Samples
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

func calcTTLTable(p *render.Printer, o *CalcTTLOptions, r capacity.TTLResult) {
	in := o.Inputs
	inputs := []render.Pair{{"rate", capacity.RatString(in.Rate) + " msg/s"}}
	if in.TTL > 0 {
		inputs = append(inputs, render.Pair{"ttl", duration.Format(in.TTL)})
	}
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
			return fmt.Sprintf("%d B", given)
		}
		return fmt.Sprintf("%d B (measured)", used)
	}
	inputs = append(inputs, render.Pair{"key size", sizeText(in.KeySize, r.KeySize)},
		render.Pair{"value size", sizeText(in.ValueSize, r.ValueSize)})
	if in.MaxMemory > 0 {
		inputs = append(inputs, render.Pair{"maxmemory", fmt.Sprintf("%s (%s B)", render.Bytes(in.MaxMemory), render.Count(in.MaxMemory))})
	}
	p.KV("Inputs", inputs)
	result := []render.Pair{
		{"TTL", p.Good(duration.Format(r.TTL)) + fmt.Sprintf(" (%s s)", secondsText(r.TTL))},
		{"keys", fmt.Sprintf("%s alive at a steady rate (rate x TTL)", progress.FormatCount(r.Keys))},
		{"memory", p.Good(render.Bytes(r.Memory)) + fmt.Sprintf(" (%s B, by %s)", progress.FormatCount(r.Memory), capacity.RuleOfThumb)},
	}
	if in.Measured != nil {
		result = append(result, render.Pair{"measured", p.Good(render.Bytes(r.MeasuredMemory)) +
			fmt.Sprintf(" (%s B, at the sample's MEMORY USAGE; the formula is %+.0f%%)", progress.FormatCount(r.MeasuredMemory), 100*r.FormulaVsMeasured)})
	}
	p.Notes("Result", result)
	formula := []render.Pair{{"ttl", r.TTLFormula}, {"memory", r.MemoryFormula}}
	if in.Measured != nil {
		formula = append(formula, render.Pair{"measured", r.MeasuredFormula})
	}
	p.Notes("Formula", formula)
	if m := in.Measured; m != nil {
		p.Notes(fmt.Sprintf("Sample (%s, %d keys)", render.Field(m.Pattern), m.Keys), []render.Pair{
			{"key name", fmt.Sprintf("%.1f B mean", m.KeyBytes)},
			{"value", fmt.Sprintf("%.1f B mean", m.ValueBytes)},
			{"MEMORY USAGE", fmt.Sprintf("%.1f B mean a key (Redis's per-key overhead included: %.1f B beyond name and value)", m.UsageBytes, m.UsageBytes-m.KeyBytes-m.ValueBytes)},
		})
	}
	if len(r.Advice) > 0 {
		pairs := make([]render.Pair, len(r.Advice))
		for i, a := range r.Advice {
			pairs[i] = render.Pair{p.Warn("!"), a}
		}
		p.Notes("Advice", pairs)
	}
	p.KV("Run", []render.Pair{{"$", fmt.Sprintf("idmpctl claim run KEY --ttl %s -- COMMAND...", duration.Format(r.TTL))}})
}
