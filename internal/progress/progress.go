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
// Drawn by hand rather than by a progress-bar library: not for their init
// (mpb, cheggaaa/pb, schollz/progressbar add at most 0.2 ms, docs/speed.md),
// but each redraws from a ticker goroutine, which would race a caller's
// Clear and write, and measures one counter, not items against bytes.
package progress

import (
	"fmt"
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
	Total int64  // the input's size when known (a file's bytes), for Set's done; else 0
}

const (
	redrawEvery    = 100 * time.Millisecond // about ten redraws a second
	firstDrawAfter = 250 * time.Millisecond // quick runs stay silent
	rateWindow     = 5 * time.Second        // how far back the rate (and ETA) looks
	maxETA         = 100 * time.Hour        // past it (a stall), no ETA
	fallbackWidth  = 80                     // when the terminal's width cannot be read
)

// Bar is a progress line, safe for concurrent use (a retry warning clears
// it from another goroutine); a nil Bar does nothing. It draws only inside
// Set: before other output reaches its terminal, call Clear.
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

// New returns a Bar that draws on w when enabled (stderr is a terminal, the
// output is not -o json), else nil. The width is read from w at each
// redraw (a resize is followed), else 80 columns.
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
	fd := -1 // not a file: GetSize fails
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		fd = int(f.Fd())
	}
	return func() int {
		if cols, _, err := term.GetSize(fd); err == nil && cols > 0 {
			return cols
		}
		return fallbackWidth
	}
}

// Set records the work done so far: count items (lines, keys) and, when
// Options.Total is set, done bytes of it; it redraws at most every 100 ms.
func (b *Bar) Set(count, done int64) {
	b.locked(func() {
		if !b.done {
			b.count, b.bytes = count, done
			b.maybeDraw()
		}
	})
}

// locked runs f holding the lock; a nil Bar does nothing.
func (b *Bar) locked(f func()) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	f()
}

// Detail sets a short text shown after the rate, for a second count the
// work keeps ("3,120 deleted"); "" removes it. The next Set draws it.
func (b *Bar) Detail(s string) { b.locked(func() { b.detail = s }) }

// Clear erases the line (carriage return, spaces over it, carriage
// return), so that other output can be written to the terminal; the next
// Set draws it again.
func (b *Bar) Clear() { b.locked(b.clear) }

func (b *Bar) clear() {
	if b.shown == 0 {
		return
	}
	b.buf = append(append(b.buf[:0], '\r'), strings.Repeat(" ", b.shown)+"\r"...)
	_, _ = b.w.Write(b.buf)
	b.shown = 0
	b.lastDraw = time.Time{}
}

// Finish erases the line, so that a following status line prints cleanly,
// and stops the Bar: later calls do nothing. It may be called more than
// once (defer it, and call it before printing a summary).
func (b *Bar) Finish() {
	b.locked(func() {
		b.clear()
		b.done = true
	})
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
	b.buf = append(b.buf, strings.Repeat(" ", max(min(b.shown, width-1)-cols, 0))...)
	_, _ = b.w.Write(b.buf)
	b.shown = max(cols, 1)
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
	head := FormatCount(b.count) + unit(b.opts.Unit) + "  " + formatRate(itemRate) + unit(b.opts.Unit) + "/s"
	if b.opts.Label != "" {
		head = b.opts.Label + ": " + head
	}
	if b.detail != "" {
		head += "  " + b.detail
	}

	cols := width - 1
	s := head + "  " + formatClock(now.Sub(b.start)) + " elapsed"
	if total := b.opts.Total; total > 0 {
		pct := int(min(max(b.bytes, 0), total) * 100 / total)
		tail := strconv.Itoa(pct) + "%"
		if left := total - b.bytes; left <= 0 {
			tail += "  ETA 0:00"
		} else if secs := float64(left) / byteRate; byteRate > 0 && secs < maxETA.Seconds() {
			tail += "  ETA " + formatClock(time.Duration(secs*float64(time.Second)))
		}
		s = head + "  " + tail
		// A bar of 8 to 30 cells between the rate and the percentage,
		// when there is room for it ("  [" + cells + "] ").
		if cells := min(30, cols-utf8.RuneCountInString(s)-3); cells >= 8 {
			s = head + "  [" + bar(cells, pct) + "] " + tail
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
	if full == cells {
		return strings.Repeat("=", full)
	}
	return strings.Repeat("=", full) + ">" + strings.Repeat(" ", cells-full-1)
}

func truncate(s string, cols int) string {
	if r := []rune(s); len(r) > cols {
		return string(r[:max(cols, 0)])
	}
	return s
}

// FormatCount writes n with thousands separators, as the line shows
// counts: 1204000 -> "1,204,000".
func FormatCount(n int64) string {
	s, sign := strconv.FormatInt(n, 10), 0
	if n < 0 {
		sign = 1
	}
	for i := len(s) - 3; i > sign; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
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
	if h := s / 3600; h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
