package render

import "testing"

func TestParseFormat(t *testing.T) {
	for _, c := range []struct {
		in   string
		tty  bool
		want Format
	}{{"", true, Table}, {"", false, Raw}, {"table", false, Table}, {"json", true, JSON}, {"raw", true, Raw}, {"prometheus", true, Prometheus}} {
		if got, err := ParseFormat(c.in, c.tty); err != nil || got != c.want {
			t.Errorf("ParseFormat(%q, %v) = %q, %v; want %q", c.in, c.tty, got, err, c.want)
		}
	}
	if _, err := ParseFormat("yaml", false); err == nil || err.Error() != `-o "yaml": want table, json, raw or prometheus` {
		t.Errorf("ParseFormat(yaml): %v", err)
	}
}
