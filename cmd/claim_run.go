package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/claimrun"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
	"github.com/spf13/cobra"
)

// RunOptions are claim run's inputs.
type RunOptions struct {
	Factory *Factory
	ClaimFlags
	Wait    time.Duration
	Command []string
}

// NewCmdClaimRun builds claim run; runF replaces the run step in tests.
func NewCmdClaimRun(f *Factory, runF func(*RunOptions) error) *cobra.Command {
	o := &RunOptions{Factory: f}
	c := &cobra.Command{
		Use:   "run KEY [flags] -- COMMAND [ARGS...]",
		Short: "Run a command at most once per KEY, recording its outcome",
		Long: `Claim KEY, run COMMAND with the claim renewed from a third of the lease on,
and record the outcome: exit 0 -> COMPLETED with the command's stdout (up to
--max-result), non-zero -> FAILED; the command's exit code is passed through.
Its stdout streams to ours (a reader that goes away stops the streaming,
never the command); its stderr passes through; SIGINT and SIGTERM are
forwarded. The command sees IDMPCTL_KEY, IDMPCTL_TOKEN and IDMPCTL_ATTEMPT.

The lease is enforced: if renewals fail (Redis unreachable, a partition),
the command is sent SIGTERM, then SIGKILL, so that it has ended before the
lease could lapse, counted from when the last successful renewal was sent,
less a margin for clock drift: no other worker can take the key while it
runs. Any --lease from 1s up works with any --timeout: a renewal may take
--timeout, but never longer than the time left before the command would be
stopped (one that is not answered by then has failed).

  already COMPLETED   prints the stored output, exits 0, runs nothing
  busy                exits 75 (or waits with --wait, polling until done
                      or free)
  claim lost          a renewal found another owner, or renewals failed until
                      the command had to be stopped: it is stopped, exit 76
  Redis unreachable   before the command: exits 69 and it never runs (fail
                      closed). After it ran: the outcome is tried again with
                      the same token while the lease allows; if it still
                      cannot be recorded, a warning says so and the command's
                      exit code is passed through, never 69 or 75
  not acknowledged    with --wait-replicas: the claim was not acknowledged
                      by enough replicas in --wait-timeout: it is given up,
                      exit 69, and the command never runs. An outcome that
                      was not acknowledged stands on the primary: a warning
                      says so and the command's exit code is passed through.
                      A renewal that was not acknowledged counts as failed.

On Linux the command runs in the process group of a guard that kills the
group if idmpctl dies (even by kill -9). While idmpctl lives, it also stops
descendants that left the group (setsid): it is their subreaper. An idmpctl
that is stopped (SIGSTOP, Ctrl-Z) can neither renew nor stop its command: a
timer of its own, re-set by each renewal, kills it (SIGKILL) just after the
deadline, and the guard then kills the group. Limit: after kill -9 of
idmpctl (or that timer), a descendant that left the command's process group
(setsid, setpgid) is not killed.

With -o json the command's stdout is not streamed: it is captured into the
one JSON object printed at the end, with the outcome and exit code.`,
		Example: `  idmpctl claim run "payment:$MSG_ID" --lease 1m -- ./charge.sh "$MSG_ID"
  idmpctl claim run "job:$ID" --wait 30s -- make deploy`,
		Args: func(c *cobra.Command, args []string) error {
			if c.ArgsLenAtDash() != 1 || len(args) < 2 {
				return &exit.Error{Code: exit.Usage, Err: errors.New("claim run needs KEY -- COMMAND [ARGS...]"),
					Hint: "put the command after --, e.g. idmpctl claim run job:17 -- ./job.sh 17"}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.Key, o.Command = args[0], args[1:]
			o.noteChanged(c)
			return runValidated(c, o, runF, claimRunRun, func() error { return o.complete(f) }, o.Validate)
		},
	}
	addClaimFlagsFor(c, &o.ClaimFlags, runFlags)
	durationVar(c.Flags(), &o.Wait, "wait", 0, "when busy, poll up to this long for the key to become done or free")
	return c
}

// Validate checks claim run's flags without I/O.
func (o *RunOptions) Validate() error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.Wait < 0 {
		return exit.Usagef("--wait %s: must not be negative", o.Wait)
	}
	return claimrun.CheckLease(o.Lease)
}

func claimRunRun(ctx context.Context, o *RunOptions) error {
	// SIGINT and SIGTERM cancel until the command starts (nothing runs),
	// then are forwarded to it. The guard (Linux) was started by Main, or
	// starts now beside the acquire; one not needed is let go.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	surviveClosedStdout() // the outcome is still recorded
	sigs := make(chan os.Signal, 4)
	// SIGHUP too: a terminal hung up, whose shell sends it to its jobs.
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	g := o.Factory.guard
	if g == nil {
		g = claimrun.StartGuard(o.Factory.Err)
		o.Factory.guard = g
	}
	defer g.Release()
	watching, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-sigs:
			cancel()
		case <-watching:
		}
	}()
	stopWatching := func() { close(watching); <-watched }
	p := o.Factory.Printer
	conn, err := o.Factory.Conn(ctx)
	if err != nil {
		stopWatching()
		return exit.WithHint(err, "the command was not run (fail closed)")
	}
	var ack redisconn.Ack
	res, sent, err := claimrun.Acquire(ctx, conn, o.acquireParams(), o.Wait, o.durably(&ack))
	stopWatching() // the run's loop forwards signals from here on
	if err != nil {
		var na *redisconn.NotAckedError
		if errors.As(err, &na) {
			_ = p.Show(view.ClaimRun{Key: render.Text(o.Key), Outcome: "unacknowledged", ExitCode: exit.Code(err), Error: err.Error(),
				Ack: o.ackFor(true, &ack)})
		}
		return failClosed(err)
	}
	report := view.ClaimRun{Key: render.Text(o.Key), Outcome: string(res.Outcome)}
	if !res.Acquired() {
		if res.Outcome == claim.Done {
			report.Outcome, report.Output, report.ReplayedToken = "replayed", render.Text(res.Record.Result), res.Record.Token
			return p.Show(report)
		}
		err := acquireExit(p, "claim run", o.Key, res, o.Wait)
		report.ExitCode, report.Error = exit.Code(err), err.Error()
		_ = p.Show(report) // -o json's report; the error says it all elsewhere
		return err
	}
	if res.Outcome == claim.Takeover {
		_ = acquireExit(p, "claim run", o.Key, res, o.Wait)
	}
	report.Token, report.Attempts, report.Attempt = res.Token, res.Attempt, res.Attempt
	params := claimrun.Params{Key: o.Key, Token: res.Token, Attempt: res.Attempt, LeaseSent: sent, Lease: o.Lease, TTL: o.ttlGiven(),
		MaxResult: o.MaxResult, Durability: o.Durable.durability(), Ack: ack,
		Command: o.Command, Stdin: o.Factory.In, Stdout: o.Factory.Out, Stderr: o.Factory.Err, Guard: g, Signals: sigs}
	if p.Format == render.JSON {
		params.Stdout = nil // captured into the JSON object
	}
	run, runErr := claimrun.Run(ctx, conn, params)
	for _, w := range run.Warnings {
		p.Warnf("%s", w)
	}
	code := run.ExitCode
	report.Ack, report.Unacknowledged = o.ackFor(true, &run.Ack), run.Unacknowledged
	report.Ran, report.ExitCode = run.Started, code
	report.Output, report.OutputTruncated = render.Text(run.Output), run.OutputTruncated
	report.Recorded, report.Unrecorded = run.Recorded, run.Unrecorded
	if run.Interrupted != nil {
		report.Interrupted = sigName(run.Interrupted)
	}
	if runErr != nil {
		report.Error = runErr.Error()
	}
	switch {
	case exit.Code(runErr) == exit.Lost:
		report.Outcome = "lost"
	case run.Started: // a stopped command that was ended, too
		report.Outcome = "ran"
	}
	// The command ran: output that could not be written (a reader that
	// went away, a full disk) is a warning, and its code stands.
	o.Factory.outputTold = true
	if err := p.Show(report); err != nil { // only -o json prints more at the end
		p.Warnf("claim run %q: the JSON report could not be written (%v): the command's exit code (%d) stands", o.Key, err, code)
	}
	if runErr != nil {
		return runErr
	}
	if run.Interrupted != nil {
		return interruptedRun(p, o.Key, run)
	}
	if code != 0 {
		if run.Started && contractCode(code) {
			// The command's own 75 (sendmail's EX_TEMPFAIL, say) would read
			// as idmpctl's "did not run" to a consumer loop: say whose it is.
			p.Warnf("claim run %q: the command ran and exited %d itself (%s recorded): this %d is the command's, not idmpctl's", o.Key, code,
				cmp.Or(run.Recorded, "nothing"), code)
		}
		return exit.Status(code)
	}
	return nil
}

// interruptedRun says what a signal forwarded to the command came to: its
// exit code stands, and the hint says whether a redelivery runs it again.
func interruptedRun(p *render.Printer, key string, run claimrun.Result) error {
	sig := sigName(run.Interrupted)
	exited := fmt.Sprintf("the command exited %d", run.ExitCode)
	if s, ok := run.Interrupted.(syscall.Signal); ok && run.ExitCode == 128+int(s) {
		exited = fmt.Sprintf("the command was stopped by it (exit %d)", run.ExitCode)
	}
	recorded := "its outcome could not be recorded: the key stays PROCESSING until its lease passes, then a redelivery runs it again"
	switch run.Recorded {
	case "FAILED":
		recorded = "FAILED recorded: a redelivery claims the key at once and runs the command again"
	case "COMPLETED":
		recorded = "COMPLETED recorded: a redelivery replays its output"
	}
	if run.ExitCode == 0 {
		p.Status("idmpctl: claim run %q: %s forwarded to the command, which exited 0; %s", key, sig, recorded)
		return nil
	}
	return &exit.Error{Code: run.ExitCode, What: "claim run " + strconv.Quote(key),
		Err: fmt.Errorf("interrupted (%s): %s", sig, exited), Hint: recorded}
}

// contractCode reports whether code is one of idmpctl's own exit codes.
func contractCode(code int) bool {
	return slices.Contains([]int{exit.Usage, exit.Data, exit.NotFound, exit.Unavailable, exit.Internal, exit.Busy, exit.Lost,
		exit.Permission, exit.Config}, code)
}

// failClosed adds to the error's hint that the command was not run.
func failClosed(err error) error {
	hint := "the command was not run (fail closed)"
	var e *exit.Error
	if errors.As(err, &e) && e.Hint != "" {
		hint += "; " + e.Hint
	}
	return exit.WithHint(err, hint)
}
