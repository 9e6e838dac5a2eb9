package render

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Ellipsis ends a value cut to fit the terminal.
const Ellipsis = "…"

// A table's frame: the rounded style's "│ " before each cell, " " after
// it, and the closing "│".
// (tw.StyleRounded, one space of padding each side.)
const (
	cellFrame  = 3
	tableFrame = 1
)

// drawTable draws a rounded box table with tablewriter: the header
// centred, cells left aligned. Cells are fitted to width first (fitCells);
// tablewriter then neither wraps nor cuts them. East Asian ambiguous
// characters count one column (tw.Off), whatever the locale, so that the
// same rows draw the same table everywhere (and in the golden tests).
func drawTable(out io.Writer, width int, header []string, rows [][]string) error {
	header, rows = fitCells(width, header, rows)
	t := tablewriter.NewTable(out,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleRounded)})),
		tablewriter.WithEastAsian(tw.Off),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignCenter),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
	)
	t.Header(header)
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	return t.Render()
}

// Column is a column of a table drawn by Columns, and how it gives way to
// a narrow terminal.
type Column struct {
	Head string
	// Keep: never cut. For the identifiers a user acts on (a key, a
	// status): the table runs wider than the terminal rather.
	Keep bool
	// Drop orders the columns left out when cutting every other column to
	// its floor is not enough: the highest first. 0: never left out.
	Drop int
}

// Columns is Table for columns that give way as they say. On a terminal too
// narrow for the whole table the columns that may be cut are cut first,
// down to their floors; then, while that is not enough, the droppable ones
// are left out (the highest Drop first), and a line under the table names
// them; kept columns are never cut, so when they alone do not fit the lines
// run long (as kubectl's do) rather than hide an identifier. Raw output has
// every column.
func (p *Printer) Columns(cols []Column, rows [][]string) error {
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.Head
	}
	if p.Format != Table {
		return p.Table(header, rows)
	}
	shown, limits := layoutColumns(p.Width, cols, rows)
	pick := func(cells []string) []string {
		out := make([]string, 0, len(shown))
		for j, i := range shown {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			if limits != nil && DisplayWidth(c) > limits[j] {
				c = Truncate(c, limits[j])
			}
			out = append(out, c)
		}
		return out
	}
	head := pick(header)
	for i, h := range head {
		head[i] = p.Head(h)
	}
	fitted := make([][]string, len(rows))
	for i, r := range rows {
		fitted[i] = pick(r)
	}
	if err := drawTable(p.Out, 0, head, fitted); err != nil {
		return err
	}
	if len(shown) < len(cols) {
		var left []string
		for i, c := range cols {
			if !slices.Contains(shown, i) {
				left = append(left, c.Head)
			}
		}
		_, err := fmt.Fprintln(p.Out, p.Dim(fmt.Sprintf("(%s left out at %d columns: -o raw has them all)", strings.Join(left, ", "), p.Width)))
		return err
	}
	return nil
}

// layoutColumns picks the columns of cols that a table width columns wide
// shows (by index, in order) and each one's limit (nil: none is cut).
func layoutColumns(width int, cols []Column, rows [][]string) (shown []int, limits []int) {
	n := len(cols)
	shown = make([]int, n)
	for i := range shown {
		shown[i] = i
	}
	if width <= 0 || n == 0 {
		return shown, nil
	}
	widths, floors := make([]int, n), make([]int, n)
	empty := make([]bool, n) // no row has a value there
	for i, c := range cols {
		widths[i], empty[i] = DisplayWidth(c.Head), true
	}
	for _, r := range rows {
		for i := 0; i < n && i < len(r); i++ {
			widths[i] = max(widths[i], DisplayWidth(r[i]))
			empty[i] = empty[i] && r[i] == ""
		}
	}
	for i, c := range cols {
		floors[i] = min(widths[i], max(DisplayWidth(c.Head), minColumn))
		if c.Keep {
			floors[i] = widths[i]
		}
	}
	room := func() int { return width - tableFrame - cellFrame*len(shown) }
	// A column with nothing in it goes before any other is cut; then, while
	// the floors do not fit, the droppable ones, the highest Drop first.
	for phase, by := range [][]int{widths, floors} {
		for {
			need := 0
			for _, i := range shown {
				need += by[i]
			}
			if need <= room() {
				break
			}
			drop := -1
			for j, i := range shown {
				if cols[i].Drop > 0 && (phase == 1 || empty[i]) && (drop < 0 || cols[i].Drop >= cols[shown[drop]].Drop) {
					drop = j
				}
			}
			if drop < 0 {
				break
			}
			shown = slices.Delete(shown, drop, drop+1)
		}
	}
	// When the kept columns alone are wider, the lines run long.
	w, f := make([]int, len(shown)), make([]int, len(shown))
	for j, i := range shown {
		w[j], f[j] = widths[i], floors[i]
	}
	return shown, fitWidths(w, f, room())
}

// fitCells cuts cells so that the table is at most width columns wide
// (0: no limit), the way gh fits its tables: the widest columns give way
// first, down to a common width that fills the terminal, and a cut cell
// ends with "…". Colour sequences take no width and survive the cut.
func fitCells(width int, header []string, rows [][]string) ([]string, [][]string) {
	n := len(header)
	if width <= 0 || n == 0 {
		return header, rows
	}
	widths := make([]int, n)
	for i, h := range header {
		widths[i] = DisplayWidth(h)
	}
	for _, r := range rows {
		for i := 0; i < n && i < len(r); i++ {
			widths[i] = max(widths[i], DisplayWidth(r[i]))
		}
	}
	floors := make([]int, n)
	for i, h := range header {
		floors[i] = min(widths[i], max(DisplayWidth(h), minColumn))
	}
	room := width - tableFrame - cellFrame*n
	limits := fitWidths(widths, floors, room)
	if limits == nil {
		return header, rows
	}
	cut := func(cells []string) []string {
		out := make([]string, len(cells))
		for i, c := range cells {
			if i < n && DisplayWidth(c) > limits[i] {
				c = Truncate(c, limits[i])
			}
			out[i] = c
		}
		return out
	}
	fitted := make([][]string, len(rows))
	for i, r := range rows {
		fitted[i] = cut(r)
	}
	return cut(header), fitted
}

// minColumn is the narrowest a column is cut to: a few characters and "…"
// say more than a lone "…".
const minColumn = 4

// fitWidths returns each column's limit so that they sum to at most room,
// or nil when the columns fit as they are. A column is never cut below its
// floor (its header, or minColumn); above the floors the widest columns
// give way first: the limit is a level that caps them (a column narrower
// than it keeps its width), and what the level leaves over goes to the
// capped columns a column at a time, from the left. When even the floors
// do not fit, the columns get their floors (the table is wider than room).
func fitWidths(widths, floors []int, room int) []int {
	total := 0
	for _, w := range widths {
		total += w
	}
	if total <= room {
		return nil
	}
	limit := func(i, level int) int { return min(widths[i], max(floors[i], level)) }
	sum := func(level int) int {
		n := 0
		for i := range widths {
			n += limit(i, level)
		}
		return n
	}
	// The highest level whose capped sum fits (sum grows with the level).
	level := 0
	for lo, hi := 0, slices.Max(widths); lo <= hi; {
		mid := (lo + hi) / 2
		if sum(mid) <= room {
			level, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	limits := make([]int, len(widths))
	spare := room
	for i := range widths {
		limits[i] = limit(i, level)
		spare -= limits[i]
	}
	for grew := true; spare > 0 && grew; {
		grew = false
		for i, w := range widths {
			if spare > 0 && limits[i] < w {
				limits[i]++
				spare--
				grew = true
			}
		}
	}
	return limits
}

// DisplayWidth is the terminal width of s: colour sequences take none,
// East Asian wide characters two, combining marks none; ambiguous ones one
// (tablewriter's measure, with East Asian width off).
func DisplayWidth(s string) int {
	pinWidths()
	return twwidth.Width(s)
}

// pinWidths turns tablewriter's East Asian width off (twwidth guesses it
// from the locale at start-up), so that cells are measured and cut as
// drawTable's tables measure them.
var pinWidths = sync.OnceFunc(func() { twwidth.SetOptions(twwidth.Options{}) })

// Truncate cuts s to at most width columns, ending it with "…" when it was
// cut. Colour sequences are kept and closed.
func Truncate(s string, width int) string {
	if DisplayWidth(s) <= width {
		return s
	}
	if width < 1 {
		return ""
	}
	pinWidths()
	return twwidth.Truncate(s, width, Ellipsis)
}
