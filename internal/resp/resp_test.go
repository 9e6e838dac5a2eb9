package resp

import (
	"bufio"
	"reflect"
	"strings"
	"testing"
)

func ArrayOf(e ...Reply) Reply { return Reply{Kind: Array, Elems: e} }

func TestRead(t *testing.T) {
	cases := []struct {
		in   string
		want Reply
	}{
		{"+OK\r\n", StatusOf("OK")},
		{"$2\r\nOK\r\n", BulkOf("OK")},
		{"$0\r\n\r\n", BulkOf("")},
		{"$-1\r\n", NilReply()},
		{"*-1\r\n", NilReply()},
		{"_\r\n", NilReply()},
		{"-ERR x\r\n", ErrorOf("ERR x")},
		{"!5\r\nERR y\r\n", ErrorOf("ERR y")},
		{":-42\r\n", IntOf(-42)},
		{",3.14\r\n", Reply{Kind: Double, Str: "3.14"}},
		{"#t\r\n", Reply{Kind: Bool, Int: 1}},
		{"(123456789012345678901234\r\n", Reply{Kind: BigNum, Str: "123456789012345678901234"}},
		{"=8\r\ntxt:abcd\r\n", Reply{Kind: Verbatim, Str: "abcd"}},
		{"*2\r\n$1\r\na\r\n:1\r\n", ArrayOf(BulkOf("a"), IntOf(1))},
		{"*0\r\n", Reply{Kind: Array, Elems: []Reply{}}},
		{"%1\r\n+k\r\n$1\r\nv\r\n", Reply{Kind: Map, Elems: []Reply{StatusOf("k"), BulkOf("v")}}},
		{"~1\r\n:1\r\n", Reply{Kind: Set, Elems: []Reply{IntOf(1)}}},
		{"|1\r\n+a\r\n+b\r\n:7\r\n", IntOf(7)},
		{"$4\r\n\x00\xff\r\n\r\n", BulkOf("\x00\xff\r\n")},
	}
	for _, c := range cases {
		got, err := Read(bufio.NewReader(strings.NewReader(c.in)))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Read(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "x\r\n", "+OK\n", ":x\r\n", "$5\r\nab\r\n", "$2\r\nabcd", "*2\r\n:1\r\n", "#x\r\n", "$-2\r\n", "$99999999999\r\n"} {
		if got, err := Read(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("Read(%q) = %+v, want an error", bad, got)
		}
	}
}

func TestAppendCommand(t *testing.T) {
	got := string(AppendCommand(nil, "SET", "k", "", "\x00"))
	if want := "*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n$1\r\n\x00\r\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestValue(t *testing.T) {
	r := ArrayOf(BulkOf("a"), IntOf(2), NilReply(), ErrorOf("ERR e"), Reply{Kind: Bool, Int: 1})
	want := []any{"a", int64(2), nil, ReplyError("ERR e"), true}
	if got := r.Value(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Value = %#v, want %#v", got, want)
	}
}

// FuzzRead: any bytes either read as a reply or fail, without a panic or
// an allocation the input did not pay for.
func FuzzRead(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n+k\r\n$1\r\nv\r\n", "$-1\r\n", "*1\r\n*1\r\n*1\r\n_\r\n", "=8\r\ntxt:abcd\r\n", "|1\r\n+a\r\n+b\r\n:7\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Read(bufio.NewReader(strings.NewReader(string(b))))
	})
}

// AppendArgs writes what AppendCommand writes for strings, and the other
// argument forms of a script call as their bytes or decimal digits.
func TestAppendArgs(t *testing.T) {
	s := "v\r\n"
	got := string(AppendArgs(nil, []any{"EVALSHA", &s, []byte{0, 1}, 7, int64(-12), 3.5}))
	want := string(AppendCommand(nil, "EVALSHA", "v\r\n", "\x00\x01", "7", "-12", "3.5"))
	if got != want {
		t.Errorf("AppendArgs = %q, want %q", got, want)
	}
}
