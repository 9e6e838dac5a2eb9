package render

import (
	"strconv"
	"testing"
)

func TestField(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"idem:17", "idem:17"},
		{"", ""},
		{"a b", "a b"},
		{`a\b*[?]`, `a\b*[?]`},
		{"ünï €", "ünï €"},
		{"{orders}.s", "{orders}.s"},
		{`x"y`, `x"y`},
		{"a\nb", `"a\nb"`},
		{"a\tb", `"a\tb"`},
		{"a\rb", `"a\rb"`},
		{"\x1b[31mred", `"\x1b[31mred"`},
		{"a\x00b", `"a\x00b"`},
		{"\xff\xfe", `"\xff\xfe"`},
		{"\x7f", `"\x7f"`},
		{"nb\u00a0sp", `"nb\u00a0sp"`},
		{`"quoted"`, `"\"quoted\""`},
	} {
		got := Field(c.in)
		if got != c.want {
			t.Errorf("Field(%q) = %s, want %s", c.in, got, c.want)
		}
		if back, err := strconv.Unquote(got); got != c.in && (err != nil || back != c.in) {
			t.Errorf("Unquote(%s) = %q, %v", got, back, err)
		}
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/b.idmp": "/tmp/b.idmp", "my backups/b.idmp": "'my backups/b.idmp'", "it's": `'it'\''s'`,
		"": "''", "$HOME/x": "'$HOME/x'", "a\nb": "'a\nb'",
	} {
		if got := ShellWord(in); got != want {
			t.Errorf("ShellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
