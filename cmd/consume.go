package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/claimrun"
	"github.com/idmpctl/idmpctl/internal/ops/consume"
	"github.com/idmpctl/idmpctl/internal/progress"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
	"github.com/spf13/cobra"
)

// ConsumeOptions are consume's inputs.
type ConsumeOptions struct {
	Factory *Factory
	consume.Params
}

// NewCmdConsume builds consume; runF replaces the run step in tests.
func NewCmdConsume(f *Factory, runF func(*ConsumeOptions) error) *cobra.Command {
	o := &ConsumeOptions{Factory: f}
	c := &cobra.Command{
		Use:   "consume STREAM --group GROUP [flags] -- COMMAND [ARGS...]",
		Short: "Run a command once per entry of a consumer group",
		Long: `Read STREAM as a consumer of GROUP and run COMMAND for each entry, at most once
per entry and group: under a claim in the stream's cluster slot,
{STREAM}:consume:GROUP:ID, kept as claim run keeps its command's.

  exit 0              COMPLETED and XACK, in one script
  non-zero            FAILED, pending: retried after --retry-delay
  last attempt failed added to --dead-letter with IDMP (pid GROUP, iid the
                      entry's ID), then XACK; without it, left pending
  already COMPLETED   XACK, nothing runs; a live claim elsewhere is left alone

The handler reads {"stream":...,"id":...,"fields":{...}} on stdin (a value
that is not UTF-8 is {"b64":"..."}) and has IDMPCTL_STREAM, IDMPCTL_GROUP,
IDMPCTL_ENTRY_ID, IDMPCTL_KEY, IDMPCTL_TOKEN and IDMPCTL_ATTEMPT; its output
goes to stderr. stdout has a line per entry, stderr a summary at the end.
A dead consumer's entries are reclaimed once idle longer than --lease. A
completion waits for the AOF's fsync where the server can say (WAITAOF).
SIGINT and SIGTERM stop the reading: the running handlers finish, then
exit 130 or 143. More: docs/consume.md.`,
		Example: `  idmpctl consume orders --group billing --create -- ./bill.sh
  idmpctl consume orders --group billing --workers 4 \
    --dead-letter orders-dead --until-empty -- ./bill.sh`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			dash := c.ArgsLenAtDash()
			if dash > 1 || dash < 0 && len(args) > 1 {
				return &exit.Error{Code: exit.Usage, Err: errors.New("consume takes one STREAM, then -- COMMAND [ARGS...]"),
					Hint: "put the handler after --, e.g. idmpctl consume orders --group billing -- ./bill.sh"}
			}
			if len(args) > 0 && dash != 0 {
				o.Stream = args[0]
			}
			if dash >= 0 {
				o.Command = args[dash:]
			}
			if !c.Flags().Changed("consumer") {
				o.Consumer = defaultOwner()
			}
			o.Retries = f.Global.Retries
			return runValidated(c, o, runF, consumeRun, o.Validate, func() error {
				if _, err := exec.LookPath(o.Command[0]); err != nil {
					return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("the handler %q cannot be run: %s", o.Command[0], claimrun.StartReason(err)),
						Hint: "every entry would fail with it: give a command on PATH, or its path"}
				}
				return nil
			})
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.Group, "group", "", "the consumer group (required)")
	fl.StringVar(&o.Consumer, "consumer", "", "this consumer's name in the group, and the claims' owner (default hostname:pid)")
	fl.BoolVar(&o.Create, "create", false, "make a missing group (and stream) at the stream's start, 0")
	fl.IntVar(&o.Workers, "workers", 1, "handlers run at once")
	durationVar(fl, &o.Lease, "lease", claim.DefaultLease, "each entry's claim; a dead consumer's entries are reclaimed once idle this long")
	fl.Int64Var(&o.MaxAttempts, "max-attempts", 3, "runs of a failing entry before it is dead-lettered")
	durationVar(fl, &o.RetryDelay, "retry-delay", time.Second, "wait after a failure before the entry's next attempt (server clock)")
	fl.StringVar(&o.DeadLetter, "dead-letter", "", "stream for the entries out of attempts (idempotent: pid GROUP, iid the entry ID)")
	fl.BoolVar(&o.UntilEmpty, "until-empty", false, "exit once nothing is left that this consumer may take")
	fl.Int64Var(&o.Count, "count", 0, "stop after this many entries (0: no limit)")
	durationVar(fl, &o.Block, "block", time.Second, "how long a read waits for new entries")
	return c
}

func consumeRun(ctx context.Context, o *ConsumeOptions) error {
	f, p := o.Factory, o.Factory.Printer
	// SIGINT and SIGTERM end the reading; the handlers, in process groups
	// of their own, are let finish with the connection they renew on (so
	// not untilInterrupted, which closes it).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	surviveClosedStdout() // the handlers finish, as on a full disk
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case s := <-sigs:
			f.caught.CompareAndSwap(nil, s.(syscall.Signal))
			cancel()
			signal.Stop(sigs) // a second one ends idmpctl, and the guards its handlers
		case <-ctx.Done():
		}
	}()
	conn, err := f.Conn(ctx)
	if err != nil {
		return err
	}
	// A person watches a progress line under the entries; a program reads
	// them (then a line is drawn only when stdout is not the terminal).
	bar, stopProgress := startProgress(p, p.Format != render.Table, progress.Options{Label: "consume " + o.Stream, Unit: "entries"})
	defer stopProgress()
	if bar != nil && p.Format == render.Table {
		out := p.Out
		p.Out = clearFirst{bar: bar, w: out}
		defer func() { p.Out = out }()
	}
	o.Output = p.Err
	var n int64
	counts, start := map[consume.Outcome]int64{}, time.Now()
	sum, err := consume.Run(ctx, conn, o.Params, func(r consume.Result) {
		_ = p.Show(view.ConsumeEntry{Result: r})
		n++
		counts[r.Outcome]++
		bar.Detail(fmt.Sprintf("%d done  %d failed  %d dead-lettered", counts[consume.Completed]+counts[consume.Skipped],
			counts[consume.Failed], counts[consume.DeadLettered]))
		bar.Set(n, 0)
	}, func(w string) { p.Warnf("%s", w) })
	stopProgress()
	if n > 0 || err == nil || ctx.Err() != nil {
		// Each outcome's count, the rate, and what made completions durable.
		parts := []string{render.Count(counts[consume.Completed]) + " completed"}
		for _, out := range consume.Outcomes[1:] {
			if counts[out] > 0 {
				parts = append(parts, render.Count(counts[out])+" "+string(out))
			}
		}
		line := fmt.Sprintf("consume %s (group %s): %s handled: %s", render.Field(o.Stream), render.Field(o.Group), render.Count(n), strings.Join(parts, ", "))
		if sum.LeftAlone > 0 {
			line += fmt.Sprintf("; %s left to the consumers holding them", render.Count(sum.LeftAlone))
		}
		fsynced := "; completions not known to be fsynced"
		if sum.Durability != "" {
			fsynced = "; completions fsynced (" + sum.Durability + ")"
		}
		p.Status("%s; %.1f entries/s%s", line, float64(n)/time.Since(start).Seconds(), fsynced)
	}
	if err == nil && ctx.Err() != nil {
		err = &exit.Error{Code: exit.Interrupted, What: "consume " + render.Field(o.Stream),
			Err: errors.New("interrupted"), Hint: "the handlers that were running finished; the entries not yet taken stay in the stream for the next run"}
	}
	return err
}
