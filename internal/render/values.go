package render

import (
	"bufio"
	"strconv"
	"time"
)

// Values as each form shows them: raw values in raw output, human ones
// ("3m ago", "4m59s", "1,000,000") in a view (-o table).

// CountText is a count: plain in raw output, with thousands separators in
// a view.
func (p *Printer) CountText(n int64) string {
	if p.Human() {
		return Count(n)
	}
	return strconv.FormatInt(n, 10)
}

// MsDuration is milliseconds in raw output, "4m59s" in a view (a negative
// one "expired 3s ago").
func (p *Printer) MsDuration(ms int64) string {
	if !p.Human() {
		return strconv.FormatInt(ms, 10)
	}
	if ms < 0 {
		return p.Bad("expired " + Ms(-ms) + " ago")
	}
	return Ms(ms)
}

// MsTime is a time in server milliseconds: RFC 3339 in raw output, "3m
// ago" (or "in 5m") against nowMs in a view; "" for none (ms <= 0).
func (p *Printer) MsTime(ms, nowMs int64) string {
	if ms <= 0 {
		return ""
	}
	t := time.UnixMilli(ms).UTC()
	if !p.Human() || nowMs <= 0 {
		return t.Format(time.RFC3339Nano)
	}
	if d := nowMs - ms; d < 0 {
		return "in " + Ms(-d)
	}
	return Ms(nowMs-ms) + " ago"
}

// TTLText is a key's PTTL: milliseconds in raw output; in a view the
// duration, "none" (warned) for a key without one, "" for a key that is
// gone.
func (p *Printer) TTLText(ttl int64) string {
	switch {
	case !p.Human():
		return strconv.FormatInt(ttl, 10)
	case ttl == -1:
		return p.Warn("none")
	case ttl < 0:
		return ""
	}
	return p.MsDuration(ttl)
}

// ResultText is a stored result: in raw output its size (the bytes are -o
// json's, or claim acquire's on stdout); in a view the result itself,
// quoted when it is not printable text, wrapped by KV.
func (p *Printer) ResultText(result string, size int64) string {
	if !p.Human() || (result == "" && size > 0) {
		return N(size, "byte")
	}
	if result == "" {
		return p.Dim("(empty)")
	}
	return Field(result)
}

// BufferStream buffers Out for a stream of results (-o raw or json, not on
// a terminal): one write per result was most of the cost of a million. The
// returned func flushes and restores Out: call it before the summary.
func (p *Printer) BufferStream() (flush func()) {
	if p.TTY || p.Format == Table {
		return func() {}
	}
	out := p.Out
	bw := bufio.NewWriterSize(out, 64<<10)
	p.Out = bw
	return func() {
		_ = bw.Flush()
		p.Out = out
	}
}
