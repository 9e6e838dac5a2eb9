// Package resp holds Redis replies as values, with every RESP2 and RESP3
// type kept apart (a status is not a bulk string, a map is not an array),
// a reader of them and a writer of commands. It is pure: bytes in, bytes
// out. idmpctl exec uses it where go-redis would fold those types together,
// which redis-cli's output keeps apart ("OK" against OK, maps in --json).
package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Kind is the RESP type of a reply.
type Kind uint8

// Kinds of replies: RESP2's five, then RESP3's.
const (
	Bulk     Kind = iota // $: a bulk string
	Status               // +: a simple string
	Error                // - (and RESP3's !): an error reply
	Int                  // :
	Nil                  // $-1, *-1, RESP3's _
	Array                // *
	Map                  // %: Elems holds key, value, key, value...
	Set                  // ~
	Double               // , (Str keeps the server's text)
	Bool                 // # (Int is 0 or 1)
	BigNum               // ( (Str keeps the digits)
	Verbatim             // = (Str without its "txt:" format)
	Push                 // >
)

// Reply is one reply of the server.
type Reply struct {
	Kind  Kind
	Str   string
	Int   int64
	Elems []Reply
}

// Convenience constructors.
func BulkOf(s string) Reply    { return Reply{Kind: Bulk, Str: s} }
func StatusOf(s string) Reply  { return Reply{Kind: Status, Str: s} }
func ErrorOf(s string) Reply   { return Reply{Kind: Error, Str: s} }
func IntOf(n int64) Reply      { return Reply{Kind: Int, Int: n} }
func NilReply() Reply          { return Reply{Kind: Nil} }
func (r Reply) IsError() bool  { return r.Kind == Error }
func (r Reply) IsQueued() bool { return r.Kind == Status && r.Str == "QUEUED" }
func (r Reply) Aggregate() bool {
	return r.Kind == Array || r.Kind == Map || r.Kind == Set || r.Kind == Push
}

// maxBulk and maxElems bound what a reply may announce before its bytes
// arrive, so a corrupt length cannot ask for gigabytes at once (Redis's own
// proto-max-bulk-len is 512 MB by default).
const (
	maxBulk  = 1 << 30
	maxElems = 1 << 28
)

// ErrProtocol is a reply that is not RESP.
var ErrProtocol = errors.New("redis protocol error")

// Read reads one reply. Only a failure to read (or a reply that is not
// RESP) is an error; an error reply is a Reply of Kind Error.
func Read(rd *bufio.Reader) (Reply, error) { return read(rd, 0) }

// maxDepth bounds nesting (Redis's own replies nest a few levels).
const maxDepth = 512

// kinds are the types of the one-line and the aggregate replies; an
// attribute (|) reads as a map.
var kinds = map[byte]Kind{'+': Status, '-': Error, ',': Double, '(': BigNum,
	'*': Array, '%': Map, '~': Set, '>': Push, '|': Map}

func read(rd *bufio.Reader, depth int) (Reply, error) {
	if depth > maxDepth {
		return Reply{}, fmt.Errorf("%w: nested deeper than %d", ErrProtocol, maxDepth)
	}
	line, err := readLine(rd)
	if err != nil {
		return Reply{}, err
	}
	if len(line) == 0 {
		return Reply{}, fmt.Errorf("%w: empty line", ErrProtocol)
	}
	kind, body := line[0], line[1:]
	switch kind {
	case '+', '-', ',', '(':
		return Reply{Kind: kinds[kind], Str: string(body)}, nil
	case ':':
		n, err := strconv.ParseInt(string(body), 10, 64)
		if err != nil {
			return Reply{}, fmt.Errorf("%w: integer %q", ErrProtocol, body)
		}
		return Reply{Kind: Int, Int: n}, nil
	case '_':
		return Reply{Kind: Nil}, nil
	case '#':
		switch string(body) {
		case "t":
			return Reply{Kind: Bool, Int: 1}, nil
		case "f":
			return Reply{Kind: Bool}, nil
		}
		return Reply{}, fmt.Errorf("%w: boolean %q", ErrProtocol, body)
	case '$', '!', '=':
		n, err := length(body, maxBulk)
		if err != nil || n < 0 {
			return Reply{Kind: Nil}, err
		}
		b, err := readN(rd, n+2)
		if err != nil {
			return Reply{}, err
		}
		if b[n] != '\r' || b[n+1] != '\n' {
			return Reply{}, fmt.Errorf("%w: bulk string not ended by CRLF", ErrProtocol)
		}
		s := string(b[:n])
		switch kind {
		case '!':
			return Reply{Kind: Error, Str: s}, nil
		case '=':
			if len(s) >= 4 && s[3] == ':' {
				s = s[4:]
			}
			return Reply{Kind: Verbatim, Str: s}, nil
		}
		return Reply{Kind: Bulk, Str: s}, nil
	case '*', '%', '~', '>', '|':
		n, err := length(body, maxElems)
		if err != nil || n < 0 {
			return Reply{Kind: Nil}, err
		}
		r := Reply{Kind: kinds[kind]}
		if r.Kind == Map {
			n *= 2
		}
		r.Elems = make([]Reply, 0, min(n, 1024))
		for range n {
			e, err := read(rd, depth+1)
			if err != nil {
				return Reply{}, err
			}
			r.Elems = append(r.Elems, e)
		}
		if kind == '|' { // an attribute precedes the reply it describes
			return read(rd, depth+1)
		}
		return r, nil
	}
	return Reply{}, fmt.Errorf("%w: unexpected %q", ErrProtocol, line)
}

// readN reads n bytes, growing its buffer as they arrive: a length that
// announces more than comes costs no more than what came.
func readN(rd *bufio.Reader, n int) ([]byte, error) {
	if n <= 64<<10 {
		b := make([]byte, n)
		_, err := io.ReadFull(rd, b)
		return b, err
	}
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, rd, int64(n)); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

func length(body []byte, limit int) (int, error) {
	n, err := strconv.Atoi(string(body))
	if err != nil || n < -1 || n > limit {
		return 0, fmt.Errorf("%w: length %q", ErrProtocol, body)
	}
	return n, nil
}

// readLine reads up to CRLF and returns the line without it.
func readLine(rd *bufio.Reader) ([]byte, error) {
	line, err := rd.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("%w: line too long", ErrProtocol)
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line %q not ended by CRLF", ErrProtocol, line)
	}
	return line[:len(line)-2], nil
}

// AppendCommand appends one command as a RESP array of bulk strings.
func AppendCommand(b []byte, args ...string) []byte {
	b = appendLen(b, '*', len(args))
	for _, a := range args {
		b = appendBulk(b, a)
	}
	return b
}

// AppendArgs is AppendCommand for a script call's arguments as they are
// built (strings, *string, []byte, integers; else fmt.Sprint's form): sent
// without copying them into strings first.
func AppendArgs(b []byte, args []any) []byte {
	b = appendLen(b, '*', len(args))
	var num [24]byte
	for _, a := range args {
		switch v := a.(type) {
		case string:
			b = appendBulk(b, v)
		case *string:
			b = appendBulk(b, *v)
		case []byte:
			b = appendBulk(b, v)
		case int:
			b = appendBulk(b, strconv.AppendInt(num[:0], int64(v), 10))
		case int64:
			b = appendBulk(b, strconv.AppendInt(num[:0], v, 10))
		default:
			b = appendBulk(b, fmt.Sprint(v))
		}
	}
	return b
}

func appendLen(b []byte, prefix byte, n int) []byte {
	b = strconv.AppendInt(append(b, prefix), int64(n), 10)
	return append(b, '\r', '\n')
}

func appendBulk[T string | []byte](b []byte, s T) []byte {
	b = append(appendLen(b, '$', len(s)), s...)
	return append(b, '\r', '\n')
}

// ReplyError is an error reply as a Go error (Value's form of one): the
// command failed, the connection goes on.
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

// RedisError makes it a redis.Error, as go-redis's own error replies are
// (redis.HasErrorPrefix and its retry rules know it).
func (ReplyError) RedisError() {}

// Value is the reply as go-redis gives replies: strings for bulk, status,
// verbatim, double and big-number replies, int64 for integers, nil,
// ReplyError for errors, []any for aggregates (a map flat: key, value...),
// bool for RESP3's booleans.
func (r Reply) Value() any {
	switch r.Kind {
	case Int:
		return r.Int
	case Nil:
		return nil
	case Error:
		return ReplyError(r.Str)
	case Bool:
		return r.Int != 0
	case Array, Map, Set, Push:
		out := make([]any, len(r.Elems))
		for i, e := range r.Elems {
			out[i] = e.Value()
		}
		return out
	}
	return r.Str
}
