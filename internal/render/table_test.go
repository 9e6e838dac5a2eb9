package render

import (
	"bytes"
	"testing"
)

func TestTableLayout(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out, TTY: true, Color: true}
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

func TestTablePiped(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out}
	if err := p.Table([]string{"A", "B"}, [][]string{{"1", "x y"}}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "A\tB\n1\tx y\n" {
		t.Errorf("piped table %q", got)
	}
}

func TestDisplayWidth(t *testing.T) {
	for s, w := range map[string]int{"": 0, "abc": 3, "é€": 2, "漢字": 4, "\x1b[1;31mbad\x1b[0m": 3, "e\u0301": 1, "\x1b": 0} {
		if got := displayWidth(s); got != w {
			t.Errorf("displayWidth(%q) = %d, want %d", s, got, w)
		}
	}
}
