// Package progress draws one self-updating status line on a terminal for
// long work (xadd --batch, inspect --match, purge):
//
//	xadd --batch: 120,345 lines  48.2k lines/s  [=======>       ] 37%  ETA 0:12
//	inspect --match: 1,204,000 keys  310.5k keys/s  0:04 elapsed
//	purge --match: 1,204,000 keys  310.5k keys/s  3,120 deleted  0:04 elapsed
//
// A percentage, a bar and an ETA appear when the size of the input is
// known (a regular file's bytes), the elapsed time otherwise.
//
// It is drawn by hand on golang.org/x/term (terminal width) rather than by
// a progress-bar library. Not for their init: measured on 2026-11-29 on
// top of idmpctl's own imports (GODEBUG=inittrace=1, medians of 41 runs),
// mpb v8.16.2 adds 0.00–0.12 ms, cheggaaa/pb v3.3.0 -0.02–0.10 ms and
// schollz/progressbar v3.19.1 0.02–0.19 ms (docs/speed.md; the 0.7–2 ms
// once given here was over a main importing only os). But each redraws
// from a ticker goroutine, where a Bar draws only inside its calls (so a
// caller's Clear and write are never raced by a redraw), and each measures
// one counter, where a Bar counts items against an input's bytes.
package progress

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// Options describe the work.
type Options struct {
	Label string // what is running, e.g. "xadd --batch"; shown as "Label: "
	Unit  string // what is counted, plural, e.g. "lines", "keys"
	// Total is the size of the input when known (a regular file's bytes),
	// against which Set's done is measured; 0 when unknown.
	Total int64
}

const (
	// redrawEvery bounds redraws to about ten a second.
	redrawEvery = 100 * time.Millisecond
	// firstDrawAfter keeps quick runs silent: nothing is drawn before.
	firstDrawAfter = 250 * time.Millisecond
	// rateWindow is how far back the rate (and so the ETA) looks.
	rateWindow = 5 * time.Second
	// maxETA is the longest ETA shown; past it (a stall) none is.
	maxETA = 100 * time.Hour
	// fallbackWidth is used when the terminal's width cannot be read.
	fallbackWidth = 80
)

// Bar is a progress line. Its methods are safe for concurrent use (a batch
// counts lines in the goroutine that prints results while a retry warning,
// which clears the line, comes from another). A nil Bar, which New returns
// when disabled, does nothing. It draws only when Set or Add is called,
// never from a goroutine of its own.
//
// The line goes to w alone: when other output reaches the same terminal
// while the bar is shown (stdout on the same terminal, a warning on
// stderr), call Clear first, or enable the bar only when stdout is not a
// terminal.
type Bar struct {
	mu       sync.Mutex
	w        io.Writer
	opts     Options
	now      func() time.Time
	width    func() int
	start    time.Time
	lastDraw time.Time
	shown    int // columns of the line on the terminal; 0: none
	done     bool
	count    int64
	bytes    int64
	detail   string
	samples  []sample // drawn states within rateWindow, oldest first
	buf      []byte
}

type sample struct {
	at           time.Time
	count, bytes int64
}

// New returns a Bar that draws on w when enabled: the caller decides that
// (stderr is a terminal, the output is not -o json). Disabled, it returns
// nil, a Bar that writes nothing at all. The width is read from w when it
// is a terminal (on each redraw, so a resize is followed), else 80 columns.
func New(w io.Writer, enabled bool, opts Options) *Bar {
	if !enabled {
		return nil
	}
	return newBar(w, opts, time.Now, terminalWidth(w))
}

func newBar(w io.Writer, opts Options, now func() time.Time, width func() int) *Bar {
	start := now()
	return &Bar{w: w, opts: opts, now: now, width: width, start: start,
		samples: []sample{{at: start}}}
}

func terminalWidth(w io.Writer) func() int {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return func() int { return fallbackWidth }
	}
	fd := int(f.Fd())
	return func() int {
		if cols, _, err := term.GetSize(fd); err == nil && cols > 0 {
			return cols
		}
		return fallbackWidth
	}
}

// Set records the work done so far: count items (lines, keys) and, when
// Options.Total is set, done bytes of it; it redraws if the last redraw is
// at least 100 ms old.
func (b *Bar) Set(count, done int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.count, b.bytes = count, done
	b.maybeDraw()
}

// Add records count more items and done more bytes, as Set does.
func (b *Bar) Add(count, done int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.count += count
	b.bytes += done
	b.maybeDraw()
}

// Detail sets a short text shown after the rate, for a second count the
// work keeps ("3,120 deleted"); "" removes it. The next Set or Add draws it.
func (b *Bar) Detail(s string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.detail = s
	b.mu.Unlock()
}

// Clear erases the line (carriage return, spaces over it, carriage
// return), so that other output can be written to the terminal; the next
// Set or Add draws it again.
func (b *Bar) Clear() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clear()
}

func (b *Bar) clear() {
	if b.shown == 0 {
		return
	}
	b.buf = append(b.buf[:0], '\r')
	b.buf = appendSpaces(b.buf, b.shown)
	b.buf = append(b.buf, '\r')
	_, _ = b.w.Write(b.buf)
	b.shown = 0
	b.lastDraw = time.Time{}
}

// Finish erases the line, so that a following status line prints cleanly,
// and stops the Bar: later calls do nothing. It may be called more than
// once (defer it, and call it before printing a summary).
func (b *Bar) Finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clear()
	b.done = true
}

func (b *Bar) maybeDraw() {
	now := b.now()
	if now.Sub(b.start) < firstDrawAfter || (!b.lastDraw.IsZero() && now.Sub(b.lastDraw) < redrawEvery) {
		return
	}
	b.lastDraw = now
	b.record(now)
	// Spaces rather than an erase sequence (ESC [K) over the rest of the
	// previous line: a Windows console without VT processing shows ESC
	// sequences as text.
	width := b.width()
	line := b.line(now, width)
	cols := utf8.RuneCountInString(line)
	b.buf = append(b.buf[:0], '\r')
	b.buf = append(b.buf, line...)
	b.buf = appendSpaces(b.buf, min(b.shown, width-1)-cols)
	_, _ = b.w.Write(b.buf)
	b.shown = max(cols, 1)
}

func appendSpaces(buf []byte, n int) []byte {
	for range n {
		buf = append(buf, ' ')
	}
	return buf
}

// record adds the current state to the rate window and drops the states
// that fell out of it (keeping one at or before its start).
func (b *Bar) record(now time.Time) {
	b.samples = append(b.samples, sample{at: now, count: b.count, bytes: b.bytes})
	drop := 0
	for drop+1 < len(b.samples) && now.Sub(b.samples[drop+1].at) >= rateWindow {
		drop++
	}
	b.samples = b.samples[drop:]
}

// rates are items and bytes per second over the window.
func (b *Bar) rates(now time.Time) (items, bytes float64) {
	ref := b.samples[0]
	dt := now.Sub(ref.at).Seconds()
	if dt <= 0 {
		return 0, 0
	}
	return float64(b.count-ref.count) / dt, float64(b.bytes-ref.bytes) / dt
}

// line is the text of the progress line, at most width-1 columns (writing
// the last column makes some terminals wrap). Columns are counted as runes:
// Label and Unit are meant to be ASCII.
func (b *Bar) line(now time.Time, width int) string {
	itemRate, byteRate := b.rates(now)
	var head strings.Builder
	if b.opts.Label != "" {
		head.WriteString(b.opts.Label)
		head.WriteString(": ")
	}
	head.WriteString(FormatCount(b.count))
	head.WriteString(unit(b.opts.Unit))
	head.WriteString("  ")
	head.WriteString(formatRate(itemRate))
	head.WriteString(unit(b.opts.Unit))
	head.WriteString("/s")
	if b.detail != "" {
		head.WriteString("  ")
		head.WriteString(b.detail)
	}

	var tail string
	pct := -1
	if total := b.opts.Total; total > 0 {
		pct = int(min(max(b.bytes, 0), total) * 100 / total)
		tail = strconv.Itoa(pct) + "%"
		if left := total - b.bytes; left <= 0 {
			tail += "  ETA 0:00"
		} else if secs := float64(left) / byteRate; byteRate > 0 && secs < maxETA.Seconds() {
			tail += "  ETA " + formatClock(time.Duration(secs*float64(time.Second)))
		}
	} else {
		tail = formatClock(now.Sub(b.start)) + " elapsed"
	}

	cols := width - 1
	s := head.String() + "  " + tail
	if n := utf8.RuneCountInString(s); pct >= 0 {
		// A bar of 8 to 30 cells between the rate and the percentage,
		// when there is room for it ("  [" + cells + "] ").
		if cells := min(30, cols-n-3); cells >= 8 {
			s = head.String() + "  [" + bar(cells, pct) + "] " + tail
		}
	}
	return truncate(s, cols)
}

func unit(u string) string {
	if u == "" {
		return ""
	}
	return " " + u
}

func bar(cells, pct int) string {
	full := cells * pct / 100
	var s strings.Builder
	s.WriteString(strings.Repeat("=", full))
	if full < cells {
		s.WriteByte('>')
		s.WriteString(strings.Repeat(" ", cells-full-1))
	}
	return s.String()
}

func truncate(s string, cols int) string {
	if cols <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= cols {
		return s
	}
	r := []rune(s)
	return string(r[:cols])
}

// FormatCount writes n with thousands separators, as the line shows
// counts: 1204000 -> "1,204,000".
func FormatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := ""
	if n < 0 {
		neg, s = "-", s[1:]
	}
	var out strings.Builder
	out.WriteString(neg)
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out.WriteByte(',')
		}
		out.WriteByte(c)
	}
	return out.String()
}

// formatRate writes a per-second rate in three significant figures or so:
// 7.5, 950, 48.2k, 1.3M.
func formatRate(r float64) string {
	switch {
	case r < 0:
		return "0"
	case r < 10:
		return strconv.FormatFloat(r, 'f', 1, 64)
	case r < 1e3:
		return strconv.FormatFloat(r, 'f', 0, 64)
	case r < 1e6:
		return strconv.FormatFloat(r/1e3, 'f', 1, 64) + "k"
	case r < 1e9:
		return strconv.FormatFloat(r/1e6, 'f', 1, 64) + "M"
	}
	return strconv.FormatFloat(r/1e9, 'f', 1, 64) + "G"
}

// formatClock writes a duration as m:ss, or h:mm:ss from an hour on.
func formatClock(d time.Duration) string {
	s := int64(max(d.Round(time.Second), 0) / time.Second)
	h, m, sec := s/3600, s/60%60, s%60
	two := func(n int64) string {
		if n < 10 {
			return "0" + strconv.FormatInt(n, 10)
		}
		return strconv.FormatInt(n, 10)
	}
	if h > 0 {
		return strconv.FormatInt(h, 10) + ":" + two(m) + ":" + two(sec)
	}
	return strconv.FormatInt(m, 10) + ":" + two(sec)
}
