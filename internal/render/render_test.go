package render

import (
	"bytes"
	"testing"
)

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

// TestViewWraps: a view cuts no value (issue 30 item 8, findings 4 and
// 11): a long value wraps under the value column at spaces, a flag stays
// whole ("--maxmemory", never "--" and "maxmemory"), a word wider than the
// room runs long rather than lose its end, and a title wraps too.
func TestViewWraps(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out, Format: Table, TTY: true, Width: 36}
	p.KV("restore backups/orders-2025-11-24.idmp", []Pair{
		{"result", "duplicate of a deleted entry (1795911796411-99): nothing written"},
		{"!", "the keys need 11.6 GiB, far over --maxmemory 10 MiB"},
		{"fingerprint", "4e9440b254d67c45fe3d87e976571c42"},
	})
	want := "restore\n" +
		"backups/orders-2025-11-24.idmp\n" +
		"  result       duplicate of a\n" +
		"               deleted entry\n" +
		"               (1795911796411-99):\n" +
		"               nothing written\n" +
		"  !            the keys need 11.6\n" +
		"               GiB, far over\n" +
		"               --maxmemory 10 MiB\n" +
		"  fingerprint  4e9440b254d67c45fe3d87e976571c42\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
