// Package batch reads xadd's NDJSON input: one JSON object a line,
// {"iid":"order-17","fields":{"amount":"100"}}, where fields may also be a
// list of pairs [["f","v"],["f","v2"]] when order or repeated names matter,
// and a line may name its own producer ID ("pid"). Wherever a string goes
// (iid, pid, field names and values), {"b64":"AAEC/w=="} gives the bytes
// in standard base64: JSON cannot carry bytes that are not UTF-8.
// It streams: memory does not grow with the input.
package batch

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// MaxLine bounds one input line; a longer line is malformed.
const MaxLine = 64 << 20

// Line is one parsed input line.
type Line struct {
	IID    string
	HasIID bool
	PID    string // the line's own producer ID, when HasPID
	HasPID bool
	Fields []string // flat: field, value, ...
}

// LineError is a malformed line, numbered from 1.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ParseLine reads one line. With auto, an "iid" is an error (IDMPAUTO
// derives it); without, it is required.
func ParseLine(b []byte, auto bool) (Line, error) {
	if err := checkUTF8(b); err != nil {
		return Line{}, err
	}
	if l, ok := parseFast(b, auto); ok {
		return l, nil
	}
	return parseFull(b, auto)
}

// parseFull is ParseLine for any line: every form, and the errors.
func parseFull(b []byte, auto bool) (Line, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var l Line
	if err := expectDelim(dec, '{', "an object"); err != nil {
		return l, err
	}
	seenFields := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return l, jsonErr(err)
		}
		key, _ := tok.(string)
		switch key {
		case "iid", "pid":
			id, has := &l.IID, &l.HasIID
			if key == "pid" {
				id, has = &l.PID, &l.HasPID
			}
			s, err := text(dec, strconv.Quote(key))
			switch {
			case err != nil:
				return l, err
			case *has:
				return l, fmt.Errorf("%q given twice (IDMP/IDMPAUTO specified multiple times)", key)
			case key == "pid" && s == "":
				return l, errors.New(`empty "pid" (IDMP requires a non-empty producer ID)`)
			}
			*id, *has = s, true
		case "fields":
			if seenFields {
				return l, errors.New(`"fields" given twice`)
			}
			seenFields = true
			if l.Fields, err = parseFields(dec); err != nil {
				return l, err
			}
		default:
			return l, fmt.Errorf("unknown key %q (want \"iid\", \"pid\" and \"fields\")", key)
		}
	}
	if _, err := dec.Token(); err != nil {
		return l, jsonErr(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return l, errors.New("text after the object")
	}
	switch {
	case auto && l.HasIID:
		return l, errors.New(`"iid" given with --auto (IDMPAUTO derives it from the fields)`)
	case !auto && !l.HasIID:
		return l, errors.New(`no "iid" (or use --auto)`)
	case !auto && l.IID == "":
		return l, errors.New(`empty "iid" (IDMP requires a non-empty idempotent ID)`)
	case len(l.Fields) == 0:
		return l, errors.New(`no "fields"`)
	}
	return l, nil
}

// ParseFields reads a fields value on its own (the --json flag).
func ParseFields(b []byte) ([]string, error) {
	if err := checkUTF8(b); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	f, err := parseFields(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the fields")
	}
	if len(f) == 0 {
		return nil, errors.New("no fields")
	}
	return f, nil
}

// checkUTF8 refuses bytes that are not UTF-8: encoding/json would silently
// turn each into U+FFFD and store something else than was given.
func checkUTF8(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	valid := 0
	for valid < len(b) {
		r, size := utf8.DecodeRune(b[valid:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		valid += size
	}
	return fmt.Errorf(`byte %d is not UTF-8: JSON cannot carry binary bytes (give them as {"b64":"<standard base64>"} in place of the string)`, valid+1)
}

// parseFields reads {"f":"v",...} keeping order and repeated names, or
// [["f","v"],...]. Values may be strings, numbers or booleans.
func parseFields(dec *json.Decoder) ([]string, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonErr(err)
	}
	var out []string
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, jsonErr(err)
			}
			v, err := text(dec, "")
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", k, err)
			}
			out = append(out, k.(string), v)
		}

	case json.Delim('['):
		for dec.More() {
			if err := expectDelim(dec, '[', `a ["field","value"] pair`); err != nil {
				return nil, err
			}
			for range 2 { // the field, its value
				s, err := text(dec, "")
				if err != nil {
					return nil, err
				}
				out = append(out, s)
			}
			if err := expectDelim(dec, ']', `a ["field","value"] pair of two`); err != nil {
				return nil, err
			}
		}
	default:
		return nil, errors.New(`"fields" must be an object or a list of ["field","value"] pairs`)
	}
	if _, err := dec.Token(); err != nil {
		return nil, jsonErr(err)
	}
	return out, nil
}

// text reads a JSON string or {"b64":"..."}, what names it in errors; with
// what "" (a field's name or value) a number or boolean is read as its text.
func text(dec *json.Decoder, what string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", jsonErr(err)
	}
	switch v := tok.(type) {
	case string:
		return v, nil
	case json.Number:
		if what == "" {
			return v.String(), nil
		}
	case bool:
		if what == "" {
			return strconv.FormatBool(v), nil
		}
	case json.Delim:
		if v == '{' {
			return base64Object(dec)
		}
	}
	if what == "" {
		return "", fmt.Errorf(`values must be strings, numbers, booleans or {"b64":"..."}, not %v`, describe(tok))
	}
	return "", fmt.Errorf(`%s must be a string or {"b64":"..."}`, what)
}

// base64Object reads the rest of {"b64":"..."}: bytes JSON cannot carry.
func base64Object(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", jsonErr(err)
	}
	if tok != "b64" {
		return "", fmt.Errorf(`an object in place of a string must be {"b64":"..."}, not a %v member`, describe(tok))
	}
	tok, err = dec.Token()
	if err != nil {
		return "", jsonErr(err)
	}
	enc, ok := tok.(string)
	if !ok {
		return "", errors.New(`"b64" must be a string of standard base64`)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil {
		return "", fmt.Errorf(`"b64": %v`, err)
	}
	if err := expectDelim(dec, '}', `the end of {"b64":"..."}`); err != nil {
		return "", err
	}
	return string(raw), nil
}

func describe(tok json.Token) string {
	switch tok {
	case nil:
		return "null"
	case json.Delim('{'):
		return "an object"
	case json.Delim('['):
		return "a list"
	case json.Delim(']'), json.Delim('}'):
		return "the end of " + map[json.Delim]string{']': "a list", '}': "an object"}[tok.(json.Delim)]
	}
	return fmt.Sprint(tok)
}

func expectDelim(dec *json.Decoder, d json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return jsonErr(err)
	}
	if tok != d {
		return fmt.Errorf("want %s, got %s", what, describe(tok))
	}
	return nil
}

func jsonErr(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errors.New("unexpected end of JSON")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// Reader yields parsed lines from an NDJSON stream, skipping blank lines.
type Reader struct {
	r    *bufio.Reader
	auto bool
	n    int
	// Skip is how many input lines to pass over unread (resuming a run that
	// stopped): they are counted, not parsed.
	Skip int
}

// NewReader reads NDJSON lines from r.
func NewReader(r io.Reader, auto bool) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), auto: auto}
}

// Raw returns the next line as it is, without its line ending, and its
// number; the bytes are valid until the next call. io.EOF at the end; a
// *LineError for a line over MaxLine.
func (br *Reader) Raw() (int, []byte, error) {
	raw, err := br.readLine()
	if err != nil {
		return br.n, nil, err
	}
	raw = bytes.TrimSuffix(raw, []byte("\n"))
	raw = bytes.TrimSuffix(raw, []byte("\r"))
	return br.n, raw, nil
}

// Buffered reports whether a line's bytes are read already: Raw would not
// wait for the writer of a pipe.
func (br *Reader) Buffered() bool { return br.r.Buffered() > 0 }

// Parse reads line n's bytes (from Raw): ok is false for a blank line; a
// malformed one is a *LineError.
func (br *Reader) Parse(n int, raw []byte) (l Line, ok bool, err error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return Line{}, false, nil
	}
	l, err = ParseLine(raw, br.auto)
	if err != nil {
		return Line{}, false, &LineError{Line: n, Err: err}
	}
	return l, true, nil
}

// Next returns the next line and its number; io.EOF at the end; a
// *LineError for a malformed line.
func (br *Reader) Next() (Line, int, error) {
	for {
		n, raw, err := br.Raw()
		if err != nil {
			return Line{}, n, err
		}
		if n <= br.Skip {
			continue
		}
		if l, ok, err := br.Parse(n, raw); ok || err != nil {
			return l, n, err
		}
	}
}

func (br *Reader) readLine() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.r.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLine {
			br.n++
			return nil, &LineError{Line: br.n, Err: fmt.Errorf("longer than %d bytes", MaxLine)}
		}
		if err == bufio.ErrBufferFull {
			buf = append(buf, chunk...)
			continue
		}
		if buf != nil {
			chunk = append(buf, chunk...)
		}
		if err != nil && (err != io.EOF || len(chunk) == 0) {
			return nil, err
		}
		br.n++
		return chunk, nil
	}
}
