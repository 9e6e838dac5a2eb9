package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// A table's frame (tw.StyleRounded, one space of padding each side): "│ "
// before each cell, " " after it, and the closing "│".
const (
	cellFrame  = 3
	tableFrame = 1
)

// Column is a column of a table, and how it gives way to a narrow
// terminal.
type Column struct {
	Head string
	// Drop ranks the columns a terminal too narrow for the whole table
	// leaves out: the highest goes first. 0: never left out, for the
	// identifiers a user acts on (a key, a status).
	Drop int
}

// Table writes rows under a header of columns: with -o table a drawn table
// (piped or not), otherwise tab-separated values. A drawn table never cuts
// a value ("vm-pr…" says nothing): on a narrow terminal whole columns are
// left out (layoutColumns), and a line under the table names them.
func (p *Printer) Table(cols []Column, rows [][]string) error {
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.Head
	}
	if p.Format != Table {
		fmt.Fprintln(p.Out, strings.Join(header, "\t"))
		for _, r := range rows {
			fmt.Fprintln(p.Out, strings.Join(r, "\t"))
		}
		return nil
	}
	shown := layoutColumns(p.Width, cols, rows)
	pick := func(cells []string, style func(string) string) []string {
		out := make([]string, len(shown))
		for j, i := range shown {
			if i < len(cells) {
				out[j] = style(cells[i])
			}
		}
		return out
	}
	// A rounded box table with tablewriter: the header centred, cells left
	// aligned, never wrapped nor cut. East Asian ambiguous characters count
	// one column (tw.Off), whatever the locale, so that the same rows draw
	// the same table everywhere (and in the golden tests).
	t := tablewriter.NewTable(p.Out,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleRounded)})),
		tablewriter.WithEastAsian(tw.Off),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignCenter),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
	)
	t.Header(pick(header, p.Head))
	for _, r := range rows {
		if err := t.Append(pick(r, func(s string) string { return s })); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
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

// layoutColumns picks the columns (by index, in order) a table width wide
// shows (0: all). Those never left out stay even when they alone are too
// wide (the lines run long, as kubectl's, rather than hide an identifier);
// the others are added, lowest Drop first, each that still fits, unless
// empty in every row.
func layoutColumns(width int, cols []Column, rows [][]string) []int {
	n := len(cols)
	all, widths, empty := make([]int, n), make([]int, n), make([]bool, n)
	need := tableFrame
	for i, c := range cols {
		all[i], widths[i], empty[i] = i, DisplayWidth(c.Head), true
		for _, r := range rows {
			if i < len(r) {
				widths[i] = max(widths[i], DisplayWidth(r[i]))
				empty[i] = empty[i] && r[i] == ""
			}
		}
		need += widths[i] + cellFrame
	}
	if width <= 0 || need <= width {
		return all
	}
	byRank := slices.Clone(all)
	slices.SortStableFunc(byRank, func(a, b int) int { return cmp.Compare(cols[a].Drop, cols[b].Drop) })
	var shown []int
	used := tableFrame
	for _, i := range byRank {
		if w := widths[i] + cellFrame; cols[i].Drop == 0 || !empty[i] && used+w <= width {
			shown, used = append(shown, i), used+w
		}
	}
	slices.Sort(shown)
	return shown
}

// minColumn is the narrowest a view's value is wrapped to.
const minColumn = 4

// DisplayWidth is the terminal width of s: colour sequences take none,
// East Asian wide characters two, combining marks none; ambiguous ones one
// (tablewriter's measure, with East Asian width off).
func DisplayWidth(s string) int {
	pinWidths()
	return twwidth.Width(s)
}

// pinWidths turns tablewriter's East Asian width off (twwidth guesses it
// from the locale at start-up), so that cells are measured and cut as
// Table's tables measure them.
var pinWidths = sync.OnceFunc(func() { twwidth.SetOptions(twwidth.Options{}) })
