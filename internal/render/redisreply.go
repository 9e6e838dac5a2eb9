package render

// Replies of Redis as redis-cli prints them (Redis 8.6.3's src/redis-cli.c:
// cliFormatReplyRaw, cliFormatReplyTTY, cliFormatReplyJson; exec_forms.txtar
// compares with the redis-cli the tests run), for idmpctl exec: a script
// that parsed redis-cli's output parses idmpctl's.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/idmpctl/idmpctl/internal/resp"
)

// AppendReplyRaw appends r as redis-cli prints it when stdout is not a
// terminal: strings as they are, elements of arrays one a line, nothing for
// a nil, an error's text and an empty line; and a newline after the reply.
func AppendReplyRaw(b []byte, r resp.Reply) []byte {
	b = appendRaw(b, r)
	return append(b, '\n')
}

func appendRaw(b []byte, r resp.Reply) []byte {
	switch r.Kind {
	case resp.Nil:
	case resp.Error:
		b = append(b, r.Str...)
		b = append(b, '\n')
	case resp.Int:
		b = strconv.AppendInt(b, r.Int, 10)
	case resp.Bool:
		b = append(b, boolText(r)...)
	case resp.Array, resp.Set, resp.Push, resp.Map:
		for i, e := range r.Elems {
			if i > 0 {
				b = append(b, '\n')
			}
			b = appendRaw(b, e)
		}
	default: // bulk, status, verbatim, double, big number
		b = append(b, r.Str...)
	}
	return b
}

// AppendReplyTTY appends r as redis-cli prints it on a terminal: `(integer)
// 1`, `"quoted"` strings with \xNN for bytes that are not printable ASCII,
// `(nil)`, `(error) ...`, numbered elements with nested ones indented.
func AppendReplyTTY(b []byte, r resp.Reply) []byte {
	return appendTTY(b, r, "")
}

func appendTTY(b []byte, r resp.Reply, prefix string) []byte {
	switch r.Kind {
	case resp.Array, resp.Map, resp.Set, resp.Push:
		return appendTTYAggregate(b, r, prefix)
	case resp.Int:
		b = strconv.AppendInt(append(b, "(integer) "...), r.Int, 10)
	case resp.Bulk:
		b = AppendRepr(b, r.Str)
	case resp.Nil:
		b = append(b, "(nil)"...)
	case resp.Bool:
		b = append(b, boolText(r)...)
	default: // status and verbatim as they are, the others labelled
		b = append(append(b, ttyLabel[r.Kind]...), r.Str...)
	}
	return append(b, '\n')
}

var ttyLabel = map[resp.Kind]string{resp.Error: "(error) ", resp.Double: "(double) ", resp.BigNum: "(big number) "}

func appendTTYAggregate(b []byte, r resp.Reply, prefix string) []byte {
	n := len(r.Elems)
	if r.Kind == resp.Map {
		n /= 2
	}
	look := aggregates[r.Kind]
	if n == 0 {
		return append(append(b, look.empty...), '\n')
	}
	width := len(strconv.Itoa(n))
	inner := prefix + strings.Repeat(" ", width+2)
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, prefix...)
		}
		b = fmt.Appendf(b, "%*d%c ", width, i+1, look.sep)
		if r.Kind != resp.Map {
			b = appendTTY(b, r.Elems[i], inner)
			continue
		}
		b = appendTTY(b, r.Elems[2*i], inner)
		b = append(b[:len(b)-1], " => "...)
		b = appendTTY(b, r.Elems[2*i+1], inner)
	}
	return b
}

// aggregates are how redis-cli shows each kind of aggregate: empty, and
// the mark after each element's number.
var aggregates = map[resp.Kind]struct {
	empty string
	sep   byte
}{resp.Array: {"(empty array)", ')'}, resp.Map: {"(empty hash)", '#'}, resp.Set: {"(empty set)", '~'}, resp.Push: {"(empty push)", ')'}}

func boolText(r resp.Reply) string {
	if r.Int != 0 {
		return "(true)"
	}
	return "(false)"
}

// AppendRepr appends s double-quoted as redis-cli (sdscatrepr) shows it:
// \\ \" \n \r \t \a \b escaped, other bytes outside printable ASCII as \xNN.
func AppendRepr(b []byte, s string) []byte {
	const hex, escaped, as = "0123456789abcdef", "\\\"\n\r\t\a\b", "\\\"nrtab"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if k := strings.IndexByte(escaped, c); k >= 0 {
			b = append(b, '\\', as[k])
		} else if c >= 0x20 && c <= 0x7e {
			b = append(b, c)
		} else {
			b = append(b, '\\', 'x', hex[c>>4], hex[c&0xf])
		}
	}
	return append(b, '"')
}

// appendJSON appends r as JSON, as redis-cli --json prints it (RESP3's maps as objects, integers and doubles as numbers, nil as
// null), except that a string that is not UTF-8 is {"b64":"..."} (standard
// base64 of its bytes) rather than bytes no JSON parser accepts, and an
// error reply is {"error":"..."}. A map with a key that is not UTF-8 (an
// object key cannot be {"b64":...}) is a list of [key, value] pairs.
func appendJSON(b []byte, r resp.Reply) []byte {
	switch r.Kind {
	case resp.Error:
		b = append(b, `{"error":`...)
		b = appendJSONString(b, r.Str)
		return append(b, '}')
	case resp.Nil:
		return append(b, "null"...)
	case resp.Int:
		return strconv.AppendInt(b, r.Int, 10)
	case resp.Bool:
		return strconv.AppendBool(b, r.Int != 0)
	case resp.Double:
		if f, err := strconv.ParseFloat(r.Str, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return append(b, r.Str...)
		}
		return appendJSONString(b, r.Str) // inf, -inf, nan: not JSON numbers
	case resp.BigNum:
		return append(b, r.Str...)
	case resp.Map:
		if !mapKeysUTF8(r) { // a list of [key, value] pairs
			pairs := resp.Reply{Kind: resp.Array}
			for i := 0; i+1 < len(r.Elems); i += 2 {
				pairs.Elems = append(pairs.Elems, resp.Reply{Kind: resp.Array, Elems: r.Elems[i : i+2]})
			}
			return appendJSON(b, pairs)
		}
		b = append(b, '{')
		for i := 0; i+1 < len(r.Elems); i += 2 {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, keyText(r.Elems[i]))
			b = append(b, ':')
			b = appendJSON(b, r.Elems[i+1])
		}
		return append(b, '}')
	case resp.Array, resp.Set, resp.Push:
		b = append(b, '[')
		for i, e := range r.Elems {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	}
	return appendJSONValue(b, r.Str)
}

// keyText is a map key as an object key: its raw form (strings as they are).
func keyText(r resp.Reply) string { return string(appendRaw(nil, r)) }

func mapKeysUTF8(r resp.Reply) bool {
	for i := 0; i < len(r.Elems); i += 2 {
		if !utf8.ValidString(keyText(r.Elems[i])) {
			return false
		}
	}
	return true
}

// Text is a user's bytes (a key, a pid, a command's output) in -o json:
// a JSON string when UTF-8, else {"b64":"..."}, as exec prints replies.
type Text string

func (t Text) MarshalJSON() ([]byte, error) { return appendJSONValue(nil, string(t)), nil }

// appendJSONValue is a string value: a JSON string, or {"b64":...}.
func appendJSONValue(b []byte, s string) []byte {
	if utf8.ValidString(s) {
		return appendJSONString(b, s)
	}
	b = append(b, `{"b64":"`...)
	b = base64.StdEncoding.AppendEncode(b, []byte(s))
	return append(b, `"}`...)
}

func appendJSONString(b []byte, s string) []byte {
	if plainASCII(s) {
		return append(append(append(b, '"'), s...), '"')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as redis-cli: <, > and & as they are
	_ = enc.Encode(s)        // never fails for a string
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// plainASCII is printable ASCII that JSON takes as it is.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// AppendReply appends r to b in the Printer's form, redis-cli's: as
// redis-cli --json (-o json), as its interactive form (-o table), or raw.
func (p *Printer) AppendReply(b []byte, r resp.Reply) []byte {
	switch p.Format {
	case JSON:
		return append(appendJSON(b, r), '\n')
	case Table:
		return AppendReplyTTY(b, r)
	}
	return AppendReplyRaw(b, r)
}
