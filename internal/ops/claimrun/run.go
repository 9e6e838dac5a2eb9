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

// killGrace is how long a stopped command gets between SIGTERM and SIGKILL.
var killGrace = 5 * time.Second

// Params are what Run needs: the claim held, how to renew and record it,
// and the command with its stdio.
type Params struct {
	Key            string
	Token, Attempt int64 // the claim acquired
	Lease, TTL     time.Duration
	MaxResult      int // the most output stored as the result (0: no cap)
	Retries        int // retries of recording the outcome after a network error
	Durability     redisconn.Durability
	Ack            redisconn.Ack // what acknowledged the claim (with Durability)

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
	Warnings        []string      // what the user should be told on stderr
}

// Run runs the command while holding the claim and records its outcome. It
// returns the exit code to pass through and an error when the claim was
// lost or could not be recorded.
func Run(ctx context.Context, conn *redisconn.Conn, p Params) (Result, error) {
	r := &claimedRun{p: p, conn: conn, g: p.Guard, sigs: p.Signals, token: p.Token, attempt: p.Attempt,
		out: &capWriter{max: p.MaxResult}, ack: p.Ack}
	code, err := r.execute(ctx)
	return Result{ExitCode: code, Started: r.started, Recorded: r.recorded,
		Output: string(r.out.buf), OutputTruncated: r.out.over,
		Ack: r.ack, Unacknowledged: r.unacked, Warnings: r.warnings}, err
}

// claimedRun runs the command while holding the claim.
type claimedRun struct {
	p              Params
	conn           *redisconn.Conn
	g              *Guard
	sigs           chan os.Signal // SIGINT and SIGTERM, to forward
	token, attempt int64
	out            *capWriter
	started        bool
	recorded       string
	ack            redisconn.Ack // the fewest replicas that acknowledged a write of the run
	unacked        string        // the outcome was not acknowledged: why
	warnings       []string
}

func (r *claimedRun) warnf(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
}

// durably is the claim option of the durability asked for; ack receives
// what was acknowledged.
func (r *claimedRun) durably(ack *redisconn.Ack) claim.Option {
	return claim.Durably(r.p.Durability, ack)
}

// bound is the per-command timeout, plus the wait of --wait-replicas.
func (r *claimedRun) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.conn.Timeout+r.p.Durability.Timeout)
}

// execute runs the command and records its outcome. It returns the exit code
// to pass through and an error when the claim was lost or could not be
// recorded.
func (r *claimedRun) execute(ctx context.Context) (int, error) {
	o := r.p
	// Recording the outcome must survive the SIGINT that cancels ctx.
	bg := context.WithoutCancel(ctx)
	env := append(os.Environ(), "IDMPCTL_KEY="+o.Key,
		"IDMPCTL_TOKEN="+strconv.FormatInt(r.token, 10), "IDMPCTL_ATTEMPT="+strconv.FormatInt(r.attempt, 10))
	var stdout io.Writer = r.out
	if o.Stdout != nil {
		stdout = io.MultiWriter(o.Stdout, r.out)
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
	ch, err := startChild(r.g, o.Command, env, o.Stdin, stdout, o.Stderr)
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
	o := r.p
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
		_, err := claim.Renew(cctx, r.conn, o.Key, r.token, o.Lease, o.TTL, r.durably(nil))
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
	o := r.p
	var rec claim.Record
	var ack redisconn.Ack
	err := redisconn.WithRetries(ctx, o.Retries, func() error {
		cctx, cancel := r.bound(ctx)
		defer cancel()
		var err error
		if code == 0 {
			var result *string
			if !r.out.over {
				s := string(r.out.buf)
				result = &s
			}
			rec, err = claim.Complete(cctx, r.conn, o.Key, r.token, result, o.TTL, 0, r.durably(&ack))
		} else {
			rec, err = claim.Fail(cctx, r.conn, o.Key, r.token, reason, o.TTL, false, r.durably(&ack))
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
		r.warnf("claim run %q: %s", o.Key, r.unacked)
		return nil
	}
	if err != nil {
		return exit.WithHint(exit.Wrap(err, "claim run "+strconv.Quote(o.Key)),
			what+" but its outcome could not be recorded; the key stays PROCESSING until its lease passes")
	}
	r.recorded, r.ack = rec.Status, minAck(r.ack, ack)
	if code == 0 && r.out.over {
		r.warnf("claim run %q: output over --max-result %d bytes: recorded COMPLETED without it (a redelivery replays nothing)", o.Key, o.MaxResult)
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

// GuardCommand is the hidden verb that guards the command's process group
// where there is no /bin/sh (Linux): cmd/ registers it to call RunGuard.
const GuardCommand = "__claim-guard"

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

// minAck is the weaker of two acknowledgements.
func minAck(a, b redisconn.Ack) redisconn.Ack {
	if a.Err == nil {
		a.Err = b.Err
	}
	a.Replicas = min(a.Replicas, b.Replicas)
	a.LocalAOF = a.LocalAOF && b.LocalAOF
	return a
}
