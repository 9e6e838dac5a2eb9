package claimrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// Params are what Run needs: the claim held, how to renew and record it,
// and the command with its stdio.
type Params struct {
	Key            string
	Token, Attempt int64         // the claim acquired
	LeaseSent      time.Time     // when the acquire that took the claim was sent (Acquire)
	Lease          time.Duration // the claim's lease, as stored at acquire
	TTL            time.Duration // the retention given (0: the one the claim was taken with)
	MaxResult      int           // the most output stored as the result (0: no cap; < 0: none stored)
	Durability     redisconn.Durability
	Ack            redisconn.Ack // what acknowledged the claim (with Durability)
	// What names the run in errors and warnings (default: claim run "KEY").
	What string
	// Complete are more options of the complete (consume: claim.Acking,
	// and the wait for the AOF that completions alone need).
	Complete []claim.Option
	Env      []string // more of the command's environment, NAME=value

	Command []string
	Stdin   io.Reader
	Stdout  io.Writer // where the command's stdout streams besides the capture; nil: captured only
	Stderr  io.Writer
	Guard   *Guard         // started by StartGuard; released when Run returns
	Signals chan os.Signal // SIGINT and SIGTERM, to forward once the command runs
}

// Result is what happened to the command and its outcome.
type Result struct {
	ExitCode        int
	Started         bool
	Recorded        string // COMPLETED or FAILED, once recorded
	Output          string // the captured stdout, up to MaxResult
	OutputTruncated bool
	Ack             redisconn.Ack // the fewest replicas that acknowledged a write of the run
	Unacknowledged  string        // the outcome was not acknowledged: why
	Unrecorded      string        // the command ran but its outcome could not be recorded: why
	Renewals        int           // successful renewals
	Warnings        []string      // what the user should be told on stderr
	// Interrupted is the first SIGINT or SIGTERM forwarded to the command
	// while it ran (nil: none): its exit code says what it made of it.
	Interrupted os.Signal
}

// Run runs the command while holding the claim and records its outcome. Its
// error: the claim was lost, the lease could not be kept (the command was
// stopped), or a command that never ran could not be recorded; once it ran,
// an unrecorded outcome is a warning: its exit code is what the caller acts on.
func Run(ctx context.Context, conn *redisconn.Conn, p Params) (Result, error) {
	bound := conn.Timeout + p.Durability.Timeout
	r := &claimedRun{Result: Result{Ack: p.Ack}, p: p, conn: conn,
		out: &capWriter{max: p.MaxResult}, clock: &leaseClock{s: newSchedule(p.Lease, bound)}}
	if p.What == "" {
		r.p.What = "claim run " + strconv.Quote(p.Key)
	}
	r.clock.renewed(p.LeaseSent)
	if p.LeaseSent.IsZero() {
		r.clock.renewed(time.Now()) // later than the true send: callers give LeaseSent
	}
	var err error
	if r.dm, err = newDeadman(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		r.warnf("%s: %v: if idmpctl is stopped (SIGSTOP) past the lease, its command goes on running", r.p.What, err)
	}
	defer r.dm.disarm()
	code, err := r.execute(ctx)
	if r.stream != nil && r.stream.broken != nil {
		r.warnf("%s: stdout was closed (%v): the command's output was still captured, not streamed", r.p.What, r.stream.broken)
	}
	r.ExitCode, r.Output, r.OutputTruncated = code, string(r.out.buf), r.out.over
	return r.Result, err
}

// claimedRun runs the command while holding the claim; Result fills as it goes.
type claimedRun struct {
	Result
	p      Params
	conn   *redisconn.Conn
	out    *capWriter
	stream *streamWriter
	clock  *leaseClock
	dm     *deadman // kills idmpctl, and so the command, should idmpctl be stopped past the deadline
}

func (r *claimedRun) warnf(format string, args ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
}

// execute runs the command and records its outcome (see Run).
func (r *claimedRun) execute(ctx context.Context) (int, error) {
	o := r.p
	// Recording the outcome must survive the SIGINT that cancels ctx.
	bg := context.WithoutCancel(ctx)
	env := append(append(os.Environ(), o.Env...), "IDMPCTL_KEY="+o.Key,
		"IDMPCTL_TOKEN="+strconv.FormatInt(r.p.Token, 10), "IDMPCTL_ATTEMPT="+strconv.FormatInt(r.p.Attempt, 10))
	r.stream = &streamWriter{out: o.Stdout, capture: r.out}
	what := o.What
	// A SIGINT or SIGTERM from here on is forwarded once the command runs;
	// one that came before it started means it does not start.
	sigs := r.p.Signals
	if s, _ := r.p.Guard.whileStarting(sigs); s != nil || ctx.Err() != nil {
		const why = "interrupted before the command started"
		return r.notStarted(bg, 130, why, exit.New(130, what, why))
	}
	if late := time.Since(r.clock.termAt()); late >= 0 {
		// The acquire's reply, or the guard, came too late to start the
		// command: FAILED lets a redelivery retry at once.
		why := fmt.Sprintf("the command was not started: the claim was taken %s ago, too late to run it within its lease (%s)",
			ms(time.Since(r.clock.lastSent())), o.Lease)
		return r.notStarted(bg, exit.Unavailable, why, exit.WithHint(exit.New(exit.Unavailable, what, "%s", why),
			"the server or this machine is too slow for this lease: a longer --lease, or run it again (the claim was recorded FAILED)"))
	}
	// The dead man's switch is armed once the start is known to be in time
	// (fired at once after a stop before it); armed earlier, it would kill
	// an idmpctl merely slow to start, which the check above answers.
	r.setDeadman()
	ch, err := startChild(r.p.Guard, o.Command, env, o.Stdin, r.stream, o.Stderr)
	if err != nil {
		code, why := startFailure(o.Command[0], err)
		return r.notStarted(bg, code, why, exit.WithHint(exit.New(code, what, "%s", why),
			"nothing ran (FAILED recorded): running it again fails alike until the command is there and executable"))
	}
	r.Started = true

	waited := make(chan int, 1)
	go func() { waited <- ch.wait() }()
	lost, expire := make(chan error, 1), make(chan error, 1)
	stopRenew, renewing := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(renewing)
		r.renew(bg, stopRenew, lost, expire)
	}()
	// The renewals end before the outcome is recorded (or the run given up).
	endRenewals := func() { close(stopRenew); <-renewing }

	for {
		select {
		case s := <-sigs:
			if r.Interrupted == nil {
				r.Interrupted = s
			}
			ch.signal(s)
		case lerr := <-lost:
			endRenewals()
			// Someone else may hold the key already: a grace, but never past
			// the deadline of the lease this run last renewed.
			killAt := r.clock.deadline()
			if grace := time.Now().Add(r.clock.s.grace); grace.Before(killAt) {
				killAt = grace
			}
			r.stop(ch, waited, killAt)
			r.dm.disarm()
			return -1, exit.WithHint(lerr, "the command was stopped; another worker may now hold the key")
		case eerr := <-expire:
			endRenewals()
			r.stop(ch, waited, r.clock.deadline())
			r.dm.disarm()
			return -1, exit.WithHint(eerr, "the key stays PROCESSING until its lease passes; then a redelivery can claim it")
		case code := <-waited:
			endRenewals()
			r.dm.disarm()
			ch.ended()
			reason := ""
			if code != 0 {
				reason = fmt.Sprintf("exit status %d", code)
			}
			stopped := ch.stoppedBy()
			if stopped != "" {
				reason = fmt.Sprintf("stopped (%s), then ended: %s", stopped, reason)
			}
			if err := r.record(bg, code, reason, true); err != nil || stopped == "" {
				return code, err
			}
			return code, stoppedError(what, stopped, code)
		}
	}
}

// stoppedError says why a command that was stopped was ended: its code
// stands, FAILED recorded.
func stoppedError(what, sig string, code int) error {
	why := "a stopped command would keep its claim, renewed, for ever"
	hint := "FAILED recorded: a redelivery runs it again"
	if sig == "SIGTTIN" || sig == "SIGTTOU" {
		why = "it used the terminal, which idmpctl did not hold in the foreground"
		hint += "; run idmpctl in the foreground, or give the command another stdin (< /dev/null)"
	}
	return exit.WithHint(exit.New(code, what, "the command was stopped (%s: %s), so it was ended (exit %d)",
		sig, why, code), hint)
}

// notStarted records FAILED for a command that did not start: err, or the
// failure to record.
func (r *claimedRun) notStarted(ctx context.Context, code int, reason string, err error) (int, error) {
	r.dm.disarm()
	if ferr := r.record(ctx, code, reason, false); ferr != nil {
		return code, ferr
	}
	return code, err
}

// setDeadman sets the dead man's switch a little after the command's
// SIGKILL at the deadline: while idmpctl runs, its own stop comes first.
func (r *claimedRun) setDeadman() {
	if err := r.dm.set(r.clock.deadmanAt()); err != nil {
		r.dm.disarm()
	}
}

// stop ends the command and everything it started, in its group or out of
// it: SIGTERM, then SIGKILL at killAt to those still there (one that
// ignores SIGTERM would go on after the lease).
func (r *claimedRun) stop(ch child, waited <-chan int, killAt time.Time) {
	ch.stop(syscall.SIGTERM)
	timer := time.NewTimer(time.Until(killAt))
	defer timer.Stop()
	select {
	case <-waited:
		// The command ended; what it started gets until killAt.
		for ch.anyLeft() {
			select {
			case <-timer.C:
				r.kill(ch)
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	case <-timer.C:
		r.kill(ch)
		<-waited
		killAll(ch) // what was orphaned while the group died
	}
}

// kill sends SIGKILL to the command's process group first, one system
// call, then disarms the dead man's switch, which could add nothing: the
// rest of the stop (walks of /proc, the wait) may outlast it on a loaded
// machine, which would kill idmpctl mid-stop.
func (r *claimedRun) kill(ch child) {
	ch.signal(syscall.SIGKILL)
	r.dm.disarm()
	killAll(ch)
}

// killAll sends SIGKILL to everything the command started until nothing
// is left: a process that forked between the look and the kill is found
// at the next look (bounded: a fork faster than the kill is a fork bomb).
func killAll(ch child) {
	for i := 0; i < 100; i++ {
		ch.stop(syscall.SIGKILL)
		if !ch.anyLeft() {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// GuardCommand is the hidden verb that guards the command's process group
// where there is no /bin/sh (Linux): cmd/ registers it to call RunGuard.
const GuardCommand = "__claim-guard"

// startFailure is the shell's code for a command that cannot start (127
// not found, 126 not executable) and why, in the system's words.
func startFailure(name string, err error) (int, string) {
	why := fmt.Sprintf("cannot start %q: %s", name, StartReason(err))
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return 127, why
	}
	return 126, why
}

// StartReason is why a command cannot start (an exec or LookPath error),
// in the system's words: "no such file or directory", not "stat PATH: ...".
func StartReason(err error) string {
	var pe *os.PathError
	var ee *exec.Error
	if errors.As(err, &pe) {
		return pe.Err.Error()
	} else if errors.As(err, &ee) {
		return ee.Err.Error()
	}
	return err.Error()
}
