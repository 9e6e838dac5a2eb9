package render

import (
	"bufio"
	"io"
	"strings"

	"github.com/rivo/uniseg"
)

// Box-drawing characters of the rounded table style.
const (
	boxH, boxV          = "─", "│"
	boxTL, boxTM, boxTR = "╭", "┬", "╮"
	boxML, boxMM, boxMR = "├", "┼", "┤"
	boxBL, boxBM, boxBR = "╰", "┴", "╯"
	cellPad             = " "
)

// Rules of a table, and how a line aligns its cells.
const (
	boxTop = iota
	boxMiddle
	boxBottom
)

const (
	cellLeft = iota
	cellCentre
)

// An SGR sequence: ESC [ parameters m.
const sgrStart, sgrFinal = '\x1b', 'm'

// drawTable writes a rounded box table: the header centred, cells left
// aligned, every column as wide as its widest cell. Cells may hold SGR
// colour sequences, which take no width.
func drawTable(out io.Writer, header []string, rows [][]string) error {
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = displayWidth(h)
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], displayWidth(c))
			}
		}
	}
	w := bufio.NewWriter(out)
	rule(w, widths, boxTop)
	line(w, widths, header, cellCentre)
	rule(w, widths, boxMiddle)
	for _, r := range rows {
		line(w, widths, r, cellLeft)
	}
	rule(w, widths, boxBottom)
	return w.Flush()
}

func rule(w *bufio.Writer, widths []int, at int) {
	ends := [3][3]string{{boxTL, boxTM, boxTR}, {boxML, boxMM, boxMR}, {boxBL, boxBM, boxBR}}[at]
	w.WriteString(ends[0])
	for i, n := range widths {
		if i > 0 {
			w.WriteString(ends[1])
		}
		w.WriteString(strings.Repeat(boxH, n+2*len(cellPad)))
	}
	w.WriteString(ends[2] + "\n")
}

func line(w *bufio.Writer, widths []int, cells []string, align int) {
	w.WriteString(boxV)
	for i, n := range widths {
		c := ""
		if i < len(cells) {
			c = cells[i]
		}
		spare := n - displayWidth(c)
		left := 0
		if align == cellCentre {
			left = spare / 2
		}
		w.WriteString(cellPad + strings.Repeat(" ", left) + c + strings.Repeat(" ", spare-left) + cellPad + boxV)
	}
	w.WriteString("\n")
}

// displayWidth is the terminal width of s without its SGR sequences (East
// Asian wide characters count two; combining marks none).
func displayWidth(s string) int {
	if strings.IndexByte(s, sgrStart) < 0 {
		return uniseg.StringWidth(s)
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == sgrStart && i+1 < len(s) && s[i+1] == '[' {
			j := strings.IndexByte(s[i:], sgrFinal)
			if j > 0 {
				i += j
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return uniseg.StringWidth(b.String())
}
