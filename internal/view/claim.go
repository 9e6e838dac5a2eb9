package view

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/ops/claim"
	"github.com/idmpctl/idmpctl/internal/render"
)

// claimRecordJSON is a claim record in -o json, its timestamps also under
// _ms names (the old ones stay as aliases for now, docs/output.md);
// retention_ms and lease_ms are the record's fields, ttl_ms the key's TTL.
type claimRecordJSON struct {
	Key render.Text `json:"key"` // first, as the record's, which it hides
	*claim.Record
	CreatedAt    int64 `json:"created_ms"`
	UpdatedAt    int64 `json:"updated_ms"`
	LeaseUntilAt int64 `json:"lease_until_ms"`
	NowAt        int64 `json:"now_ms"`
}

func claimJSON(r claim.Record) *claimRecordJSON {
	return &claimRecordJSON{Key: render.Text(r.Key), Record: &r, CreatedAt: r.Created, UpdatedAt: r.Updated, LeaseUntilAt: r.LeaseUntil, NowAt: r.Now}
}

// claimKV draws a claim record under title, with extra pairs after its
// own.
func claimKV(p *render.Printer, title string, r claim.Record, extra ...render.Pair) {
	pairs := []render.Pair{{"status", render.Field(r.Status)}, {"owner", render.Field(r.Owner)}, {"token", strconv.FormatInt(r.Token, 10)},
		{"attempts", p.CountText(r.Attempts)}}
	pairs = addIf(pairs, r.Status == claim.StatusProcessing, render.Pair{"lease-left", p.MsDuration(r.LeaseUntil - r.Now)})
	pairs = append(pairs, render.Pair{"ttl", p.TTLText(r.TTLms)})
	pairs = addIf(pairs, r.Fingerprint != "", render.Pair{"fingerprint", render.Field(r.Fingerprint)})
	pairs = addIf(pairs, r.HasResult, render.Pair{"result", p.ResultText(r.Result, int64(len(r.Result)))})
	pairs = addIf(pairs, r.Error != "", render.Pair{"error", render.Field(r.Error)})
	p.KV(title, append(pairs, extra...))
}

// ClaimAcquire is claim acquire's result: raw output is the fencing token
// (acquired), or the stored result (already done), or nothing.
type ClaimAcquire struct {
	Key    string
	Result claim.AcquireResult
	Ack    Ack
}

// acquireJSON is acquire's -o json. attempts is the record's count of
// claims, this one included; attempt is its old name, kept beside it for
// now (docs/output.md).
type acquireJSON struct {
	Key           render.Text      `json:"key"`
	Outcome       string           `json:"outcome"`
	Token         int64            `json:"token,omitempty"`
	Attempts      int64            `json:"attempts,omitempty"`
	Attempt       int64            `json:"attempt,omitempty"`
	PreviousOwner string           `json:"previous_owner,omitempty"`
	LeaseLeftMs   int64            `json:"lease_left_ms,omitempty"`
	Record        *claimRecordJSON `json:"record,omitempty"`
	Ack
}

func (v ClaimAcquire) JSON() any {
	res := v.Result
	return acquireJSON{Key: render.Text(v.Key), Outcome: string(res.Outcome), Token: res.Token, Attempts: res.Attempt, Attempt: res.Attempt,
		PreviousOwner: res.PreviousOwner, LeaseLeftMs: res.LeaseLeftMs, Record: claimJSON(res.Record), Ack: v.Ack}
}

func (v ClaimAcquire) Table(p *render.Printer) error {
	claimKV(p, "claim acquire "+render.Field(v.Key)+": "+string(v.Result.Outcome), v.Result.Record, v.Ack.Pairs()...)
	return nil
}

func (v ClaimAcquire) Raw(p *render.Printer) error {
	switch res := v.Result; {
	case res.Acquired():
		p.Line("%d", res.Token)
	case res.Outcome == claim.Done:
		fmt.Fprint(p.Out, res.Record.Result)
	}
	return nil
}

// ClaimStep is the outcome of claim renew, complete, fail or release:
// Outcome is the raw word (renewed, COMPLETED, FAILED, RELEASED); a
// renewal adds the lease it granted (raw: "renewed", a tab, its ms).
type ClaimStep struct {
	Verb    string
	Key     string
	Outcome string
	Record  claim.Record
	Ack     Ack
}

func (v ClaimStep) renewed() bool { return v.Verb == "renew" }

func (v ClaimStep) JSON() any {
	r := v.Record
	j := map[string]any{"key": render.Text(v.Key), "verb": v.Verb, "outcome": v.Outcome, "record": claimJSON(r)}
	if v.renewed() {
		j["lease_ms"], j["lease_until_ms"], j["lease_until"] = r.LeaseMs, r.LeaseUntil, r.LeaseUntil
	}
	if v.Ack.ReplicasAcked != nil {
		j["replicas_acked"] = *v.Ack.ReplicasAcked
	}
	if v.Ack.LocalAOF != nil {
		j["local_aof_fsynced"] = *v.Ack.LocalAOF
	}
	return j
}

func (v ClaimStep) Table(p *render.Printer) error {
	pairs := v.Ack.Pairs()
	if v.renewed() {
		pairs = append([]render.Pair{{"lease", p.MsDuration(v.Record.LeaseMs)}}, pairs...)
	}
	claimKV(p, "claim "+v.Verb+" "+render.Field(v.Key)+": "+v.Outcome, v.Record, pairs...)
	return nil
}

func (v ClaimStep) Raw(p *render.Printer) error {
	if v.renewed() {
		p.Line("%s\t%d", v.Outcome, v.Record.LeaseMs)
	} else {
		p.Line("%s", v.Outcome)
	}
	return nil
}

// ClaimRun is claim run's report: -o json prints it whole, the command's
// stdout in it; the other forms streamed that stdout and print nothing
// more, but a replay prints the stored output (and tells a person so).
type ClaimRun struct {
	Key             render.Text `json:"key"`
	Outcome         string      `json:"outcome"` // ran, replayed, busy, mismatch, exhausted, lost, unacknowledged
	Ran             bool        `json:"ran"`
	ExitCode        int         `json:"exit_code"`
	Token           int64       `json:"token,omitempty"`
	Attempts        int64       `json:"attempts,omitempty"` // the claim's count of claims, this run's included
	Attempt         int64       `json:"attempt,omitempty"`  // attempts' old name, kept for now (docs/output.md)
	Recorded        string      `json:"recorded,omitempty"` // COMPLETED or FAILED
	Output          render.Text `json:"output"`
	OutputTruncated bool        `json:"output_truncated,omitempty"`
	Error           string      `json:"error,omitempty"`
	Unrecorded      string      `json:"unrecorded,omitempty"` // why the outcome of a run could not be recorded
	// With --wait-replicas: the fewest replicas that acknowledged a write
	// of this run (the claim, and the outcome when it ran), and why the
	// outcome stands unacknowledged when it does.
	Ack
	Unacknowledged string `json:"unacknowledged,omitempty"`
	Interrupted    string `json:"interrupted,omitempty"` // the signal forwarded to the command
	ReplayedToken  int64  `json:"-"`                     // the token that completed a replayed key
}

func (v ClaimRun) JSON() any { return v }

func (v ClaimRun) Table(p *render.Printer) error { return v.Raw(p) }

func (v ClaimRun) Raw(p *render.Printer) error {
	if v.Outcome != "replayed" {
		return nil
	}
	fmt.Fprint(p.Out, v.Output)
	if p.TTY && v.Output != "" && !strings.HasSuffix(string(v.Output), "\n") {
		fmt.Fprintln(p.Out) // the terminal's next line, not the notice's, starts after it
	}
	if p.Human() || p.ErrTTY { // a person reads it: say what happened
		p.Status("idmpctl: replayed: the command did not run (%s completed it, token %d)", render.Field(string(v.Key)), v.ReplayedToken)
	}
	return nil
}
