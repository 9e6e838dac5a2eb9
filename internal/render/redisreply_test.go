package render

import (
	"testing"

	"github.com/idmpctl/idmpctl/internal/resp"
)

func arrayOf(e ...resp.Reply) resp.Reply { return resp.Reply{Kind: resp.Array, Elems: e} }

// The forms of redis-cli 7.0 (checked against its output for the same
// replies: testdata/script/exec/exec_forms.txtar compares the two).
func TestReplyForms(t *testing.T) {
	entry := arrayOf(resp.BulkOf("1-0"), arrayOf(resp.BulkOf("f"), resp.BulkOf("v")))
	many := make([]resp.Reply, 10)
	for i := range many {
		many[i] = resp.IntOf(int64(i))
	}
	cases := []struct {
		name           string
		r              resp.Reply
		raw, tty, json string
	}{
		{"status", resp.StatusOf("OK"), "OK\n", "OK\n", `"OK"` + "\n"},
		{"bulk", resp.BulkOf("a b"), "a b\n", `"a b"` + "\n", `"a b"` + "\n"},
		{"binary", resp.BulkOf("\xff\x00\"\\\n"), "\xff\x00\"\\\n\n", `"\xff\x00\"\\\n"` + "\n", `{"b64":"/wAiXAo="}` + "\n"},
		{"utf8", resp.BulkOf("héllo<&>"), "héllo<&>\n", `"h\xc3\xa9llo<&>"` + "\n", `"héllo<&>"` + "\n"},
		{"int", resp.IntOf(-3), "-3\n", "(integer) -3\n", "-3\n"},
		{"nil", resp.NilReply(), "\n", "(nil)\n", "null\n"},
		{"error", resp.ErrorOf("ERR x"), "ERR x\n\n", "(error) ERR x\n", `{"error":"ERR x"}` + "\n"},
		{"empty", arrayOf(), "\n", "(empty array)\n", "[]\n"},
		{"nested", arrayOf(resp.BulkOf("first-entry"), entry), "first-entry\n1-0\nf\nv\n",
			"1) \"first-entry\"\n2) 1) \"1-0\"\n   2) 1) \"f\"\n      2) \"v\"\n", `["first-entry",["1-0",["f","v"]]]` + "\n"},
		{"wide", arrayOf(many...), "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n",
			" 1) (integer) 0\n 2) (integer) 1\n 3) (integer) 2\n 4) (integer) 3\n 5) (integer) 4\n 6) (integer) 5\n 7) (integer) 6\n 8) (integer) 7\n 9) (integer) 8\n10) (integer) 9\n",
			"[0,1,2,3,4,5,6,7,8,9]\n"},
		{"map", resp.Reply{Kind: resp.Map, Elems: []resp.Reply{resp.BulkOf("k"), resp.IntOf(1), resp.BulkOf("e"), entry}},
			"k\n1\ne\n1-0\nf\nv\n", "1# \"k\" => (integer) 1\n2# \"e\" => 1) \"1-0\"\n   2) 1) \"f\"\n      2) \"v\"\n",
			`{"k":1,"e":["1-0",["f","v"]]}` + "\n"},
		{"binary key", resp.Reply{Kind: resp.Map, Elems: []resp.Reply{resp.BulkOf("\xff"), resp.BulkOf("v")}},
			"\xff\nv\n", "1# \"\\xff\" => \"v\"\n", `[[{"b64":"/w=="},"v"]]` + "\n"},
		{"double", resp.Reply{Kind: resp.Double, Str: "1.5"}, "1.5\n", "(double) 1.5\n", "1.5\n"},
		{"inf", resp.Reply{Kind: resp.Double, Str: "inf"}, "inf\n", "(double) inf\n", `"inf"` + "\n"},
		{"bool", resp.Reply{Kind: resp.Bool, Int: 1}, "(true)\n", "(true)\n", "true\n"},
	}
	for _, c := range cases {
		if got := string(AppendReplyRaw(nil, c.r)); got != c.raw {
			t.Errorf("%s raw = %q, want %q", c.name, got, c.raw)
		}
		if got := string(AppendReplyTTY(nil, c.r)); got != c.tty {
			t.Errorf("%s tty = %q, want %q", c.name, got, c.tty)
		}
		if got := string((&Printer{Format: JSON}).AppendReply(nil, c.r)); got != c.json {
			t.Errorf("%s json = %q, want %q", c.name, got, c.json)
		}
	}
}

// AppendReply picks the form by -o: json as redis-cli --json, table as its
// terminal form, and raw for anything else.
func TestAppendReplyByFormat(t *testing.T) {
	r := resp.IntOf(-3)
	for format, want := range map[Format]string{JSON: "-3\n", Table: "(integer) -3\n", Raw: "-3\n"} {
		if got := string((&Printer{Format: format}).AppendReply(nil, r)); got != want {
			t.Errorf("-o %s: %q, want %q", format, got, want)
		}
	}
	if got := string((&Printer{Format: JSON}).AppendReply(nil, resp.BulkOf("\xff"))); got != `{"b64":"/w=="}`+"\n" {
		t.Errorf("-o json, a binary string: %q", got)
	}
}

// Text is a user's bytes in -o json, as exec prints a reply's.
func TestTextJSON(t *testing.T) {
	for in, want := range map[string]string{"p<1>": `"p<1>"`, "\x00\x01\x02\xff": `{"b64":"AAEC/w=="}`} {
		if got, _ := Text(in).MarshalJSON(); string(got) != want {
			t.Errorf("Text(%q) = %s, want %s", in, got, want)
		}
	}
}
