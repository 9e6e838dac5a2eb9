package redisconn

// Typed script calls: KEYS and ARGV are one struct's fields, bound to Lua
// locals by a part made from it, so the sides cannot drift: a stale name is
// a global and an unread one unused, which luacheck (and Redis) refuse.

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Lua is a script whose calls take arguments A: a struct whose fields, in
// order, are the script's KEYS and ARGV, each tagged with the name of the
// Lua local that holds it:
//
//	Stream string `lua:"STREAM,key"`   KEYS[i]
//	Op     string `lua:"op"`           ARGV[i]
//	Items  Items  `lua:"ITEMS,rest"`   a variable number of ARGV: the local
//	                                   is the index of the first
//	Keys []string `lua:"MORE,key,rest"` a variable number of KEYS: the same
//
// Fields after an ARGV rest are the last arguments (NAME_LAST: the rest's
// last index). Other counts are refused before the script's first line. An
// untagged struct field adds its fields in place. Types: string, *string
// (no boxing), []byte, int, int64, bool ('1' or ”); a rest is []string
// (keys), []any or an ArgList. R is what the one decoder reads a reply into.
type Lua[A, R any] struct {
	Script *Script // what every script has (source, SHA): not generic
	layout func() *argLayout
	decode func(v any) (R, error)
}

// ArgList is a rest field's arguments that a type appends itself: a
// chunk of thousands goes into the call's own argument list, with no copy.
type ArgList interface {
	ArgsLen() int
	AppendArgs(args []any) []any
}

// NewLua makes a script of the prelude, A's binding part and parts, whose
// replies decode reads; A is checked on first use.
func NewLua[A, R any](decode func(v any) (R, error), parts ...string) *Lua[A, R] {
	s, layout := newTyped(reflect.TypeFor[A](), parts)
	return &Lua[A, R]{Script: s, layout: layout, decode: decode}
}

// newTyped is NewLua's work, not generic: each of a generic function's
// instantiations is code of its own in the binary.
func newTyped(t reflect.Type, parts []string) (*Script, func() *argLayout) {
	layout := sync.OnceValue(func() *argLayout { return layoutOf(t) })
	return newScript(func() []string {
		return append([]string{luaPrelude, layout().lua}, parts...)
	}), layout
}

// Call is a call of the script with arguments a.
func (l *Lua[A, R]) Call(a *A) *Call {
	return l.layout().call(l.Script, reflect.ValueOf(a).Elem())
}

// Reply is a call's error (redis.Nil for a nil reply), or its decoded reply.
func (l *Lua[A, R]) Reply(cl *Call) (R, error) {
	if cl.Script != l.Script {
		panic("redisconn: a reply read as another script's")
	}
	if err := cl.Cmd.Err(); err != nil {
		var zero R
		return zero, err
	}
	return l.decode(cl.Cmd.Val())
}

// Decode reads a reply of the script that the caller read itself (exec, a
// batch's pipe), as go-redis gives replies.
func (l *Lua[A, R]) Decode(v any) (R, error) { return l.decode(v) }

// Int64Reply is the decoder of a script whose reply is an integer.
func Int64Reply(v any) (int64, error) {
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("unexpected reply %v (want an integer)", v)
	}
	return n, nil
}

// CommandReply is the decoder of a script whose reply is a Redis
// command's own, which its caller passes on as it is (exec).
func CommandReply(v any) (any, error) { return v, nil }

// ArgIndex is where in Call.Args the field name (before any rest) goes, for
// a caller that changes it in a call made already.
func (l *Lua[A, R]) ArgIndex(name string) int { return l.layout().argIndex(name) }

func (lay *argLayout) argIndex(name string) int {
	at := -1
	for i, f := range lay.args {
		switch {
		case f.field != name:
		case at >= 0:
			panic(fmt.Sprintf("redisconn: %s has two arguments %s", lay.typ, name))
		default:
			at = i
		}
	}
	if at < 0 || lay.rest >= 0 && at >= lay.rest {
		panic(fmt.Sprintf("redisconn: %s has no argument %s before its rest", lay.typ, name))
	}
	return at
}

// argField is one field of a call's struct.
type argField struct {
	field string // the Go field's name
	name  string // the Lua local's
	index []int  // reflect.Value.FieldByIndex
	kind  reflect.Kind
	list  bool // an ArgList
}

// argLayout is a struct's fields as KEYS and ARGV, and the Lua part that
// binds them.
type argLayout struct {
	typ     reflect.Type
	keys    []argField
	keyRest int // index in keys of the rest field; -1 none
	args    []argField
	rest    int // index in args of the rest field; -1 none
	lua     string
}

var argListType = reflect.TypeFor[ArgList]()

// layoutOf reads t's fields; a struct it cannot send panics on first use
// (the tests run every script, and TestLuacheck makes every part).
func layoutOf(t reflect.Type) *argLayout {
	l := &argLayout{typ: t, keyRest: -1, rest: -1}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("redisconn: the arguments of a script are a struct, not %s", t))
	}
	l.add(t, nil)
	names := map[string]bool{}
	for _, f := range append(append([]argField(nil), l.keys...), l.args...) {
		if names[f.name] {
			panic(fmt.Sprintf("redisconn: %s: two fields bind %s", t, f.name))
		}
		names[f.name] = true
	}
	l.lua = l.prelude()
	return l
}

func (l *argLayout) add(t reflect.Type, index []int) {
	for i := range t.NumField() {
		sf := t.Field(i)
		idx := append(append([]int(nil), index...), i)
		tag, ok := sf.Tag.Lookup("lua")
		if !ok {
			if sf.Type.Kind() != reflect.Struct {
				panic(fmt.Sprintf("redisconn: %s.%s has no lua tag", l.typ, sf.Name))
			}
			l.add(sf.Type, idx)
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		key, rest := false, false
		for o := range strings.SplitSeq(opts, ",") {
			if o != "" && o != "key" && o != "rest" {
				panic(fmt.Sprintf("redisconn: %s.%s: unknown lua tag option %q", l.typ, sf.Name, o))
			}
			key, rest = key || o == "key", rest || o == "rest"
		}
		f := argField{field: sf.Name, name: name, index: idx, kind: sf.Type.Kind()}
		switch {
		case key && rest:
			if sf.Type != reflect.TypeFor[[]string]() || l.keyRest >= 0 {
				panic(fmt.Sprintf("redisconn: %s.%s: the one key rest field is a []string", l.typ, sf.Name))
			}
			l.keyRest = len(l.keys)
		case key:
			if f.kind != reflect.String || l.keyRest >= 0 {
				panic(fmt.Sprintf("redisconn: %s.%s: a key is a string, before any key rest field", l.typ, sf.Name))
			}
		case rest:
			f.list = sf.Type.Implements(argListType)
			if !f.list && sf.Type != reflect.TypeFor[[]any]() || l.rest >= 0 {
				panic(fmt.Sprintf("redisconn: %s.%s: the one rest field is a []any or an ArgList", l.typ, sf.Name))
			}
			l.rest = len(l.args)
		case !slices.Contains([]reflect.Kind{reflect.String, reflect.Int, reflect.Int64, reflect.Bool}, f.kind) &&
			sf.Type != reflect.TypeFor[*string]() && sf.Type != reflect.TypeFor[[]byte]():
			panic(fmt.Sprintf("redisconn: %s.%s: cannot send a %s", l.typ, sf.Name, sf.Type))
		}
		if key {
			l.keys = append(l.keys, f)
		} else {
			l.args = append(l.args, f)
		}
	}
}

// prelude is the Lua part that binds each field to its local.
func (l *argLayout) prelude() string {
	var b strings.Builder
	fmt.Fprintf(&b, "-- The call's KEYS and ARGV, named: the fields of %s, in order (made by\n-- redisconn.NewLua from that struct, their one definition).\n", l.typ)
	bind := func(fields []argField, rest int, list string) {
		for i, f := range fields {
			switch {
			case i == rest:
				fmt.Fprintf(&b, "local %s = %d -- the first of a variable number\n", f.name, i+1)
				if tail := len(fields) - 1 - i; tail > 0 {
					fmt.Fprintf(&b, "local %s_LAST = #%s - %d\n", f.name, list, tail)
				}
			case rest >= 0 && i > rest:
				if n := len(fields) - 1 - i; n > 0 {
					fmt.Fprintf(&b, "local %s = %s[#%s - %d]\n", f.name, list, list, n)
				} else {
					fmt.Fprintf(&b, "local %s = %s[#%s]\n", f.name, list, list)
				}
			default:
				fmt.Fprintf(&b, "local %s = %s[%d]\n", f.name, list, i+1)
			}
		}
	}
	bind(l.keys, l.keyRest, "KEYS")
	bind(l.args, l.rest, "ARGV")
	// The counts, checked before the script's first line: exactly these
	// without a rest field, at least the fixed ones with one.
	check := func(n, rest int, list string) string {
		if rest >= 0 {
			return fmt.Sprintf("#%s < %d", list, n-1)
		}
		return fmt.Sprintf("#%s ~= %d", list, n)
	}
	fmt.Fprintf(&b, "if %s or %s then\n", check(len(l.keys), l.keyRest, "KEYS"), check(len(l.args), l.rest, "ARGV"))
	fmt.Fprintf(&b, "  return redis.error_reply('ERR idmpctl: malformed call of %s (' .. #KEYS .. ' keys, ' .. #ARGV .. ' arguments)')\nend\n", l.typ)
	return b.String()
}

// call makes a call of s with the arguments v holds.
func (l *argLayout) call(s *Script, v reflect.Value) *Call {
	nkeys := len(l.keys)
	var restKeys []string
	if l.keyRest >= 0 {
		restKeys = v.FieldByIndex(l.keys[l.keyRest].index).Interface().([]string)
		nkeys += len(restKeys) - 1
	}
	nargs := len(l.args)
	var restArgs reflect.Value
	if l.rest >= 0 {
		nargs--
		restArgs = v.FieldByIndex(l.args[l.rest].index)
		if l.args[l.rest].list {
			if !restArgs.IsNil() {
				nargs += restArgs.Interface().(ArgList).ArgsLen()
			}
		} else {
			nargs += restArgs.Len()
		}
	}
	keys := make([]string, 0, nkeys)
	for i, f := range l.keys {
		if i == l.keyRest {
			keys = append(keys, restKeys...)
		} else {
			keys = append(keys, v.FieldByIndex(f.index).String())
		}
	}
	cl := newCall(s, keys, nargs)
	args := cl.Args
	for i, f := range l.args {
		fv := v.FieldByIndex(f.index)
		switch {
		case i == l.rest && f.list:
			if !fv.IsNil() {
				args = fv.Interface().(ArgList).AppendArgs(args)
			}
		case i == l.rest:
			args = append(args, fv.Interface().([]any)...)
		case f.kind == reflect.String:
			args = append(args, fv.String())
		case f.kind == reflect.Int, f.kind == reflect.Int64:
			args = append(args, fv.Int())
		case f.kind == reflect.Bool:
			if fv.Bool() {
				args = append(args, "1")
			} else {
				args = append(args, "")
			}
		default: // *string, []byte
			args = append(args, fv.Interface())
		}
	}
	cl.Args = args
	return cl
}
