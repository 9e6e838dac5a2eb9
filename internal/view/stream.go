package view

import (
	"cmp"
	"fmt"
	"strconv"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/consume"
	"github.com/idmpctl/idmpctl/internal/ops/health"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/render"
)

// Stream is a stream's view (inspect STREAM): its XINFO fields with the
// six IDMP ones, its mode, and its lints. With --watch, At is the view's
// time and Rates the adds and duplicates a second since the view before.
type Stream struct {
	Info   stream.Info
	Lints  []health.Lint
	Rates  *Rates
	At     time.Time
	Groups []consume.Group // its consumer groups, with their dead-letter streams
}

// Rates are counter deltas a second between two --watch views.
type Rates struct{ Adds, Duplicates float64 }

// streamJSON is a stream in -o json: XINFO names, mode and lints; with
// --watch, each view's time and the rates since the one before.
type streamJSON struct {
	Key  render.Text `json:"key"`
	Type string      `json:"type"`
	stream.Info
	Lints            []health.Lint   `json:"lints"`
	Groups           []consume.Group `json:"groups,omitempty"`
	Time             string          `json:"time,omitempty"`
	AddsPerSec       *float64        `json:"adds_per_s,omitempty"`
	DuplicatesPerSec *float64        `json:"duplicates_per_s,omitempty"`
}

func (v Stream) JSON() any {
	info, at, r := v.Info, v.At, v.Rates
	j := streamJSON{Key: render.Text(info.Stream), Type: "stream", Info: info, Lints: append([]health.Lint{}, v.Lints...), Groups: v.Groups}
	if !at.IsZero() {
		j.Time = at.UTC().Format(time.RFC3339Nano)
	}
	if r != nil {
		j.AddsPerSec, j.DuplicatesPerSec = &r.Adds, &r.Duplicates
	}
	return j
}

func (v Stream) Raw(p *render.Printer) error { return v.Table(p) }

func (v Stream) Table(p *render.Printer) error {
	info, at, r, lints := v.Info, v.At, v.Rates, v.Lints
	n := func(v int64) string { return p.CountText(v) }
	duration, maxsize := settings(p, info.IDMPDuration, info.IDMPMaxSize)
	pairs := addIf(nil, !at.IsZero() && !p.Human(), render.Pair{"time", at.UTC().Format(time.RFC3339Nano)})
	pairs = append(pairs, []render.Pair{
		{"key", render.Field(info.Stream)}, {"type", "stream"}, {"mode", info.Mode},
		{"length", n(info.Length)}, {"first-entry-id", info.FirstID}, {"last-entry-id", info.LastID},
		{"last-generated-id", info.LastGeneratedID}, {"entries-added", n(info.EntriesAdded)},
		{"idmp-duration", duration}, {"idmp-maxsize", maxsize},
		{"pids-tracked", n(info.PIDsTracked)}, {"iids-tracked", n(info.IIDsTracked)},
		{"iids-added", n(info.IIDsAdded)}, {"iids-duplicates", n(info.IIDsDuplicates)},
	}...)
	if r != nil {
		pairs = append(pairs, render.Pair{"adds/s", fmt.Sprintf("%.1f", r.Adds)}, render.Pair{"duplicates/s", fmt.Sprintf("%.1f", r.Duplicates)})
	}
	for _, g := range v.Groups {
		// Raw: "group<TAB>name<TAB>pending<TAB>consumers<TAB>last-delivered-id<TAB>dead-letter<TAB>its length".
		dead := "-"
		if g.DeadLetterLength != nil {
			dead = n(*g.DeadLetterLength)
		}
		label, value := "group", fmt.Sprintf("%s\t%d\t%d\t%s\t%s\t%s", g.Name, g.Pending, g.Consumers, g.LastDeliveredID, cmp.Or(g.DeadLetter, "-"), dead)
		if p.Human() {
			label, value = "group "+render.Field(g.Name), fmt.Sprintf("%s pending, %s", n(g.Pending), render.N(g.Consumers, "consumer"))
			if g.DeadLetter != "" {
				value += fmt.Sprintf(", %s dead-lettered in %s", dead, render.Field(g.DeadLetter))
			}
		}
		pairs = append(pairs, render.Pair{label, value})
	}
	if p.Human() {
		for _, pid := range info.PIDs {
			pairs = append(pairs, render.Pair{"  pid " + strconv.Quote(pid.PID), render.N(pid.IIDs, "iid")})
		}
	}
	title := render.Field(info.Stream)
	if !at.IsZero() {
		title += "  " + p.Dim(at.Local().Format("15:04:05"))
	}
	p.View(title, append(render.Rows(pairs), lintRows(p, lints)...))
	return nil
}

// settings are IDMP-DURATION and IDMP-MAXSIZE: raw numbers, or for a
// person with their units (seconds, iids per producer).
func settings(p *render.Printer, duration, maxsize int64) (string, string) {
	d := strconv.FormatInt(duration, 10)
	if p.Human() {
		return d + "s", render.N(maxsize, "iid") + " per pid"
	}
	return d, strconv.FormatInt(maxsize, 10)
}

// lintRows are lints as rows of a key-value view: "health" rows (warnings
// marked) for a person, wrapped rather than cut (each says what to do),
// and "lint<TAB>code<TAB>message" otherwise.
func lintRows(p *render.Printer, lints []health.Lint) []render.Row {
	var rows []render.Row
	for _, l := range lints {
		if !p.Human() {
			rows = append(rows, render.Row{Label: "lint", Value: l.Code + "\t" + l.Message})
			continue
		}
		v := p.Dim(l.Message)
		if l.Level == "warn" {
			v = p.Warn("! " + l.Message)
		}
		rows = append(rows, render.Row{Label: "health", Value: v, Fit: render.Wrap})
	}
	return rows
}
