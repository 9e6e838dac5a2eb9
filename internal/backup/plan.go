package backup

import (
	"errors"
	"fmt"
	"io"
)

// Plan is a backup file as read whole before anything is restored: what
// restore decides from (the keys purge kept, whether the file was closed,
// where it stops being valid).
type Plan struct {
	Header  Header
	Records int64             // record lines before BadLine
	Kept    map[string]string // keys purge kept (or whose fate it did not learn), and why
	BadLine *LineError        // the first line that is not valid; nil: none
	End     *Entry            // the end line, when the file has one
}

// ReadPlan reads the whole file. An invalid line past the first is the
// plan's BadLine, not an error: the records before it can be restored. An
// end line whose counts are not the file's is the error.
func ReadPlan(r io.Reader) (*Plan, error) {
	plan := &Plan{Kept: map[string]string{}}
	var kept int64
	err := Read(r, func(e Entry) error {
		switch {
		case e.Header != nil:
			plan.Header = *e.Header
		case e.Record != nil:
			plan.Records++
		case e.Kept != "":
			plan.Kept[e.KeptOf] = e.Kept
			kept++
		case e.End && plan.End != nil:
			return &LineError{Line: e.Line, Why: "a second end line"}
		case e.End:
			plan.End = &e
		}
		return nil
	})
	var le *LineError
	switch {
	case errors.As(err, &le) && le.Line > 1:
		plan.BadLine = le
	case err != nil:
		return nil, err
	}
	// Lines lost or added whole (a copy, an edit) leave no bad line: only the
	// counts tell, and a lost kept line would put back what purge kept.
	if e := plan.End; e != nil && (e.Records != plan.Records || e.KeptCount != kept) {
		return nil, &LineError{Line: e.Line, Why: fmt.Sprintf("the end line's counts (records %d, kept %d) are not the file's (records %d, kept %d): a line was lost or added since purge wrote it; nothing was restored",
			e.Records, e.KeptCount, plan.Records, kept)}
	}
	return plan, nil
}

// Complete says the file was closed by its purge and every line is valid.
func (p *Plan) Complete() bool { return p.End != nil && p.BadLine == nil }

// MissingOnly says whether key may be restored only where it is missing,
// --replace or not: its fate is unknown, or the file was cut (a killed
// purge's last chunks, interleaved across a cluster's nodes, are unmarked).
func (p *Plan) MissingOnly(key string) bool {
	_, marked := p.Kept[key]
	return marked || p.End == nil
}

// KeptByPurge says whether purge kept key after saving it (it changed, or
// was live): restore skips it.
func (p *Plan) KeptByPurge(key string) bool {
	reason, marked := p.Kept[key]
	return marked && reason != KeptUnknown
}
