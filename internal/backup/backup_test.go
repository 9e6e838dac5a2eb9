package backup

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.ndjson")
	w, err := Create(path, Header{Source: "redis://h:6379/0", Pattern: "idem:*"})
	if err != nil {
		t.Fatal(err)
	}
	recs := []Record{
		{Key: "idem:1", Payload: []byte("\x00\x01payload\xff"), PTTL: 5000, ExpiresAt: 1_763_740_805_000},
		{Key: "idem:\xff\x00binary", Payload: []byte("p2"), PTTL: -1, ExpiresAt: 0},
	}
	if err := w.Save(recs); err != nil {
		t.Fatal(err)
	}
	if err := w.Kept([]string{"idem:\xff\x00binary"}, "changed"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(path, Header{}); !errors.Is(err, ErrExists) {
		t.Errorf("Create over an existing file: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600", fi.Mode(), err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"key_b64":"aWRlbTr/AGJpbmFyeQ=="`) {
		t.Errorf("a key that is not UTF-8 is not in key_b64:\n%s", b)
	}
	var got []Entry
	if err := Read(bytes.NewReader(b), func(e Entry) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0].Header == nil || got[0].Header.Pattern != "idem:*" || got[0].Header.Source != "redis://h:6379/0" || got[0].Header.Created == "" {
		t.Fatalf("entries %+v", got)
	}
	for i, r := range recs {
		g := got[1+i].Record
		if g == nil || g.Key != r.Key || !bytes.Equal(g.Payload, r.Payload) || g.PTTL != r.PTTL || g.ExpiresAt != r.ExpiresAt || got[1+i].Line != 2+i {
			t.Errorf("record %d: %+v (line %d), want %+v", i, g, got[1+i].Line, r)
		}
	}
	if got[3].Kept != "changed" || got[3].KeptOf != recs[1].Key {
		t.Errorf("kept line %+v", got[3])
	}
	if !got[4].End || got[4].Records != 2 || got[4].KeptCount != 1 {
		t.Errorf("end line %+v", got[4])
	}
}

const header = `{"idmpctl_backup":1,"created":"2026-11-23T10:00:00Z"}` + "\n"
const good = `{"key":"k","dump":"AAE=","pttl_ms":-1,"expires_at_ms":0}` + "\n"

// Every kind of bad line is refused with its line number, and nothing after
// it reaches the caller.
func TestReadBadLines(t *testing.T) {
	for _, c := range []struct {
		name, file string
		line       int
		why        string
	}{
		{"empty", "", 1, "empty file"},
		{"no header", good, 1, `not an idmpctl backup`},
		{"other version", `{"idmpctl_backup":2}` + "\n", 1, "version 2: this idmpctl reads version 1"},
		{"not JSON", header + good + "hello\n" + good, 3, "not a JSON object"},
		{"cut short", header + good + `{"key":"k2","dump":"AA`, 3, "truncated: the line has no end"},
		{"no key", header + `{"dump":"AAE=","pttl_ms":-1,"expires_at_ms":0}` + "\n", 2, `needs "key"`},
		{"no dump", header + `{"key":"k","pttl_ms":-1,"expires_at_ms":0}` + "\n", 2, `has no "dump"`},
		{"bad base64", header + `{"key":"k","dump":"%%%","pttl_ms":-1,"expires_at_ms":0}` + "\n", 2, "not base64"},
		{"no pttl", header + `{"key":"k","dump":"AAE=","expires_at_ms":0}` + "\n", 2, `needs "pttl_ms"`},
		{"pttl -2", header + `{"key":"k","dump":"AAE=","pttl_ms":-2,"expires_at_ms":0}` + "\n", 2, `needs "pttl_ms"`},
		{"ttl without expiry", header + `{"key":"k","dump":"AAE=","pttl_ms":500,"expires_at_ms":0}` + "\n", 2, "expires_at_ms"},
		{"expiry without ttl", header + `{"key":"k","dump":"AAE=","pttl_ms":-1,"expires_at_ms":5}` + "\n", 2, "expires_at_ms"},
		{"expiry past 2^53", header + `{"key":"k","dump":"AAE=","pttl_ms":5,"expires_at_ms":9007199254740993}` + "\n", 2, `"expires_at_ms" 9007199254740993 is past the latest expiry restore can set, 9007199254740992`},
		{"empty key", header + `{"key":"","dump":"AAE=","pttl_ms":-1,"expires_at_ms":0}` + "\n", 2, "the key must not be empty"},
		{"empty key_b64", header + `{"key_b64":"","dump":"AAE=","pttl_ms":-1,"expires_at_ms":0}` + "\n", 2, "the key must not be empty"},
		{"kept empty key", header + `{"key":"","kept":"changed"}` + "\n", 2, "the key must not be empty"},
		{"both keys", header + `{"key":"k","key_b64":"aw==","dump":"AAE=","pttl_ms":-1,"expires_at_ms":0}` + "\n", 2, "both"},
		{"kept without key", header + `{"kept":"changed"}` + "\n", 2, "a kept line needs a key"},
		{"second header", header + header, 2, "a second header"},
		{"end without counts", header + `{"end":true}` + "\n", 2, "an end line needs"},
		{"pttl a string", header + `{"key":"k","dump":"AAE=","pttl_ms":"5","expires_at_ms":0}` + "\n", 2, `"pttl_ms" must be a whole number`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var lines []int
			err := Read(strings.NewReader(c.file), func(e Entry) error { lines = append(lines, e.Line); return nil })
			var le *LineError
			if !errors.As(err, &le) || le.Line != c.line || !strings.Contains(le.Error(), c.why) {
				t.Fatalf("err %v, want line %d: %q", err, c.line, c.why)
			}
			for _, l := range lines {
				if l >= c.line {
					t.Errorf("line %d reached the caller after bad line %d", l, c.line)
				}
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	for _, s := range []string{header + good, header + good + `{"key":"k","kept":"changed"}` + "\n" + `{"end":true,"records":1,"kept_count":1}` + "\n",
		header + `{"key_b64":"/w==","dump":"AAE=","pttl_ms":10,"expires_at_ms":99}` + "\n", header + `{"key":"k","dump":"AA`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		last := 0
		err := Read(bytes.NewReader(data), func(e Entry) error {
			if e.Line != last+1 {
				t.Fatalf("line %d after %d", e.Line, last)
			}
			last = e.Line
			if e.Line == 1 && e.Header == nil || e.Line > 1 && e.Header != nil {
				t.Fatalf("line %d: header %v", e.Line, e.Header)
			}
			if r := e.Record; r != nil && (r.PTTL < -1 || (r.PTTL == -1) != (r.ExpiresAt == 0)) {
				t.Fatalf("record accepted with pttl %d expires %d", r.PTTL, r.ExpiresAt)
			}
			return nil
		})
		var le *LineError
		if err != nil && (!errors.As(err, &le) || le.Line != last+1) {
			t.Fatalf("error %v after line %d", err, last)
		}
	})
}

// A bad line is described in our words: what is wrong with which field, not
// the decoder's Go types ("Go struct field line.pttl_ms of type int64").
func TestReadBadLineWords(t *testing.T) {
	for _, c := range []struct{ name, line, want string }{
		{"pttl a fraction", `{"key":"k","dump":"AAE=","pttl_ms":-1.5,"expires_at_ms":0}`, `"pttl_ms" must be a whole number`},
		{"pttl a string", `{"key":"k","dump":"AAE=","pttl_ms":"5","expires_at_ms":0}`, `"pttl_ms" must be a whole number`},
		{"key a number", `{"key":5,"dump":"AAE=","pttl_ms":-1,"expires_at_ms":0}`, `"key" must be a string`},
		{"end a string", `{"end":"yes","records":1,"kept_count":0}`, `"end" must be true or false`},
		{"an array", `[1,2]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"two objects", `{"key":"k"} {"x":1}`, "not one JSON object"},
		{"cut JSON", `{"key":"k",`, "not one JSON object"},
		{"bad base64", `{"key":"k","dump":"!!lD","pttl_ms":-1,"expires_at_ms":0}`, `"dump" is not base64`},
		{"bad base64 key", `{"key_b64":"%","dump":"AAE=","pttl_ms":-1,"expires_at_ms":0}`, `"key_b64" is not base64`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Read(strings.NewReader(header+c.line+"\n"), func(Entry) error { return nil })
			var le *LineError
			if !errors.As(err, &le) || le.Line != 2 || le.Truncated {
				t.Fatalf("err %v, want a bad line 2", err)
			}
			msg := le.Error()
			if !strings.Contains(msg, c.want) {
				t.Errorf("%q does not say %q", msg, c.want)
			}
			for _, internal := range []string{"Go ", "json:", "backup.line", "int64", "illegal base64", "input byte", "unmarshal"} {
				if strings.Contains(msg, internal) {
					t.Errorf("%q: Go internals (%q)", msg, internal)
				}
			}
		})
	}
	// A cut last line says so: restore's hint depends on it.
	err := Read(strings.NewReader(header+`{"key":"k","du`), func(Entry) error { return nil })
	var le *LineError
	if !errors.As(err, &le) || !le.Truncated {
		t.Errorf("a cut last line: %v, want Truncated", err)
	}
}
