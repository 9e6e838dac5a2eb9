package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/idmpctl/idmpctl/internal/capacity"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/view"
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
	if o.RateFlag == "" {
		return exit.Usagef("--rate is required: keys written per second (for example --rate 100/s)")
	}
	rate, err := capacity.ParseRate("rate", o.RateFlag)
	if err != nil {
		return usageErr(err)
	}
	in := capacity.TTLInputs{Rate: rate, KeySize: -1, ValueSize: -1}
	for _, d := range []struct {
		flag, value, example string
		into                 *time.Duration
	}{
		{"ttl", o.TTLFlag, "24h", &in.TTL},
		{"max-processing", o.MaxProcessingFlag, "5m", &in.MaxProcessing},
		{"max-retry-delay", o.MaxRetryDelayFlag, "1h", &in.MaxRetryDelay},
		{"buffer", o.BufferFlag, "10m", &in.Buffer},
	} {
		if d.value == "" {
			continue
		}
		if *d.into, err = capacity.ParseDuration(d.flag, d.value, d.example); err != nil {
			return usageErr(err)
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
	for _, b := range []struct {
		flag, value string
		minimum     int64
		example     string
		into        *int64
	}{
		{"key-size", o.KeySizeFlag, 1, "40 or 40b", &in.KeySize},
		{"value-size", o.ValueSizeFlag, 0, "80 or 2kb", &in.ValueSize},
		{"maxmemory", o.MaxMemoryFlag, 1, "4gb", &in.MaxMemory},
	} {
		if b.value == "" {
			continue
		}
		if *b.into, err = capacity.ParseBytes(b.flag, b.value, b.minimum, b.example); err != nil {
			return usageErr(err)
		}
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
		return usageErr(err)
	}
	o.Inputs = in
	return nil
}

// NewCmdCalcTTL builds calc-ttl; runF replaces the run step in tests.
func NewCmdCalcTTL(f *Factory, runF func(*CalcTTLOptions) error) *cobra.Command {
	o := &CalcTTLOptions{Factory: f}
	c := &cobra.Command{
		Annotations: map[string]string{writesAnnotation: writesNever},
		Use:         "calc-ttl --rate R (--ttl D | WINDOW) (SIZES | --sample GLOB)",
		Short:       "Compute the TTL and memory of idempotency keys",
		Long: `Compute the TTL of idempotency keys from the retry window, and what the keys
cost in memory, by the formulas most guides give:

  TTL    = longest processing + longest retry delay + buffer
  memory = (key size + value size) x rate x TTL x 1.2

WINDOW is --max-processing D --max-retry-delay D [--buffer D]; SIZES is
--key-size B --value-size B.

--sample PATTERN measures the keys that are there instead: the mean size of
their names and values, and their MEMORY USAGE (Redis's own per-key overhead
included), and prices rate x TTL keys at that too. Both figures are shown side
by side: for small keys the formula's x 1.2 is far from what Redis spends.
Needs no server unless --sample is given.

Sizes take redis.conf's units: 40, 40b, 2k (2000), 2kb (2048), 4gb.
Durations carry a unit (5m, 1h, 24h). Rates: 100, 100/s, 6000/m, 1k/s.

Raw output: "name<TAB>value" lines (ttl, ttl-s, keys, memory-bytes, and with
--sample measured-memory-bytes); advice goes to stderr.`,
		Example: `  idmpctl calc-ttl --rate 100/s --ttl 24h --key-size 40 --value-size 80
  idmpctl calc-ttl --rate 100/s --max-processing 5m --max-retry-delay 1h \
    --buffer 10m --key-size 40 --value-size 80
  idmpctl calc-ttl --rate 100/s --ttl 24h --sample 'idem:*' --maxmemory 1gb`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runValidated(c, o, runF, calcTTLRun, o.Validate)
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
		if m.ServerUnread != nil {
			o.Factory.Printer.Warnf("calc-ttl: the server's memory could not be read (%v): no advice on its maxmemory", m.ServerUnread)
		}
	}
	res, err := capacity.CalculateTTL(o.Inputs)
	if err != nil {
		return &exit.Error{Code: exit.Usage, What: "calc-ttl", Err: err}
	}
	return o.Factory.Printer.Show(view.CalcTTL{Inputs: o.Inputs, Result: res, Samples: o.Samples})
}
