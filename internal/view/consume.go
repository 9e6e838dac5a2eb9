package view

import (
	"fmt"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/ops/consume"
	"github.com/idmpctl/idmpctl/internal/render"
)

// ConsumeEntry is one entry's outcome in consume: a line per entry, raw
// "ID<TAB>outcome<TAB>attempt<TAB>exit code or -<TAB>ms", for a person
// the same with the outcome marked, or one JSON object.
type ConsumeEntry struct{ consume.Result }

type consumeEntryJSON struct {
	ID           string `json:"id"`
	Outcome      string `json:"outcome"`
	Attempts     int64  `json:"attempts"`            // of the entry's claim, this one included
	ExitCode     *int   `json:"exit_code,omitempty"` // the handler ran
	DurationMs   int64  `json:"duration_ms"`
	Durable      *bool  `json:"durable,omitempty"` // completed
	DeadLetterID string `json:"dead_letter_id,omitempty"`
	Error        string `json:"error,omitempty"`
}

func (v ConsumeEntry) JSON() any {
	r := v.Result
	j := consumeEntryJSON{ID: r.ID, Outcome: string(r.Outcome), Attempts: r.Attempt, DurationMs: r.Duration.Milliseconds(),
		DeadLetterID: r.DeadLetterID, Error: r.Error}
	if r.ExitCode >= 0 {
		j.ExitCode = &r.ExitCode
	}
	if r.Outcome == consume.Completed {
		j.Durable = &r.Durable
	}
	return j
}

func (v ConsumeEntry) Raw(p *render.Printer) error {
	r := v.Result
	p.Line("%s\t%s\t%d\t%s\t%d", r.ID, r.Outcome, r.Attempt, v.exit(), r.Duration.Milliseconds())
	return nil
}

func (v ConsumeEntry) Table(p *render.Printer) error {
	r := v.Result
	outcome := fmt.Sprintf("%-13s", r.Outcome)
	switch r.Outcome {
	case consume.Completed, consume.Skipped:
		outcome = p.Good(outcome)
	case consume.Failed:
		outcome = p.Warn(outcome)
	default:
		outcome = p.Bad(outcome)
	}
	parts := []string{r.ID, outcome, fmt.Sprintf("attempt %d", r.Attempt), fmt.Sprintf("exit %-3s", v.exit()), render.Duration(r.Duration)}
	parts = addIf(parts, r.DeadLetterID != "", "-> "+r.DeadLetterID)
	parts = addIf(parts, r.Error != "" && r.Outcome != consume.Failed, p.Dim(render.Field(r.Error)))
	p.Line("%s", p.Parts(2, parts...))
	return nil
}

func (v ConsumeEntry) exit() string {
	if v.ExitCode < 0 {
		return "-"
	}
	return strconv.Itoa(v.ExitCode)
}
