package batch

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseLine(t *testing.T) {
	for in, want := range map[string]Line{
		`{"iid":"order-17","fields":{"amount":"100"}}`:    {IID: "order-17", HasIID: true, Fields: []string{"amount", "100"}},
		`{"fields":{"b":"2","a":"1"},"iid":"x"}`:          {IID: "x", HasIID: true, Fields: []string{"b", "2", "a", "1"}},
		`{"iid":"x","fields":[["f","v"],["f","v2"]]}`:     {IID: "x", HasIID: true, Fields: []string{"f", "v", "f", "v2"}},
		`{"iid":"a\u0000b","fields":{"n":100,"ok":true}}`: {IID: "a\x00b", HasIID: true, Fields: []string{"n", "100", "ok", "true"}},
		`{"iid":"IDMP","fields":{"":""}}`:                 {IID: "IDMP", HasIID: true, Fields: []string{"", ""}},
		`  {"iid":"*","fields":{"x":"1.50"}}  `:           {IID: "*", HasIID: true, Fields: []string{"x", "1.50"}},
		`{"iid":"123-456","fields":{"f":"1","f":"2"}}`:    {IID: "123-456", HasIID: true, Fields: []string{"f", "1", "f", "2"}},
	} {
		got, err := ParseLine([]byte(in), false)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseLine(%s) = %+v, %v; want %+v", in, got, err, want)
		}
	}
}

func TestParseLineErrors(t *testing.T) {
	for in, why := range map[string]string{
		`{"iid":"x"}`:                              `no "fields"`,
		`{"fields":{"a":"1"}}`:                     `no "iid"`,
		`{"iid":"","fields":{"a":"1"}}`:            `empty "iid"`,
		`{"iid":1,"fields":{"a":"1"}}`:             `"iid" must be a string`,
		`{"iid":"x","fields":{"a":null}}`:          `null`,
		`{"iid":"x","fields":{"a":{"b":1}}}`:       `an object`,
		`{"iid":"x","fields":"a=1"}`:               `must be an object or a list`,
		`{"iid":"x","fields":[["a"]]}`:             `not the end of a list`,
		`{"iid":"x","fields":[["a","b","c"]]}`:     `pair of two`,
		`{"iid":"x","fields":{},"extra":1}`:        `unknown key "extra"`,
		`{"iid":"x","fields":{"a":"1"}} {}`:        `text after the object`,
		`{"iid":"x","fields":{"a":"1"`:             `end of JSON|invalid JSON`,
		`[1,2]`:                                    `want an object`,
		`not json`:                                 `invalid JSON`,
		`{"iid":"x","iid":"y","fields":{"a":"1"}}`: `given twice`,
	} {
		_, err := ParseLine([]byte(in), false)
		if err == nil {
			t.Errorf("ParseLine(%s) accepted", in)
			continue
		}
		if ok, _ := regexpMatch(why, err.Error()); !ok {
			t.Errorf("ParseLine(%s) = %v, want %q", in, err, why)
		}
	}
	if _, err := ParseLine([]byte(`{"iid":"x","fields":{"a":"1"}}`), true); err == nil {
		t.Error("iid with auto accepted")
	}
	if l, err := ParseLine([]byte(`{"fields":{"a":"1"}}`), true); err != nil || l.HasIID {
		t.Errorf("auto line: %+v %v", l, err)
	}
}

func TestReaderNumbersLinesAndStops(t *testing.T) {
	in := "{\"iid\":\"a\",\"fields\":{\"f\":\"1\"}}\n\n{\"iid\":\"b\",\"fields\":{\"f\":\"2\"}}\nbad\n{\"iid\":\"c\",\"fields\":{\"f\":\"3\"}}"
	r := NewReader(strings.NewReader(in), false)
	var got []string
	for {
		l, n, err := r.Next()
		if err == io.EOF {
			t.Fatal("reached EOF past a malformed line")
		}
		var le *LineError
		if errors.As(err, &le) {
			if le.Line != 4 || n != 4 {
				t.Fatalf("malformed line numbered %d/%d, want 4", le.Line, n)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l.IID)
	}
	if strings.Join(got, ",") != "a,b" {
		t.Fatalf("lines before the bad one: %v", got)
	}
	// A last line without a newline is read.
	r = NewReader(strings.NewReader(`{"iid":"z","fields":{"f":"1"}}`), false)
	if l, n, err := r.Next(); err != nil || l.IID != "z" || n != 1 {
		t.Fatalf("unterminated last line: %+v %d %v", l, n, err)
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("after last line: %v", err)
	}
}

func TestLongLines(t *testing.T) {
	big := strings.Repeat("v", 200<<10) // beyond bufio's buffer, within MaxLine
	in := `{"iid":"x","fields":{"f":"` + big + `"}}` + "\n"
	l, _, err := NewReader(strings.NewReader(in), false).Next()
	if err != nil || len(l.Fields[1]) != len(big) {
		t.Fatalf("long line: %v", err)
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"iid":"order-17","fields":{"amount":"100"}}`, `{"iid":"x","fields":[["f","v"]]}`,
		`{"fields":{"a":1}}`, `{"iid":"a\u0000","fields":{"":""}}`, `[`, `{"iid":`, `{}`,
		`{"iid":{"b64":"AAEC/w=="},"pid":{"b64":"cA=="},"fields":[[{"b64":"AA=="},{"b64":"/w=="}]]}`, `{"iid":{"b64":"`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, auto bool) {
		// The fast path reads what it reads exactly as the full parser does
		// (ParseLine refuses bytes that are not UTF-8 before either runs).
		if fast, ok := parseFast(b, auto); ok && utf8.Valid(b) {
			full, err := parseFull(b, auto)
			if err != nil || !reflect.DeepEqual(fast, full) {
				t.Fatalf("%q: fast %+v, full %+v (%v)", b, fast, full, err)
			}
		}
		l, err := ParseLine(b, auto)
		if err != nil {
			return
		}
		if len(l.Fields) == 0 || len(l.Fields)%2 != 0 {
			t.Fatalf("accepted %q with fields %q", b, l.Fields)
		}
		if !auto && l.IID == "" || auto && l.HasIID {
			t.Fatalf("accepted %q with iid %q (auto %v)", b, l.IID, auto)
		}
	})
}

func TestReaderSkip(t *testing.T) {
	in := "not even json\n\n{\"iid\":\"c\",\"fields\":{\"f\":\"3\"}}\n"
	r := NewReader(strings.NewReader(in), false)
	r.Skip = 2
	l, n, err := r.Next()
	if err != nil || l.IID != "c" || n != 3 {
		t.Fatalf("after skipping 2 lines: %+v line %d, %v", l, n, err)
	}
}

// Bytes JSON cannot carry, and a line's own pid.
func TestParseLineBinary(t *testing.T) {
	l, err := ParseLine([]byte(`{"iid":{"b64":"AAEC/w=="},"pid":{"b64":"cA=="},"fields":[[{"b64":"AA=="},{"b64":"/w=="}],["b64","plain"]]}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if l.IID != "\x00\x01\x02\xff" || !l.HasPID || l.PID != "p" || strings.Join(l.Fields, "|") != "\x00|\xff|b64|plain" {
		t.Errorf("parsed %+v", l)
	}
	l, err = ParseLine([]byte(`{"iid":"i","fields":{"b64":{"b64":"AAE="}}}`), false)
	if err != nil || strings.Join(l.Fields, "|") != "b64|\x00\x01" {
		t.Errorf("a field named b64 with a binary value: %q, %v", l.Fields, err)
	}
	for line, want := range map[string]string{
		`{"iid":{"b64":"!!"},"fields":{"f":"v"}}`:            `"b64": illegal base64`,
		`{"iid":{"hex":"00"},"fields":{"f":"v"}}`:            `must be {"b64":"..."}`,
		`{"iid":{"b64":"AA==","x":1},"fields":{"f":"v"}}`:    `the end of {"b64":"..."}`,
		`{"iid":"a","iid":"b","fields":{"f":"v"}}`:           `IDMP/IDMPAUTO specified multiple times`,
		`{"iid":"a","pid":"","fields":{"f":"v"}}`:            `IDMP requires a non-empty producer ID`,
		`{"iid":"a","pid":"p","pid":"q","fields":{"f":"v"}}`: `"pid" given twice`,
		`{"iid":1,"fields":{"f":"v"}}`:                       `"iid" must be a string or {"b64":"..."}`,
		`{"iid":"a","fields":{"f":{"b64":"AA=","x":"y"}}}`:   `illegal base64`,
	} {
		if _, err := ParseLine([]byte(line), false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", line, err, want)
		}
	}
}

// The fast path takes the common shapes and gives every other line to the
// full parser, which reads it the same (or says what is wrong).
func TestParseFast(t *testing.T) {
	for _, c := range []struct {
		line string
		auto bool
		fast bool
	}{
		{`{"iid":"order-17","fields":{"amount":"100","cur":"EUR"}}`, false, true},
		{` { "iid" : "a" , "fields" : [ ["f","v"] , ["f","v2"] ] , "pid" : "p" } `, false, true},
		{`{"fields":{"a":"1"}}`, true, true},
		{`{"iid":"é€ 漢字","fields":{"k":"v\u0000"}}`, false, false},
		{`{"iid":"a","fields":{"n":1}}`, false, false},
		{`{"iid":"a","fields":{"f":{"b64":"AA=="}}}`, false, false},
		{`{"iid":"a","iid":"b","fields":{"f":"v"}}`, false, false},
		{`{"iid":"","fields":{"f":"v"}}`, false, false},
		{`{"iid":"a","fields":{}}`, false, false},
		{`{"iid":"a","fields":{"f":"v"}} x`, false, false},
		{`{"iid":"a","fields":{"f":"v"}`, false, false},
		{`{"iid":"a","fields":{"f":"v"},"x":1}`, false, false},
		{`{"iid":"a","fields":{"f":"v"}}`, true, false},
	} {
		fast, ok := parseFast([]byte(c.line), c.auto)
		if ok != c.fast {
			t.Errorf("%s: fast path %v, want %v", c.line, ok, c.fast)
		}
		full, err := parseFull([]byte(c.line), c.auto)
		if ok && (err != nil || !reflect.DeepEqual(fast, full)) {
			t.Errorf("%s: fast %+v, full %+v (%v)", c.line, fast, full, err)
		}
	}
}
