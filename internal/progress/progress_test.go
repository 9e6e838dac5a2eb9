package progress

import (
	"bytes"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// screen is a fake terminal line discipline: it keeps every write, and the
// visible lines as a terminal shows them for \r, \n and ESC [K.
type screen struct {
	writes [][]byte
	lines  []string // completed lines
	cur    []rune
	col    int
}

func (s *screen) Write(p []byte) (int, error) {
	s.writes = append(s.writes, bytes.Clone(p))
	str := string(p)
	for len(str) > 0 {
		switch {
		case strings.HasPrefix(str, "\x1b[K"):
			s.cur = s.cur[:min(s.col, len(s.cur))]
			str = str[3:]
			continue
		case str[0] == '\r':
			s.col = 0
		case str[0] == '\n':
			s.lines = append(s.lines, strings.TrimRight(string(s.cur), " "))
			s.cur, s.col = nil, 0
		default:
			r, size := utf8.DecodeRuneInString(str)
			for len(s.cur) <= s.col {
				s.cur = append(s.cur, ' ')
			}
			s.cur[s.col] = r
			s.col++
			str = str[size:]
			continue
		}
		str = str[1:]
	}
	return len(p), nil
}

// visible is the line the cursor is on, as shown (less trailing blanks).
func (s *screen) visible() string { return strings.TrimRight(string(s.cur), " ") }

func (s *screen) all() string {
	var b strings.Builder
	for _, w := range s.writes {
		b.Write(w)
	}
	return b.String()
}

// clock is a fake clock that tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestBar(opts Options, width int) (*Bar, *screen, *clock) {
	scr := &screen{}
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return newBar(scr, opts, clk.now, func() int { return width }), scr, clk
}

func TestDisabledWritesNothing(t *testing.T) {
	var out bytes.Buffer
	b := New(&out, false, Options{Label: "xadd --batch", Unit: "lines", Total: 100})
	for i := range int64(1000) {
		b.Set(i, i)
		b.Set(i+1, i+1)
	}
	b.Clear()
	b.Finish()
	b.Finish()
	if out.Len() != 0 {
		t.Errorf("a disabled bar wrote %q", out.String())
	}
	var nilBar *Bar // what New returns when disabled: every method is safe
	nilBar.Set(1, 1)
	nilBar.Finish()
}

// TestNoGoroutine: a Bar starts no goroutine, so it writes only inside its
// calls and a caller's Clear, then write, is never raced by a redraw
// (cmd/progress.go): what the progress-bar libraries, which redraw on a
// ticker, do not give (docs/speed.md).
func TestNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	b := New(io.Discard, true, Options{Label: "xadd --batch", Unit: "lines", Total: 100})
	b.Set(1, 1)
	if n := runtime.NumGoroutine(); n != before {
		t.Errorf("%d goroutines after New and Set, %d before", n, before)
	}
	b.Finish()
}

func TestQuickRunDrawsNothing(t *testing.T) {
	b, scr, clk := newTestBar(Options{Label: "purge", Unit: "keys"}, 80)
	for i := range int64(20) {
		clk.advance(10 * time.Millisecond)
		b.Set(i*100, 0)
	}
	b.Finish()
	if len(scr.writes) != 0 {
		t.Errorf("a run shorter than %v drew %q", firstDrawAfter, scr.all())
	}
}

func TestKnownTotal(t *testing.T) {
	const total = 10_000_000
	b, scr, clk := newTestBar(Options{Label: "xadd --batch", Unit: "lines", Total: total}, 120)
	// 48,000 lines and 400 KB a second, in steps of 100 ms, for 10 s.
	var lines, done int64
	for range 100 {
		clk.advance(100 * time.Millisecond)
		lines += 4800
		done += 40_000
		b.Set(lines, done)
	}
	// 4 MB of 10 MB: 40%, 6 MB left at 400 KB/s: 15 s.
	want := "xadd --batch: 480,000 lines  48.0k lines/s  [============>                 ] 40%  ETA 0:15"
	if got := scr.visible(); got != want {
		t.Errorf("shown:\n%q\nwant:\n%q", got, want)
	}
	for _, w := range scr.writes {
		if !strings.HasPrefix(string(w), "\r") || strings.ContainsAny(string(w), "\n\x1b") {
			t.Errorf("a redraw is not one line over the last: %q", w)
		}
	}
	b.Finish()
	last := scr.writes[len(scr.writes)-1]
	if !regexp.MustCompile(`^\r {90,}\r$`).Match(last) {
		t.Errorf("output does not end by clearing the line: %q", last)
	}
	if scr.visible() != "" {
		t.Errorf("after Finish the line shows %q", scr.visible())
	}
	n := len(scr.writes)
	b.Set(lines+1, done+1)
	b.Finish()
	if len(scr.writes) != n {
		t.Errorf("a finished bar wrote %q", scr.writes[n:])
	}
}

func TestAtMostTenRedrawsASecond(t *testing.T) {
	b, scr, clk := newTestBar(Options{Unit: "keys"}, 80)
	for i := range int64(2000) {
		clk.advance(time.Millisecond)
		b.Set(i, 0)
	}
	// 2 s less the first 250 ms, one redraw per 100 ms.
	if n := len(scr.writes); n < 17 || n > 18 {
		t.Errorf("%d redraws in 2 s, want 18", n)
	}
}

func TestRateFollowsChanges(t *testing.T) {
	b, scr, clk := newTestBar(Options{Unit: "keys"}, 80)
	var keys int64
	step := func(perTick int64, d time.Duration) {
		for end := clk.t.Add(d); clk.t.Before(end); {
			clk.advance(100 * time.Millisecond)
			keys += perTick
			b.Set(keys, 0)
		}
	}
	step(1000, 20*time.Second) // 10k keys/s
	if !strings.Contains(scr.visible(), "  10.0k keys/s  ") {
		t.Errorf("at 10k/s: %q", scr.visible())
	}
	step(100, 10*time.Second) // then 1k keys/s: the window has forgotten the fast part
	if !strings.Contains(scr.visible(), "  1.0k keys/s  ") {
		t.Errorf("at 1k/s: %q", scr.visible())
	}
	if want := "210,000 keys  1.0k keys/s  0:30 elapsed"; scr.visible() != want {
		t.Errorf("shown %q, want %q", scr.visible(), want)
	}
}

func TestUnknownTotal(t *testing.T) {
	b, scr, clk := newTestBar(Options{Label: "inspect --match", Unit: "keys"}, 80)
	for i := range int64(70) {
		clk.advance(time.Second)
		b.Set((i+1)*1000, 0)
	}
	want := "inspect --match: 70,000 keys  1.0k keys/s  1:10 elapsed"
	if got := scr.visible(); got != want {
		t.Errorf("shown %q, want %q", got, want)
	}
	if strings.Contains(scr.all(), "ETA") || strings.Contains(scr.all(), "%") {
		t.Errorf("no total, yet a percentage or ETA: %q", scr.all())
	}
}

func TestFitsTheWidth(t *testing.T) {
	for _, width := range []int{20, 40, 60, 79, 80, 200} {
		b, scr, clk := newTestBar(Options{Label: "xadd --batch", Unit: "lines", Total: 1 << 40}, width)
		for i := range int64(50) {
			clk.advance(time.Second)
			b.Set(i*123456789, i<<30)
		}
		for _, w := range scr.writes {
			line := strings.TrimPrefix(string(w), "\r")
			if n := utf8.RuneCountInString(line); n >= width {
				t.Errorf("width %d: a %d-column line %q", width, n, line)
			}
		}
		hasBar := strings.Contains(scr.visible(), "[")
		if wantBar := width == 200; width == 40 && hasBar || width == 200 && !hasBar {
			t.Errorf("width %d: bar shown %v, want %v: %q", width, hasBar, wantBar, scr.visible())
		}
	}
}

func TestClearThenRedraw(t *testing.T) {
	b, scr, clk := newTestBar(Options{Unit: "keys"}, 80)
	clk.advance(time.Second)
	b.Set(10, 0)
	b.Clear()
	if scr.visible() != "" {
		t.Fatalf("after Clear the line shows %q", scr.visible())
	}
	scr.Write([]byte("idmpctl: warning: retrying\n"))
	b.Set(11, 0) // at once, not 100 ms later
	if !strings.HasPrefix(scr.visible(), "11 keys") || scr.lines[0] != "idmpctl: warning: retrying" {
		t.Errorf("lines %q, then %q", scr.lines, scr.visible())
	}
}

func TestDetail(t *testing.T) {
	b, scr, clk := newTestBar(Options{Label: "purge --match", Unit: "keys"}, 100)
	clk.advance(time.Second)
	b.Detail("1,200 deleted")
	b.Set(5000, 0)
	if want := "purge --match: 5,000 keys  5.0k keys/s  1,200 deleted  0:01 elapsed"; scr.visible() != want {
		t.Errorf("shown %q, want %q", scr.visible(), want)
	}
	clk.advance(time.Second)
	b.Detail("")
	b.Set(6000, 0)
	if strings.Contains(scr.visible(), "deleted") {
		t.Errorf("detail removed, yet %q", scr.visible())
	}
	var nilBar *Bar
	nilBar.Detail("x")
}

func TestETAStalled(t *testing.T) {
	b, scr, clk := newTestBar(Options{Unit: "lines", Total: 1000}, 100)
	clk.advance(time.Second)
	b.Set(5, 500)
	if !strings.HasSuffix(scr.visible(), "50%  ETA 0:01") {
		t.Errorf("shown %q", scr.visible())
	}
	clk.advance(6 * time.Second) // nothing moved for a whole window
	b.Set(5, 500)
	if strings.Contains(scr.visible(), "ETA") || !strings.Contains(scr.visible(), "0.0 lines/s") {
		t.Errorf("stalled, yet %q", scr.visible())
	}
	clk.advance(time.Second)
	b.Set(9, 1000)
	if !strings.HasSuffix(scr.visible(), "100%  ETA 0:00") {
		t.Errorf("finished input, shown %q", scr.visible())
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {120345, "120,345"}, {1204000, "1,204,000"}, {-1234, "-1,234"}} {
		if got := FormatCount(c.n); got != c.want {
			t.Errorf("FormatCount(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		r    float64
		want string
	}{{0, "0.0"}, {7.46, "7.5"}, {950, "950"}, {48200, "48.2k"}, {1.3e6, "1.3M"}, {2e9, "2.0G"}, {-1, "0"}} {
		if got := formatRate(c.r); got != c.want {
			t.Errorf("formatRate(%v) = %q, want %q", c.r, got, c.want)
		}
	}
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{0, "0:00"}, {12 * time.Second, "0:12"}, {61500 * time.Millisecond, "1:02"}, {3723 * time.Second, "1:02:03"}, {-time.Second, "0:00"}} {
		if got := formatClock(c.d); got != c.want {
			t.Errorf("formatClock(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// TestImports keeps the package light: the standard library and x/term
// only (no lipgloss, termenv or tablewriter, whose init the binary pays).
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(path, ".") && path != "golang.org/x/term" {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
