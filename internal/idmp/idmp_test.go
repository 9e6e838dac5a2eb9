package idmp

import (
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
)

func TestStateKeys(t *testing.T) {
	cases := []struct {
		stream, base string
		cluster      bool
		refused      bool
	}{
		{stream: "orders", base: "{orders}"},
		{stream: "{orders}.s", base: "{orders}.s"},
		{stream: "x{t}y", base: "x{t}y"},
		{stream: "a{b", base: "{a{b}", cluster: true},
		{stream: "{}x", base: "{{}x}"},
		{stream: "a}b", base: "{a}b}"},
		{stream: "a}b", cluster: true, refused: true},
		{stream: "{}a}", cluster: true, refused: true},
		{stream: "bin\x00ary", base: "{bin\x00ary}", cluster: true},
	}
	for _, c := range cases {
		l, err := StateKeys(c.stream, c.cluster)
		if c.refused {
			if exit.Code(err) != exit.Usage || !strings.Contains(err.Error(), "hash tag") {
				t.Errorf("StateKeys(%q, cluster) err = %v, want a usage error about hash tags", c.stream, err)
			}
			continue
		}
		if err != nil || l.Base != c.base {
			t.Errorf("StateKeys(%q) = %q, %v; want base %q", c.stream, l.Base, err, c.base)
			continue
		}
		if l.Meta != c.base+":idmp" || l.PIDs != c.base+":idmp:pids" ||
			l.IDs("p\x00") != c.base+":idmp:ids:p\x00" || l.Order("p") != c.base+":idmp:order:p" {
			t.Errorf("StateKeys(%q) = %+v", c.stream, l)
		}
	}
}

func TestParseStateKey(t *testing.T) {
	l, _ := StateKeys("orders", false)
	for key, c := range map[string]struct{ typ, part string }{
		l.Meta:                  {"hash", "settings"},
		l.PIDs:                  {"set", "pids"},
		l.IDs("p:idmp:1"):       {"hash", "iids of pid p:idmp:1"},
		l.Order("p"):            {"list", "order of pid p"},
		l.Batch("p", "b"):       {"hash", "batch progress"},
		l.Batches:               {"zset", "batch progress index"},
		"{orders}:idmp:batches": {"hash", ""},
		"orders:idmp":           {"hash", ""},
		"{orders}:idmp:other:x": {"hash", ""},
	} {
		part, ok := ParseStateKey(key, c.typ)
		if part != c.part || ok != (c.part != "") {
			t.Errorf("ParseStateKey(%q, %s) = %q, %v; want %q", key, c.typ, part, ok, c.part)
		}
	}
	if BatchHash("p", "b1") == BatchHash("p", "b2") || BatchHash("ab", "c") == BatchHash("a", "bc") {
		t.Error("batch names collide")
	}
}

// The integers of Redis's XCFGSET syntax tests (and string2ll's rules).
func TestParseInt(t *testing.T) {
	for s, want := range map[string]any{
		"0": int64(0), "5": int64(5), "86400": int64(86400), "-100": int64(-100), "9223372036854775807": int64(9223372036854775807),
		"A": nil, "AAA": nil, "*": nil, "-": nil, "+": nil, "120-5": nil, "3.14": nil, "000000000": nil,
		"IDMP-DURATION": nil, "0100": nil, "+5": nil, "007": nil, "-0": nil, "": nil, " 5": nil, "5 ": nil,
		"9223372036854775808": nil, "1e3": nil, "0x10": nil,
	} {
		n, ok := ParseInt(s)
		if want == nil && ok || want != nil && (!ok || n != want.(int64)) {
			t.Errorf("ParseInt(%q) = %d, %v; want %v", s, n, ok, want)
		}
	}
}

func TestStateStreams(t *testing.T) {
	for _, c := range []struct {
		key  string
		want []string
	}{
		{"{s}:idmp", []string{"{s}", "s"}},
		{"{s}:idmp:pids", []string{"{s}", "s"}},
		{"{s}:idmp:batches", []string{"{s}", "s"}},
		{"{s}:idmp:ids:p", []string{"{s}", "s"}},
		{"{s}:idmp:order:p:idmp", []string{"{s}:idmp:order:p", "{s}", "s"}},
		{"{t}x:idmp:batch:abc", []string{"{t}x"}},
		{"{a{b}:idmp", []string{"{a{b}", "a{b"}},
		{"s:idmp", nil},
		{"{s}:other", nil},
		{"{}:idmp", nil},
	} {
		got := StateStreams(c.key)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("StateStreams(%q) = %q, want %q", c.key, got, c.want)
		}
		// Every name given is one whose state keys include the key's base.
		for _, s := range got {
			l, err := StateKeys(s, false)
			if err != nil || !strings.HasPrefix(c.key, l.Meta) {
				t.Errorf("StateStreams(%q): %q has state keys under %q", c.key, s, l.Meta)
			}
		}
	}
}
