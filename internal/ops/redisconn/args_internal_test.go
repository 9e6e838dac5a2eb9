package redisconn

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

type testRest []any

func (r testRest) ArgsLen() int                { return len(r) }
func (r testRest) AppendArgs(args []any) []any { return append(args, r...) }

type testInner struct {
	Meta string `lua:"META,key"`
	Pfx  string `lua:"PFX"`
}

type testArgs struct {
	Stream string `lua:"STREAM,key"`
	Inner  testInner
	More   []string `lua:"MORE,key,rest"`
	N      int      `lua:"N"`
	On     bool     `lua:"ON"`
	Off    bool     `lua:"OFF"`
	P      *string  `lua:"P"`
	B      []byte   `lua:"B"`
	Items  testRest `lua:"ITEMS,rest"`
	Last1  int64    `lua:"LAST1"`
	Last2  string   `lua:"LAST2"`
}

// The struct is the one definition of the call: KEYS and ARGV in field
// order (a field without a tag adds its own in place), the rest's
// arguments in place, the fields after it last; the Lua part binds each
// field by its tag's name, those after the rest from the end.
func TestArgsLayout(t *testing.T) {
	s := NewLua[testArgs, any](CommandReply, "return 1\n")
	p := "pv"
	call := s.Call(&testArgs{Stream: "s", Inner: testInner{Meta: "m", Pfx: "x"}, More: []string{"k1", "k2"}, N: 7, On: true,
		P: &p, B: []byte("b"), Items: testRest{"i1", 2}, Last1: 9, Last2: "z"})
	if want := []string{"s", "m", "k1", "k2"}; !slices.Equal(call.Keys, want) {
		t.Errorf("keys %q, want %q", call.Keys, want)
	}
	want := []any{"x", int64(7), "1", "", &p, []byte("b"), "i1", 2, int64(9), "z"}
	if !reflect.DeepEqual(call.Args, want) {
		t.Errorf("args %#v, want %#v", call.Args, want)
	}
	cmd := call.Command(false)
	if cmd[0] != "evalsha" || cmd[2] != 4 || len(cmd) != 3+4+len(want) {
		t.Errorf("command %#v", cmd)
	}
	lua := s.Script.Parts()[1]
	for _, line := range []string{
		"local STREAM = KEYS[1]\n", "local META = KEYS[2]\n", "local MORE = 3 -- the first of a variable number\n",
		"local PFX = ARGV[1]\n", "local N = ARGV[2]\n", "local ON = ARGV[3]\n", "local OFF = ARGV[4]\n", "local P = ARGV[5]\n", "local B = ARGV[6]\n",
		"local ITEMS = 7 -- the first of a variable number\n", "local ITEMS_LAST = #ARGV - 2\n",
		"local LAST1 = ARGV[#ARGV - 1]\n", "local LAST2 = ARGV[#ARGV]\n",
		"if #KEYS < 2 or #ARGV < 8 then\n",
	} {
		if !strings.Contains(lua, line) {
			t.Errorf("the Lua part has no %q:\n%s", line, lua)
		}
	}
	if strings.Contains(lua, "MORE_LAST") {
		t.Errorf("a key rest with nothing after it has no _LAST:\n%s", lua)
	}
	if s.Script.Parts()[0] != luaPrelude || s.Script.Parts()[2] != "return 1\n" {
		t.Error("the parts are not the prelude, the arguments, then the script's")
	}
	if i := s.ArgIndex("N"); i != 1 || call.Args[i] != int64(7) {
		t.Errorf("ArgIndex(N) = %d", i)
	}
	// No rest, no keys: every argument by its index.
	type plain struct {
		A string `lua:"A"`
		B int    `lua:"B"`
	}
	pl := NewLua[plain, any](CommandReply, "return {A, B}\n")
	if c := pl.Call(&plain{A: "a", B: 1}); len(c.Keys) != 0 || !reflect.DeepEqual(c.Args, []any{"a", int64(1)}) {
		t.Errorf("plain call: %q %#v", c.Keys, c.Args)
	}
	if !strings.Contains(pl.Script.Parts()[1], "local B = ARGV[2]\n") || !strings.Contains(pl.Script.Parts()[1], "if #KEYS ~= 0 or #ARGV ~= 2 then\n") {
		t.Errorf("plain part:\n%s", pl.Script.Parts()[1])
	}
}

// A struct the layout cannot send is refused at the script's first use.
func TestArgsLayoutRefusals(t *testing.T) {
	type noTag struct{ A string }
	type twoRests struct {
		A []any `lua:"A,rest"`
		B []any `lua:"B,rest"`
	}
	type keyAfterRest struct {
		A []string `lua:"A,key,rest"`
		B string   `lua:"B,key"`
	}
	type badType struct {
		A float64 `lua:"A"`
	}
	type twice struct {
		A string `lua:"X"`
		B string `lua:"X,key"`
	}
	type badOpt struct {
		A string `lua:"A,keys"`
	}
	type twoPfx struct {
		Inner testInner
		Pfx   string `lua:"PFX2"`
	}
	for name, f := range map[string]func(){
		"no tag":         func() { NewLua[noTag, any](CommandReply).Script.Parts() },
		"two rests":      func() { NewLua[twoRests, any](CommandReply).Script.Parts() },
		"key after rest": func() { NewLua[keyAfterRest, any](CommandReply).Script.Parts() },
		"a float":        func() { NewLua[badType, any](CommandReply).Script.Parts() },
		"a name twice":   func() { NewLua[twice, any](CommandReply).Script.Parts() },
		"an option":      func() { NewLua[badOpt, any](CommandReply).Script.Parts() },
		"ArgIndex":       func() { NewLua[testArgs, any](CommandReply).ArgIndex("Last1") },
		"ArgIndex twice": func() { NewLua[twoPfx, any](CommandReply).ArgIndex("Pfx") },
		"not a struct":   func() { NewLua[int, any](CommandReply).Script.Parts() },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// A Call not made by Lua.Call is refused: every script call goes through
// its typed arguments.
func TestCallMustBeMade(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a hand-made Call was sent")
		}
	}()
	cl := &Call{Script: NewLua[struct{}, any](CommandReply, "return 1\n").Script}
	cl.Command(false)
}

// A script's replies are read by its one decoder (Reply, Decode); a call
// of another script is not read as its.
func TestLuaReply(t *testing.T) {
	type none struct{}
	s := NewLua[none](Int64Reply, "return 1\n")
	if n, err := s.Decode(int64(3)); err != nil || n != 3 {
		t.Errorf("Decode(3) = %d, %v", n, err)
	}
	if _, err := s.Decode("x"); err == nil {
		t.Error("a string decoded as an integer")
	}
	other := NewLua[none](CommandReply, "return 2\n")
	defer func() {
		if recover() == nil {
			t.Error("a call of another script was read as this one's")
		}
	}()
	_, _ = s.Reply(other.Call(&none{}))
}
