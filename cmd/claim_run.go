package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/spf13/cobra"
)

// killGrace is how long a stopped command gets between SIGTERM and SIGKILL.
var killGrace = 5 * time.Second

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
		Short: "Run a command at most once per KEY: claim, run with renewals, record the outcome",
		Long: `Claim KEY, run COMMAND with the claim renewed every lease/3, and record the
outcome: exit 0 -> COMPLETED with the command's stdout (up to --max-result),
non-zero -> FAILED; the command's exit code is passed through. Its stdout
streams to ours; its stderr passes through; SIGINT and SIGTERM are forwarded.
The command sees IDMPCTL_KEY, IDMPCTL_TOKEN and IDMPCTL_ATTEMPT.

  already COMPLETED   prints the stored output, exits 0, runs nothing
  busy                exits 75 (or waits with --wait, polling until done or free)
  claim lost          a renewal found another owner, or renewals failed for
                      longer than the lease: the command is stopped, exit 76
  Redis unreachable   exits 69 and the command never runs (fail closed)
  not acknowledged    with --wait-replicas: the claim was not acknowledged
                      by enough replicas in --wait-timeout: it is given up,
                      exit 69, and the command never runs. An outcome that
                      was not acknowledged stands on the primary: a warning
                      says so and the command's exit code is passed through.
                      A renewal that was not acknowledged counts as failed.

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
			o.Key, o.Command, o.OwnerSet = args[0], args[1:], c.Flags().Changed("owner")
			o.Durable.noteChanged(c)
			if err := o.complete(f); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			if o.Wait < 0 {
				return exit.Usagef("--wait %s: must not be negative", o.Wait)
			}
			if runF != nil {
				return runF(o)
			}
			return claimRunRun(c.Context(), o)
		},
	}
	addClaimFlags(c, &o.ClaimFlags)
	c.Flags().DurationVar(&o.Wait, "wait", 0, "when busy, poll up to this long for the key to become done or free")
	return c
}

// runJSON is claim run's -o json.
type runJSON struct {
	Key             string `json:"key"`
	Outcome         string `json:"outcome"` // ran, replayed, busy, mismatch, exhausted, lost, unacknowledged
	Ran             bool   `json:"ran"`
	ExitCode        int    `json:"exit_code"`
	Token           int64  `json:"token,omitempty"`
	Attempt         int64  `json:"attempt,omitempty"`
	Recorded        string `json:"recorded,omitempty"` // COMPLETED or FAILED
	Output          string `json:"output"`
	OutputTruncated bool   `json:"output_truncated,omitempty"`
	Error           string `json:"error,omitempty"`
	// With --wait-replicas: the fewest replicas that acknowledged a write
	// of this run (the claim, and the outcome when it ran), and why the
	// outcome stands unacknowledged when it does.
	ackJSON
	Unacknowledged string `json:"unacknowledged,omitempty"`
}

func claimRunRun(ctx context.Context, o *RunOptions) error {
	// SIGINT and SIGTERM: until the command starts they cancel (nothing
	// runs); then they are forwarded to it. The guard (Linux) was started
	// before the tree was built (Main), or starts now, beside the acquire;
	// one not needed is let go.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	g := o.Factory.guard
	if g == nil {
		g = startGuard(o.Factory.Err)
		o.Factory.guard = g
	}
	defer g.release()
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
	res, err := acquireWaiting(ctx, conn, o, &ack)
	stopWatching() // the run's loop forwards signals from here on
	if err != nil {
		var na *redisconn.NotAckedError
		if errors.As(err, &na) && p.Format == render.JSON {
			_ = p.JSON(runJSON{Key: o.Key, Outcome: "unacknowledged", ExitCode: exit.Code(err), Error: err.Error(),
				ackJSON: o.ackFor(true, &ack)})
		}
		return failClosed(err)
	}
	report := runJSON{Key: o.Key, Outcome: string(res.Outcome)}
	if !res.Acquired() {
		switch res.Outcome {
		case claim.Done:
			report.Outcome, report.Output = "replayed", res.Record.Result
			if p.Format == render.JSON {
				return p.JSON(report)
			}
			fmt.Fprint(p.Out, res.Record.Result)
			if p.Human() || p.ErrTTY { // a person reads it: say what happened
				p.Status("idmpctl: replayed: the command did not run (%s completed it, token %d)", render.Field(o.Key), res.Record.Token)
			}
			return nil
		}
		err := acquireExit(p, o.Key, res)
		report.ExitCode, report.Error = exit.Code(err), err.Error()
		if p.Format == render.JSON {
			_ = p.JSON(report)
		}
		return err
	}
	if res.Outcome == claim.Takeover {
		_ = acquireExit(p, o.Key, res)
	}
	report.Token, report.Attempt = res.Token, res.Attempt
	run := &claimedRun{o: o, conn: conn, g: g, sigs: sigs, token: res.Token, attempt: res.Attempt,
		out: &capWriter{max: o.MaxResult}, ack: ack}
	code, runErr := run.execute(ctx)
	report.ackJSON, report.Unacknowledged = o.ackFor(true, &run.ack), run.unacked
	report.Ran, report.ExitCode = run.started, code
	report.Output, report.OutputTruncated = string(run.out.buf), run.out.over
	report.Recorded = run.recorded
	if runErr != nil {
		report.Error = runErr.Error()
		if exit.Code(runErr) == exit.Lost {
			report.Outcome = "lost"
		}
	} else {
		report.Outcome = "ran"
	}
	if p.Format == render.JSON {
		if err := p.JSON(report); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	if code != 0 {
		return exit.Status(code)
	}
	return nil
}

// failClosed says that the command was not run, after what the error
// itself suggests.
func failClosed(err error) error {
	hint := "the command was not run (fail closed)"
	var e *exit.Error
	if errors.As(err, &e) && e.Hint != "" {
		hint += "; " + e.Hint
	}
	return exit.WithHint(err, hint)
}

// acquireWaiting acquires, polling while busy for up to --wait.
func acquireWaiting(ctx context.Context, conn *redisconn.Conn, o *RunOptions, ack *redisconn.Ack) (claim.AcquireResult, error) {
	deadline := time.Now().Add(o.Wait)
	pause := 50 * time.Millisecond
	for {
		res, err := claim.Acquire(ctx, conn, o.acquireParams(), o.durably(ack))
		if err != nil || res.Outcome != claim.Busy || time.Now().After(deadline) {
			return res, err
		}
		wait := min(pause, time.Until(deadline), time.Duration(res.LeaseLeftMs)*time.Millisecond+10*time.Millisecond)
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(max(wait, 10*time.Millisecond)):
		}
		pause = min(pause*2, time.Second)
	}
}

// claimedRun runs the command while holding the claim.
type claimedRun struct {
	o              *RunOptions
	conn           *redisconn.Conn
	g              *guard
	sigs           chan os.Signal // SIGINT and SIGTERM, to forward
	token, attempt int64
	out            *capWriter
	started        bool
	recorded       string
	ack            redisconn.Ack // the fewest replicas that acknowledged a write of the run
	unacked        string        // the outcome was not acknowledged: why
}

// bound is the per-command timeout, plus the wait of --wait-replicas.
func (r *claimedRun) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.conn.Timeout+r.o.Durable.durability().Timeout)
}

// execute runs the command and records its outcome. It returns the exit code
// to pass through and an error when the claim was lost or could not be
// recorded.
func (r *claimedRun) execute(ctx context.Context) (int, error) {
	o, f := r.o, r.o.Factory
	// Recording the outcome must survive the SIGINT that cancels ctx.
	bg := context.WithoutCancel(ctx)
	env := append(os.Environ(), "IDMPCTL_KEY="+o.Key,
		"IDMPCTL_TOKEN="+strconv.FormatInt(r.token, 10), "IDMPCTL_ATTEMPT="+strconv.FormatInt(r.attempt, 10))
	var stdout io.Writer = io.MultiWriter(f.Out, r.out)
	if f.Printer.Format == render.JSON {
		stdout = r.out
	}
	// A SIGINT or SIGTERM from here on is forwarded once the command runs;
	// one that came before it started means it does not start.
	sigs := r.sigs
	if s, _ := r.g.whileStarting(sigs); s != nil || ctx.Err() != nil {
		const code = 130
		if ferr := r.record(bg, code, "interrupted before the command started"); ferr != nil {
			return code, ferr
		}
		return code, exit.New(code, "claim run "+strconv.Quote(o.Key), "interrupted before the command started")
	}
	ch, err := startChild(r.g, o.Command, env, f.In, stdout, f.Err)
	if err != nil {
		code := startFailureCode(err)
		ferr := r.record(bg, code, "cannot start: "+err.Error())
		if ferr != nil {
			return code, ferr
		}
		return code, exit.New(code, "claim run "+strconv.Quote(o.Key), "%v", err)
	}
	r.started = true

	waited := make(chan int, 1)
	go func() { waited <- ch.wait() }()
	lost := make(chan error, 1)
	stopRenew := make(chan struct{})
	defer close(stopRenew)
	go r.renew(bg, stopRenew, lost)

	for {
		select {
		case s := <-sigs:
			ch.signal(s)
		case lerr := <-lost:
			r.stop(ch, waited)
			return -1, exit.WithHint(lerr, "the command was stopped; another worker may now hold the key")
		case code := <-waited:
			ch.ended()
			reason := ""
			if code != 0 {
				reason = fmt.Sprintf("exit status %d", code)
			}
			return code, r.record(bg, code, reason)
		}
	}
}

// renew extends the lease every lease/3; a lost claim, or renewals failing
// for longer than the lease, is reported on lost.
func (r *claimedRun) renew(ctx context.Context, stop <-chan struct{}, lost chan<- error) {
	o := r.o
	every := max(o.Lease/3, 10*time.Millisecond)
	retry := max(min(o.Lease/10, time.Second), 10*time.Millisecond)
	lastOK := time.Now()
	next := every
	for {
		select {
		case <-stop:
			return
		case <-time.After(next):
		}
		cctx, cancel := r.bound(ctx)
		_, err := claim.Renew(cctx, r.conn, o.Key, r.token, o.Lease, o.TTL, o.durably(nil))
		cancel()
		switch {
		case err == nil:
			lastOK, next = time.Now(), every
		case exit.Code(err) == exit.Lost:
			lost <- err
			return
		case time.Since(lastOK) >= o.Lease:
			lost <- &exit.Error{Code: exit.Lost, What: "claim run " + strconv.Quote(o.Key),
				Err: fmt.Errorf("renewals failed for %s, longer than the lease %s: the claim may be taken over: %v",
					time.Since(lastOK).Round(time.Millisecond), o.Lease, err)}
			return
		default:
			next = retry
		}
	}
}

// stop ends the command: SIGTERM to its process group, SIGKILL after a grace.
func (r *claimedRun) stop(ch child, waited <-chan int) {
	ch.signal(syscall.SIGTERM)
	select {
	case <-waited:
	case <-time.After(killGrace):
		ch.signal(os.Kill)
		<-waited
	}
}

// record writes COMPLETED (code 0) or FAILED, retrying network errors (both
// are safe to repeat with the same token).
func (r *claimedRun) record(ctx context.Context, code int, reason string) error {
	o, f := r.o, r.o.Factory
	var rec claim.Record
	var ack redisconn.Ack
	err := redisconn.WithRetries(ctx, f.Global.Retries, func() error {
		cctx, cancel := r.bound(ctx)
		defer cancel()
		var err error
		if code == 0 {
			var result *string
			if !r.out.over {
				s := string(r.out.buf)
				result = &s
			}
			rec, err = claim.Complete(cctx, r.conn, o.Key, r.token, result, o.TTL, 0, o.durably(&ack))
		} else {
			rec, err = claim.Fail(cctx, r.conn, o.Key, r.token, reason, o.TTL, false, o.durably(&ack))
		}
		return err
	}, nil)
	what := "the command failed"
	if code == 0 {
		what = "the command succeeded"
	}
	var na *redisconn.NotAckedError
	if errors.As(err, &na) {
		// Recorded on the primary, but a failover could lose it. The command
		// ran: its exit status is passed through (the spec's contract), and
		// the consumer that acknowledges its message on it is spared a
		// redelivery that such a failover would turn into a second run.
		r.recorded, r.ack = rec.Status, minAck(r.ack, ack)
		r.unacked = fmt.Sprintf("%v; %s and its exit status is passed through: if a failover loses the outcome, the key is PROCESSING again and a redelivery runs the command again once the lease passes", err, what)
		f.Printer.Warnf("claim run %q: %s", o.Key, r.unacked)
		return nil
	}
	if err != nil {
		return exit.WithHint(exit.Wrap(err, "claim run "+strconv.Quote(o.Key)),
			what+" but its outcome could not be recorded; the key stays PROCESSING until its lease passes")
	}
	r.recorded, r.ack = rec.Status, minAck(r.ack, ack)
	if code == 0 && r.out.over {
		f.Printer.Warnf("claim run %q: output over --max-result %d bytes: recorded COMPLETED without it (a redelivery replays nothing)", o.Key, o.MaxResult)
	}
	return nil
}

// child is the started command; startChild starts one (per OS).
type child interface {
	// signal sends s to the command (its whole process group where there
	// are groups).
	signal(s os.Signal)
	// wait waits for the command and its output, and returns its exit code
	// (128+n after signal n, as a shell says).
	wait() int
	// ended says the command ended normally and was waited for.
	ended()
}

// guardCommand is the hidden verb that guards the command's process group
// where there is no /bin/sh (Linux).
const guardCommand = "__claim-guard"

// startFailureCode is the shell's code for a command that cannot start:
// 127 not found, 126 not executable.
func startFailureCode(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return 127
	}
	return 126
}

// capWriter keeps up to max bytes (0: no cap, as for claim complete) and
// notes whether more came.
type capWriter struct {
	max  int
	buf  []byte
	over bool
}

func (w *capWriter) Write(b []byte) (int, error) {
	room := w.max - len(w.buf)
	if w.max > 0 && len(b) > room {
		w.buf = append(w.buf, b[:max(room, 0)]...)
		w.over = true
		return len(b), nil
	}
	w.buf = append(w.buf, b...)
	return len(b), nil
}
