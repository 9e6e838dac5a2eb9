package view

// Records of any format (internal/records), as inspect KEY shows one, and
// as scans and purges list them.

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/render"
)

// Shown is the record as printed: stored secrets (Authorization headers,
// cookies, API keys, passwords, tokens) redacted unless --show-secrets.
func Shown(r records.Record, showSecrets bool) records.Record {
	if showSecrets {
		return r
	}
	return records.Redact(r)
}

// RecordJSON is a record in -o json, with the derived times. Its fields
// hide the record's: stored JSON objects and arrays (a middleware's
// request and response) are nested as they are, not as strings of JSON.
type RecordJSON struct {
	Key render.Text `json:"key"` // first, as the record's, which it hides
	records.Record
	// The timestamps under _ms names; the old names stay beside them as
	// aliases for now (docs/output.md).
	CreatedAt     int64                      `json:"created_ms,omitempty"`
	UpdatedAt     int64                      `json:"updated_ms,omitempty"`
	LeaseUntilAt  int64                      `json:"lease_until_ms,omitempty"`
	DeadlineAt    int64                      `json:"deadline_ms,omitempty"`
	ExpiresAt     int64                      `json:"expires_ms,omitempty"`
	NowAt         int64                      `json:"now_ms,omitempty"`
	Fields        map[string]json.RawMessage `json:"fields,omitempty"`
	AgeMs         *int64                     `json:"age_ms,omitempty"`
	AgeUnknown    bool                       `json:"age_unknown,omitempty"` // a record that carries no time
	LeaseLeftMs   *int64                     `json:"lease_left_ms,omitempty"`
	ResultSummary string                     `json:"result_summary,omitempty"`
}

// nestedFields is a record's fields for JSON: a value that is a JSON
// object or array is nested as JSON, any other is a string.
func nestedFields(fields map[string]string) map[string]json.RawMessage {
	if fields == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		if t := strings.TrimSpace(v); t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
			out[k] = json.RawMessage(t)
			continue
		}
		b, _ := json.Marshal(v)
		out[k] = b
	}
	return out
}

// WithTimes adds the derived times, by the records package's rules: the
// age of the last activity, and the lease left until the earlier of lease
// and deadline (the instant the stale flag uses too).
func WithTimes(r records.Record) RecordJSON {
	j := RecordJSON{Key: render.Text(r.Key), Record: r, Fields: nestedFields(r.Fields), ResultSummary: r.ResultSummary(),
		CreatedAt: r.CreatedMs, UpdatedAt: r.UpdatedMs, LeaseUntilAt: r.LeaseUntilMs, DeadlineAt: r.DeadlineMs,
		ExpiresAt: r.ExpiresMs, NowAt: r.NowMs}
	if age, ok := r.AgeMs(); ok {
		j.AgeMs = &age
	} else {
		j.AgeUnknown = r.Recognised()
	}
	if left, ok := r.LeaseLeftMs(); ok && r.Status == records.Processing {
		j.LeaseLeftMs = &left
	}
	return j
}

// AgeText is the AGE column: a duration, "unknown" for a record that
// carries no time, empty for keys that are no record.
func AgeText(p *render.Printer, j RecordJSON) string {
	switch {
	case j.AgeMs != nil:
		return p.MsDuration(*j.AgeMs)
	case j.AgeUnknown && p.Human():
		return p.Dim("unknown")
	}
	return ""
}

// Record is a key's view (inspect KEY): one record of any format, with
// its derived times; raw lines name their units.
type Record struct{ records.Record }

func (v Record) JSON() any { return WithTimes(v.Record) }

func (v Record) Raw(p *render.Printer) error { return v.Table(p) }

func (v Record) Table(p *render.Printer) error {
	r := v.Record
	j := WithTimes(r)
	pairs := []render.Pair{{"key", render.Field(r.Key)}, {"format", string(r.Format)}, {"type", r.Type}, {"status", StatusText(p, r)}}
	opt := func(label, v string) {
		if v != "" {
			pairs = append(pairs, render.Pair{label, v})
		}
	}
	if r.RawStatus != "" && r.RawStatus != string(r.Status) {
		opt("raw-status", render.Field(r.RawStatus))
	}
	opt("owner", render.Field(r.Owner))
	if r.Token > 0 {
		opt("token", strconv.FormatInt(r.Token, 10))
	}
	if r.Attempts > 0 {
		opt("attempts", p.CountText(r.Attempts))
	}
	opt("guards", render.Field(r.Guards))
	opt("created", p.MsTime(r.CreatedMs, r.NowMs))
	opt("updated", p.MsTime(r.UpdatedMs, r.NowMs))
	if j.AgeUnknown {
		opt("age", "unknown (the record carries no time)")
	}
	// Raw lines name their unit, as JSON does: "ttl 86388735" reads as
	// seconds to an operator.
	ms := ""
	if !p.Human() {
		ms = "-ms"
	}
	if j.LeaseLeftMs != nil {
		opt("lease-left"+ms, p.MsDuration(*j.LeaseLeftMs))
	}
	opt("expires", p.MsTime(r.ExpiresMs, r.NowMs))
	opt("ttl"+ms, p.TTLText(r.TTLms))
	opt("fingerprint", render.Field(r.Fingerprint))
	switch {
	case r.HTTPStatus > 0: // a stored HTTP response: its status and size
		opt("result", r.ResultSummary())
	case r.HasResult:
		opt("result", p.ResultText(r.Fields["result"], int64(r.ResultBytes)))
	}
	opt("error", render.Field(r.Error))
	if r.Members > 0 {
		opt("members", p.CountText(r.Members))
	}
	if len(r.Flags) > 0 {
		opt("flags", p.Warn(FlagsText(r.Flags)))
	}
	p.KV(render.Field(r.Key), pairs)
	return nil
}

func StatusText(p *render.Printer, r records.Record) string {
	s := string(r.Status)
	switch r.Status {
	case records.Completed:
		return p.Good(s)
	case records.Failed, records.Expired:
		return p.Bad(s)
	case records.Processing, records.Locked:
		return p.Warn(s)
	}
	return s
}

func FlagsText(fl []records.Flag) string {
	s := make([]string, len(fl))
	for i, f := range fl {
		s[i] = string(f)
	}
	return strings.Join(s, ",")
}
