package cmd

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/health"
	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
	"github.com/spf13/cobra"
)

// InspectOptions are inspect's inputs.
type InspectOptions struct {
	Factory *Factory

	Keys                 []string
	Match, Status, Watch string
	Server, Literal      bool
	All                  bool // with --match: idmpctl's IDMP state keys too
	Limit                int64
	Count                int           // with --watch: stop after this many views (0: until interrupted)
	interval             time.Duration // --watch's, parsed
	Memory, SamplesGiven bool
	Samples              int    // with --memory: records measured of each format and status
	Mode                 string // --mode: the IDMP state a stream view reads (auto, native, emulated)

	ShowSecrets     bool   // print stored secrets (authorization headers, cookies, tokens) as they are
	PowertoolsAttrs string // --powertools-attrs
	Decode          records.DecodeOptions
}

// Validate checks the flag combinations; it needs no server.
func (o *InspectOptions) Validate() error {
	modes := 0
	for _, on := range []bool{len(o.Keys) > 0, o.Server, o.Match != ""} {
		if on {
			modes++
		}
	}
	switch {
	case modes == 0:
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("inspect needs KEY..., --match PATTERN or --server"),
			Hint: "see 'idmpctl inspect --help'"}
	case modes > 1:
		return exit.Usagef("give one of KEY..., --match PATTERN or --server")
	case o.Limit < 0:
		return exit.Usagef("--limit %d: must not be negative", o.Limit)
	case slices.Contains(o.Keys, ""):
		return exit.Usagef("a key name must not be empty")
	case o.Match == "" && (o.Status != "" || o.Limit != 0 || o.Literal || o.All):
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("%s goes with --match PATTERN", givenFlag(map[string]bool{
			"--status": o.Status != "", "--limit": o.Limit != 0, "--literal": o.Literal, "--all": o.All})),
			Hint: "a key's status is in its view: idmpctl inspect KEY"}
	case o.Count < 0:
		return exit.Usagef("--count %d: must not be negative", o.Count)
	case o.Count != 0 && o.Watch == "":
		return exit.Usagef("--count goes with --watch INTERVAL")
	case o.Memory && o.Match == "":
		return exit.Usagef("--memory goes with --match PATTERN")
	case o.SamplesGiven && !o.Memory:
		return exit.Usagef("--samples goes with --memory")
	case o.Samples < 1 || o.Samples > keyspace.MaxSamples:
		return exit.Usagef("--samples %d: want 1 to %d", o.Samples, keyspace.MaxSamples)
	case o.Mode != "" && o.Mode != "auto" && len(o.Keys) == 0:
		return exit.Usagef("--mode %s goes with STREAM views: idmpctl inspect STREAM --mode %s", o.Mode, o.Mode)
	case o.Watch != "" && len(o.Keys) == 0:
		return exit.Usagef("--watch redraws a stream: idmpctl inspect STREAM --watch 1s (not with --match or --server)")
	case o.Watch != "" && len(o.Keys) > 1:
		// Each stream's watch runs until --count: a second one would wait
		// for ever without it.
		return exit.Usagef("--watch redraws one stream: give one STREAM (%d keys given)", len(o.Keys))
	}
	var err error
	if o.Watch != "" {
		if o.interval, err = duration.Parse(o.Watch); err != nil || o.interval < 10*time.Millisecond {
			return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--watch %q: want an interval of at least 10ms with its unit", o.Watch),
				Hint: "for example --watch 1s or --watch 500ms"}
		}
	}
	if _, err := stream.ParseMode(o.Mode); err != nil {
		return err
	}
	if p := o.Factory.Printer; p != nil && p.Format == render.Prometheus {
		switch {
		case o.Server:
			return notMetrics("idmpctl inspect --server")
		case o.Watch != "":
			return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("-o prometheus: one document a run, not --watch"),
				Hint: "let Prometheus scrape it at its own interval (see docs/monitoring.md)"}
		}
	}
	o.Decode, err = parseDecodeOptions(o.PowertoolsAttrs)
	return err
}

// givenFlag names the first flag given, in a fixed order.
func givenFlag(given map[string]bool) string {
	for _, name := range slices.Sorted(maps.Keys(given)) {
		if given[name] {
			return name
		}
	}
	return ""
}

// parseDecodeOptions reads --powertools-attrs.
func parseDecodeOptions(attrs string) (records.DecodeOptions, error) {
	if attrs == "" {
		return records.DecodeOptions{}, nil
	}
	a, err := records.ParsePowertoolsAttrs(attrs)
	if err != nil {
		return records.DecodeOptions{}, &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--powertools-attrs: %w", err),
			Hint: "name the attributes as Powertools was configured: status=...,expiry=...,in-progress-expiry=...,data=...,validation=..."}
	}
	return records.DecodeOptions{Powertools: a}, nil
}

// addRecordFlags adds the flags of commands that print records.
func addRecordFlags(c *cobra.Command, showSecrets *bool, attrs *string) {
	c.Flags().BoolVar(showSecrets, "show-secrets", false, "print stored secrets (Authorization headers, cookies, API keys, passwords, tokens) as they are")
	c.Flags().StringVar(attrs, "powertools-attrs", "", "AWS Powertools records with custom attribute names, as status=A,expiry=B (also in-progress-expiry, data, validation)")
}

// NewCmdInspect builds inspect; runF replaces the run step in tests.
func NewCmdInspect(f *Factory, runF func(*InspectOptions) error) *cobra.Command {
	o := &InspectOptions{Factory: f}
	c := &cobra.Command{
		Use:   "inspect KEY... | --match PATTERN | --server",
		Short: "Show streams, idempotency keys, or the server's capabilities",
		Long: `Show a stream's IDMP settings, counters and health; a claim record or any
common idempotency record; a scan of keys with counts by status (and with
--memory, the bytes they use by format and status, estimated from a sample
of MEMORY USAGE); or, with --server, the server's version, mode, native IDMP
support and round-trip time. On servers with native IDMP, streams and the
server are linted for known Redis 8.6 IDMP bugs.

-o prometheus prints one document in the Prometheus text format for
node_exporter's textfile collector: per stream (inspect STREAM...) its six
IDMP fields, length and mode; per scan (inspect --match) the records by
status and format, and those flagged stale, no-ttl or orphan-lock. A key
that is not a stream is refused (64); a missing one exits 66 after the
document of the others.

` + statusHelp(),
		Example: `  idmpctl inspect --server
  idmpctl inspect orders
  idmpctl inspect --match 'idem:*' --status PROCESSING
  idmpctl inspect orders payments -o prometheus`,
		Annotations: map[string]string{hasMetrics: "yes", writesAnnotation: writesNever},
		RunE: func(c *cobra.Command, args []string) error {
			o.Keys, o.SamplesGiven = args, c.Flags().Changed("samples")
			return runValidated(c, o, runF, inspectRun, o.Validate)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&o.Server, "server", false, "show the server's capabilities")
	fl.StringVar(&o.Match, "match", "", "scan keys matching a glob pattern")
	fl.BoolVar(&o.Literal, "literal", false, "match --match literally (no glob metacharacters)")
	fl.BoolVar(&o.All, "all", false, "with --match: also list the keys of idmpctl's emulated IDMP state ({S}:idmp...) and batch progress")
	fl.StringVar(&o.Status, "status", "", "with --match: "+statusFlagUsage)
	fl.Int64Var(&o.Limit, "limit", 0, "with --match: show at most N keys (0: all)")
	fl.StringVar(&o.Watch, "watch", "", "redraw a stream view every INTERVAL (e.g. 1s) with adds/s and duplicates/s")
	fl.IntVar(&o.Count, "count", 0, "with --watch: stop after N views (0: until interrupted)")
	fl.BoolVar(&o.Memory, "memory", false, "with --match: bytes by format and status, estimated from a sample of MEMORY USAGE")
	fl.IntVar(&o.Samples, "samples", 1000, "with --memory: records measured of each format and status (the rest estimated)")
	fl.StringVar(&o.Mode, "mode", "auto", "with STREAM: the IDMP state to show: auto (native when the server has it), native or emulated")
	addRecordFlags(c, &o.ShowSecrets, &o.PowertoolsAttrs)
	return c
}

func inspectRun(ctx context.Context, o *InspectOptions) error {
	switch {
	case o.Server:
		return inspectServer(ctx, o)
	case o.Match != "" && o.Factory.Printer.Format == render.Prometheus:
		return inspectMatchMetrics(ctx, o)
	case o.Match != "":
		return inspectMatch(ctx, o)
	case o.Factory.Printer.Format == render.Prometheus:
		return inspectStreamMetrics(ctx, o)
	}
	return inspectKeys(ctx, o)
}

func inspectServer(ctx context.Context, o *InspectOptions) error {
	ctx, cancel := o.Factory.callBound(ctx, 0)
	defer cancel()
	conn, err := o.Factory.Conn(ctx)
	if err != nil {
		return err
	}
	r, err := redisconn.InspectServer(ctx, conn)
	if err != nil {
		return exit.Wrap(err, "inspect "+conn.Display)
	}
	// The lints for known IDMP bugs: servers with native IDMP only.
	lints, err := health.ReadServerLints(ctx, conn, r.NativeIDMP)
	if err != nil {
		return exit.Wrap(err, "inspect "+conn.Display)
	}
	p := o.Factory.Printer
	if e := r.Eviction; e != nil && e.Risky() {
		p.Warnf("%s", e.Warning())
	}
	return p.Show(view.Server{ServerReport: r, Lints: lints})
}
