package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

func TestTableLayout(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out, Format: Table, TTY: true, Color: true}
	rows := [][]string{
		{"repo:order-17", p.Good("COMPLETED"), ""},
		{"idem:漢字", p.Warn("PROCESSING"), "1m40s"},
	}
	if err := p.Table(heads("KEY", "STATUS", "TTL"), rows); err != nil {
		t.Fatal(err)
	}
	want := "╭───────────────┬────────────┬───────╮\n" +
		"│      \x1b[1;36mKEY\x1b[0m      │   \x1b[1;36mSTATUS\x1b[0m   │  \x1b[1;36mTTL\x1b[0m  │\n" +
		"├───────────────┼────────────┼───────┤\n" +
		"│ repo:order-17 │ \x1b[32mCOMPLETED\x1b[0m  │       │\n" +
		"│ idem:漢字     │ \x1b[33mPROCESSING\x1b[0m │ 1m40s │\n" +
		"╰───────────────┴────────────┴───────╯\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestTableRaw: -o raw (and json's callers) get tab-separated values.
func TestTableRaw(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out, Format: Raw, TTY: true}
	if err := p.Table(heads("A", "B"), [][]string{{"1", "x y"}}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "A\tB\n1\tx y\n" {
		t.Errorf("raw table %q", got)
	}
}

// TestTablePiped: -o table draws the table into a pipe too, uncut (no
// terminal, no width).
func TestTablePiped(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out, Format: Table}
	long := strings.Repeat("k", 150)
	if err := p.Table(heads("KEY"), [][]string{{long}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "│ "+long+" │") {
		t.Errorf("piped -o table:\n%s", out.String())
	}
}

func heads(names ...string) []Column {
	cols := make([]Column, len(names))
	for i, n := range names {
		cols[i].Head = n
	}
	return cols
}

// Truncate cuts s to at most width columns, ending it with "…" when it was
// cut. Colour sequences are kept and closed. No view cuts a value: only
// this test keeps it, beside DisplayWidth's measure.
func Truncate(s string, width int) string {
	if DisplayWidth(s) <= width {
		return s
	}
	if width < 1 {
		return ""
	}
	pinWidths()
	return twwidth.Truncate(s, width, "…")
}

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		s     string
		width int
		want  string
	}{
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abcde…"},
		{"漢字漢字", 5, "漢字…"},
		{"\x1b[32mabcdefg\x1b[0m", 4, "\x1b[32mabc\x1b[0m…"},
		{"abc", 0, ""},
	} {
		if got := Truncate(c.s, c.width); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.s, c.width, got, c.want)
		}
	}
}

func TestDisplayWidth(t *testing.T) {
	for s, w := range map[string]int{"": 0, "abc": 3, "é€": 2, "漢字": 4, "\x1b[1;31mbad\x1b[0m": 3, "e\u0301": 1, "…": 1} {
		if got := DisplayWidth(s); got != w {
			t.Errorf("DisplayWidth(%q) = %d, want %d", s, got, w)
		}
	}
}

// TestTableLeavesOut: no value is cut: on a narrow terminal the columns
// that say nothing go, then the others are added back by rank, each that
// still fits (so a narrow one of a higher Drop may stay where a wide one
// went); a line names what was left out; the columns of Drop 0 stay, and
// when they alone are too wide the lines run long. Raw output has every
// column.
func TestTableLeavesOut(t *testing.T) {
	cols := []Column{{Head: "KEY"}, {Head: "FORMAT", Drop: 3}, {Head: "STATUS"}, {Head: "OWNER", Drop: 1}, {Head: "LEASE LEFT", Drop: 2}}
	rows := [][]string{{"idem:7f3a-0001", "idmpctl", "COMPLETED", "orders-worker-7c9d5b:4121", ""},
		{"idem:7f3a-0002", "powertools", "PROCESSING", "w2", ""}}
	leased := [][]string{rows[0], {"idem:7f3a-0002", "powertools", "PROCESSING", "w2", "4m59s"}}
	draw := func(width int, rows [][]string) string {
		var out bytes.Buffer
		p := &Printer{Out: &out, Format: Table, TTY: true, Width: width}
		if err := p.Table(cols, rows); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	for _, tc := range []struct {
		width int
		rows  [][]string
		want  string
	}{
		{85, leased, "" +
			"╭────────────────┬────────────┬────────────┬───────────────────────────┬────────────╮\n" +
			"│      KEY       │   FORMAT   │   STATUS   │           OWNER           │ LEASE LEFT │\n" +
			"├────────────────┼────────────┼────────────┼───────────────────────────┼────────────┤\n" +
			"│ idem:7f3a-0001 │ idmpctl    │ COMPLETED  │ orders-worker-7c9d5b:4121 │            │\n" +
			"│ idem:7f3a-0002 │ powertools │ PROCESSING │ w2                        │ 4m59s      │\n" +
			"╰────────────────┴────────────┴────────────┴───────────────────────────┴────────────╯\n"},
		{84, leased, "" +
			"╭────────────────┬────────────┬───────────────────────────┬────────────╮\n" +
			"│      KEY       │   STATUS   │           OWNER           │ LEASE LEFT │\n" +
			"├────────────────┼────────────┼───────────────────────────┼────────────┤\n" +
			"│ idem:7f3a-0001 │ COMPLETED  │ orders-worker-7c9d5b:4121 │            │\n" +
			"│ idem:7f3a-0002 │ PROCESSING │ w2                        │ 4m59s      │\n" +
			"╰────────────────┴────────────┴───────────────────────────┴────────────╯\n" +
			"(FORMAT left out at 84 columns: -o raw has them all)\n"},
		{80, rows, "" +
			"╭────────────────┬────────────┬────────────┬───────────────────────────╮\n" +
			"│      KEY       │   FORMAT   │   STATUS   │           OWNER           │\n" +
			"├────────────────┼────────────┼────────────┼───────────────────────────┤\n" +
			"│ idem:7f3a-0001 │ idmpctl    │ COMPLETED  │ orders-worker-7c9d5b:4121 │\n" +
			"│ idem:7f3a-0002 │ powertools │ PROCESSING │ w2                        │\n" +
			"╰────────────────┴────────────┴────────────┴───────────────────────────╯\n" +
			"(LEASE LEFT left out at 80 columns: -o raw has them all)\n"},
		{50, leased, "" +
			"╭────────────────┬────────────┬────────────╮\n" +
			"│      KEY       │   STATUS   │ LEASE LEFT │\n" +
			"├────────────────┼────────────┼────────────┤\n" +
			"│ idem:7f3a-0001 │ COMPLETED  │            │\n" +
			"│ idem:7f3a-0002 │ PROCESSING │ 4m59s      │\n" +
			"╰────────────────┴────────────┴────────────╯\n" +
			"(FORMAT, OWNER left out at 50 columns: -o raw has them all)\n"},
		{20, rows, "" +
			"╭────────────────┬────────────╮\n" +
			"│      KEY       │   STATUS   │\n" +
			"├────────────────┼────────────┤\n" +
			"│ idem:7f3a-0001 │ COMPLETED  │\n" +
			"│ idem:7f3a-0002 │ PROCESSING │\n" +
			"╰────────────────┴────────────╯\n" +
			"(FORMAT, OWNER, LEASE LEFT left out at 20 columns: -o raw has them all)\n"},
	} {
		if got := draw(tc.width, tc.rows); got != tc.want {
			t.Errorf("%d columns: got\n%s\nwant\n%s", tc.width, got, tc.want)
		}
	}
	var out bytes.Buffer
	p := &Printer{Out: &out, Format: Raw, Width: 20}
	if err := p.Table(cols, rows[:1]); err != nil || out.String() != "KEY\tFORMAT\tSTATUS\tOWNER\tLEASE LEFT\nidem:7f3a-0001\tidmpctl\tCOMPLETED\torders-worker-7c9d5b:4121\t\n" {
		t.Errorf("raw: %q %v", out.String(), err)
	}
}

// TestViewFits: a Wrap value wraps with its words whole (a longer word runs
// over), a Whole value runs long.
func TestViewFits(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out, Format: Table, TTY: true, Width: 36}
	p.View("purge", []Row{
		{"kept", "1 record (PROCESSING: its worker may be running; --force deletes it now)", Wrap},
		{"backup", "saved to /var/backups/idmpctl/orders-2025-11-24.idmp", Wrap},
		{"undo", "idmpctl restore /var/backups/idmpctl/orders-2025-11-24.idmp", Whole},
	})
	want := "purge\n" +
		"  kept    1 record (PROCESSING: its\n" +
		"          worker may be running;\n" +
		"          --force deletes it now)\n" +
		"  backup  saved to\n" +
		"          /var/backups/idmpctl/orders-2025-11-24.idmp\n" +
		"  undo    idmpctl restore /var/backups/idmpctl/orders-2025-11-24.idmp\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
