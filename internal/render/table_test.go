package render

import (
	"bytes"
	"strings"
	"testing"
)

func TestTableLayout(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out, Format: Table, TTY: true, Color: true}
	rows := [][]string{
		{"repo:order-17", p.Good("COMPLETED"), ""},
		{"idem:漢字", p.Warn("PROCESSING"), "1m40s"},
	}
	if err := p.Table([]string{"KEY", "STATUS", "TTL"}, rows); err != nil {
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
	if err := p.Table([]string{"A", "B"}, [][]string{{"1", "x y"}}); err != nil {
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
	if err := p.Table([]string{"KEY"}, [][]string{{long}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "│ "+long+" │") {
		t.Errorf("piped -o table:\n%s", out.String())
	}
}

// TestTableFitsWidth: a 150-character key in a 120-column terminal is cut
// with "…", the narrow columns keep their width, and every line of the
// table is exactly as wide as the terminal.
func TestTableFitsWidth(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out, Format: Table, TTY: true, Width: 120}
	long := strings.Repeat("k", 150)
	rows := [][]string{{long, "idmpctl", "COMPLETED", "1m"}, {"short", "json", "PROCESSING", ""}}
	if err := p.Table([]string{"KEY", "FORMAT", "STATUS", "TTL"}, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		if w := DisplayWidth(l); w != 120 {
			t.Errorf("line of width %d, want 120: %s", w, l)
		}
	}
	if !strings.Contains(lines[3], "k… │ idmpctl │ COMPLETED  │ 1m  │") {
		t.Errorf("cut row: %s", lines[3])
	}
}

func TestFitWidths(t *testing.T) {
	for _, c := range []struct {
		widths, floors []int
		room           int
		want           []int
	}{
		{[]int{10, 5}, []int{4, 4}, 20, nil},                          // fits
		{[]int{150, 7, 10}, []int{4, 4, 4}, 60, []int{43, 7, 10}},     // the widest gives way
		{[]int{50, 50, 3}, []int{4, 4, 3}, 63, []int{30, 30, 3}},      // two wide ones share
		{[]int{50, 51, 3}, []int{4, 4, 3}, 64, []int{31, 30, 3}},      // the spare column goes left
		{[]int{9, 9, 9, 9}, []int{4, 4, 4, 4}, 30, []int{8, 8, 7, 7}}, // even shares
		{[]int{20, 20, 20}, []int{4, 4, 4}, 6, []int{4, 4, 4}},        // never below the floors
		{[]int{2, 30, 2}, []int{2, 4, 2}, 10, []int{2, 6, 2}},         // narrow columns kept
		{[]int{100}, []int{4}, 1, []int{4}},                           // an impossible room
		{[]int{0, 200, 0}, []int{0, 4, 0}, 40, []int{0, 40, 0}},       // empty columns
		{[]int{12, 200, 14}, []int{4, 4, 4}, 40, []int{12, 14, 14}},   // a level between widths
		{[]int{12, 200, 14, 200}, []int{4, 4, 4, 4}, 60, []int{12, 17, 14, 17}},
		// A header's width is its column's floor: LEASE LEFT stays whole.
		{[]int{119, 6, 9, 5, 7, 10, 4, 6}, []int{4, 6, 6, 5, 4, 10, 4, 5}, 55, []int{9, 6, 8, 5, 7, 10, 4, 6}},
	} {
		got := fitWidths(c.widths, c.floors, c.room)
		if !equalInts(got, c.want) {
			t.Errorf("fitWidths(%v, %v, %d) = %v, want %v", c.widths, c.floors, c.room, got, c.want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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

// TestKVFitsWidth: a view's values are cut to the terminal's width.
func TestKVFitsWidth(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out, Format: Table, TTY: true, Width: 30}
	p.KV("claim", []Pair{{"status", "COMPLETED"}, {"result", strings.Repeat("r", 40)}})
	want := "claim\n" +
		"  status  COMPLETED\n" +
		"  result  rrrrrrrrrrrrrrrrrrr…\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestNotesWrap: sentences are wrapped at the width, under their first
// line, not cut.
func TestNotesWrap(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out, Format: Table, TTY: true, Width: 30}
	p.Notes("Formula", []Pair{{"why", "MAXSIZE is stronger than DURATION while a producer is healthy"}})
	want := "Formula\n" +
		"  why  MAXSIZE is stronger\n" +
		"       than DURATION while a\n" +
		"       producer is healthy\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestColumnsKeepAndDrop: kept columns are never cut; the others are cut
// to their floors, an empty one goes first, then the highest Drop; a line
// names what was left out; when the kept ones alone are too wide the lines
// run long. Raw output has every column.
func TestColumnsKeepAndDrop(t *testing.T) {
	cols := []Column{{Head: "KEY", Keep: true}, {Head: "FORMAT", Drop: 3}, {Head: "STATUS", Keep: true},
		{Head: "OWNER", Drop: 1}, {Head: "LEASE LEFT", Drop: 2}}
	rows := [][]string{{"idem:7f3a-0001", "idmpctl", "COMPLETED", "orders-worker-7c9d5b:4121", ""},
		{"idem:7f3a-0002", "powertools", "PROCESSING", "w2", ""}}
	draw := func(width int, rows [][]string) string {
		var out bytes.Buffer
		p := &Printer{Out: &out, Format: Table, TTY: true, Width: width}
		if err := p.Columns(cols, rows); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	for _, tc := range []struct {
		width int
		want  string
	}{
		{80, "" +
			"╭────────────────┬────────────┬────────────┬───────────────────────────╮\n" +
			"│      KEY       │   FORMAT   │   STATUS   │           OWNER           │\n" +
			"├────────────────┼────────────┼────────────┼───────────────────────────┤\n" +
			"│ idem:7f3a-0001 │ idmpctl    │ COMPLETED  │ orders-worker-7c9d5b:4121 │\n" +
			"│ idem:7f3a-0002 │ powertools │ PROCESSING │ w2                        │\n" +
			"╰────────────────┴────────────┴────────────┴───────────────────────────╯\n" +
			"(LEASE LEFT left out at 80 columns: -o raw has them all)\n"},
		{50, "" +
			"╭────────────────┬─────────┬────────────┬────────╮\n" +
			"│      KEY       │ FORMAT  │   STATUS   │ OWNER  │\n" +
			"├────────────────┼─────────┼────────────┼────────┤\n" +
			"│ idem:7f3a-0001 │ idmpctl │ COMPLETED  │ order… │\n" +
			"│ idem:7f3a-0002 │ powert… │ PROCESSING │ w2     │\n" +
			"╰────────────────┴─────────┴────────────┴────────╯\n" +
			"(LEASE LEFT left out at 50 columns: -o raw has them all)\n"},
		{40, "" +
			"╭────────────────┬────────────┬────────╮\n" +
			"│      KEY       │   STATUS   │ OWNER  │\n" +
			"├────────────────┼────────────┼────────┤\n" +
			"│ idem:7f3a-0001 │ COMPLETED  │ order… │\n" +
			"│ idem:7f3a-0002 │ PROCESSING │ w2     │\n" +
			"╰────────────────┴────────────┴────────╯\n" +
			"(FORMAT, LEASE LEFT left out at 40 columns: -o raw has them all)\n"},
		{20, "" +
			"╭────────────────┬────────────╮\n" +
			"│      KEY       │   STATUS   │\n" +
			"├────────────────┼────────────┤\n" +
			"│ idem:7f3a-0001 │ COMPLETED  │\n" +
			"│ idem:7f3a-0002 │ PROCESSING │\n" +
			"╰────────────────┴────────────╯\n" +
			"(FORMAT, OWNER, LEASE LEFT left out at 20 columns: -o raw has them all)\n"},
	} {
		if got := draw(tc.width, rows); got != tc.want {
			t.Errorf("%d columns: got\n%s\nwant\n%s", tc.width, got, tc.want)
		}
	}
	var out bytes.Buffer
	p := &Printer{Out: &out, Format: Raw, Width: 20}
	if err := p.Columns(cols, rows[:1]); err != nil || out.String() != "KEY\tFORMAT\tSTATUS\tOWNER\tLEASE LEFT\nidem:7f3a-0001\tidmpctl\tCOMPLETED\torders-worker-7c9d5b:4121\t\n" {
		t.Errorf("raw: %q %v", out.String(), err)
	}
}

// TestViewFits: a Cut value ends in "…", a Wrap value wraps with its words
// whole (a longer word runs over), a Whole value runs long.
func TestViewFits(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out, Format: Table, TTY: true, Width: 36}
	p.View("purge", []Row{
		{"kept", "1 record (PROCESSING: its worker may be running; --force deletes it now)", Wrap},
		{"backup", "saved to /var/backups/idmpctl/orders-2025-11-24.idmp", Wrap},
		{"undo", "idmpctl restore /var/backups/idmpctl/orders-2025-11-24.idmp", Whole},
		{"keys", "idem:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Cut},
	})
	want := "purge\n" +
		"  kept    1 record (PROCESSING: its\n" +
		"          worker may be running;\n" +
		"          --force deletes it now)\n" +
		"  backup  saved to\n" +
		"          /var/backups/idmpctl/orders-2025-11-24.idmp\n" +
		"  undo    idmpctl restore /var/backups/idmpctl/orders-2025-11-24.idmp\n" +
		"  keys    idem:aaaaaaaaaaaaaaaaaaaa…\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
