package view

import (
	"cmp"
	"io"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/render"
)

// Add is one add of xadd: its entry ID, and whether it was a duplicate.
type Add struct {
	Stream     string
	PID        string // --pid
	Auto       bool
	Durability redisconn.Durability
	Result     stream.AddResult
	Retried    bool
}

type addJSON struct {
	Stream         render.Text `json:"stream"`
	ID             string      `json:"id"`
	PID            render.Text `json:"pid"`
	IID            render.Text `json:"iid,omitempty"`
	Auto           bool        `json:"auto,omitempty"`
	Duplicate      bool        `json:"duplicate"`
	OriginalExists *bool       `json:"original_exists,omitempty"`
	Mode           string      `json:"mode"`
	Line           int         `json:"line,omitempty"`
	Retried        bool        `json:"retried,omitempty"`
	ReplyLost      bool        `json:"reply_lost,omitempty"` // committed, its reply lost (native batches): id unknown
	Ack
}

func (a *Add) json(line int) addJSON {
	r := a.Result
	j := addJSON{Stream: render.Text(a.Stream), ID: r.ID, PID: render.Text(a.PID), IID: render.Text(r.IID), Auto: a.Auto,
		Duplicate: r.Duplicate, Mode: r.Mode.String(), Line: line, Retried: a.Retried,
		Ack: AckOf(a.Durability, r.Ack)}
	if r.Duplicate {
		j.OriginalExists = &r.OriginalExists
	}
	return j
}

func (a *Add) JSON() any { return a.json(0) }

func (a *Add) Table(p *render.Printer) error {
	res := a.Result
	iid := res.IID
	if a.Auto {
		iid = cmp.Or(res.IID, "-") + " (derived: IDMPAUTO)"
	}
	p.KV("xadd", append([]render.Pair{
		{"stream", a.Stream}, {"id", res.ID}, {"pid", a.PID}, {"iid", iid},
		{"result", addOutcome(p, res)}, {"mode", res.Mode.String()},
	}, AckOf(a.Durability, res.Ack).Pairs()...))
	return nil
}

func (a *Add) Raw(p *render.Printer) error {
	p.Line("%s", a.Result.ID)
	return nil
}

func addOutcome(p *render.Printer, r stream.AddResult) string {
	switch {
	case !r.Duplicate:
		return p.Good("added")
	case r.OriginalExists:
		return p.Warn("duplicate of " + r.ID + ": nothing written")
	}
	return p.Warn("duplicate of a deleted entry (" + r.ID + "): nothing written")
}

// BatchLine is one line of xadd --batch: "ID<TAB>added|duplicate" (or
// "-<TAB>committed" for a line whose reply was lost), in a table too, or
// its add in -o json. A batch prints millions: one BatchLine is set for
// each result (Set) and shown again, and its raw line makes no string.
type BatchLine struct {
	Add
	line      int
	replyLost bool
	pid       string // the line's own pid, when it has one
}

// Set makes the view r's.
func (b *BatchLine) Set(r stream.BatchResult) {
	b.Result, b.Retried, b.line, b.replyLost, b.pid = r.AddResult, r.Retried, int(r.Line), r.ReplyLost, r.PID
}

func (b *BatchLine) JSON() any {
	j := b.json(b.line)
	j.ReplyLost = b.replyLost
	if b.pid != "" {
		j.PID = render.Text(b.pid) // the line's own
	}
	return j
}

func (b *BatchLine) Table(p *render.Printer) error { return b.Raw(p) }

func (b *BatchLine) Raw(p *render.Printer) error {
	outcome := "added"
	if b.Result.Duplicate {
		outcome = "duplicate"
	}
	id := b.Result.ID
	if b.replyLost {
		id, outcome = "-", "committed" // its reply was lost and not kept (native)
	}
	// A line per add, millions of them: no fmt, nor a string made a line.
	_, _ = io.WriteString(p.Out, id)
	_, _ = io.WriteString(p.Out, "\t")
	_, _ = io.WriteString(p.Out, outcome)
	_, _ = io.WriteString(p.Out, "\n")
	return nil
}
