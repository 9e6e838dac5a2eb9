// Package backup reads and writes the files `purge --backup` makes and
// `restore` reads: NDJSON, one JSON object a line, no Redis.
//
//	{"idmpctl_backup":1,"created":"2026-11-23T10:00:00Z","source":"redis://host:6379/0","pattern":"idem:*"}
//	{"key":"idem:17","dump":"<base64 of DUMP>","pttl_ms":86399000,"expires_at_ms":1763827200000}
//	{"key":"idem:18","kept":"changed"}
//	{"end":true,"records":1,"kept_count":1}
//
// A record line is fsynced before its key's delete is sent; pttl_ms is -1
// without a TTL (expires_at_ms, on the server's clock, then 0). A kept line
// marks a record purge did not delete (changed, live: restore skips it) or
// whose re-check went unanswered ("unknown": restored only where missing,
// even with --replace). A file without the end line was cut short (a killed
// purge); its complete lines are still good. A key that is not UTF-8 is
// written as "key_b64" (standard base64).
package backup

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"
	"unicode/utf8"
)

// Version is the format's version, in the first line.
const Version = 1

// The reasons of a kept line.
const (
	KeptChanged = "changed" // changed or gone since it was read: not deleted
	KeptLive    = "live"    // a lease or deadline still ran: not deleted
	KeptRefused = "refused" // the server refused the delete (NOPERM): not deleted
	// KeptUnknown: the re-check's reply never came; deleted or not, nobody
	// knows. Restore never writes it over an existing key.
	KeptUnknown = "unknown"
)

// maxLine bounds one line: a record's DUMP payload in base64 (a 512 MB
// string would not fit; no idempotency record comes near).
const maxLine = 256 << 20

// Header is the first line.
type Header struct {
	Version int    `json:"idmpctl_backup"`
	Created string `json:"created"`
	Source  string `json:"source,omitempty"` // the server's URL, password redacted
	Pattern string `json:"pattern,omitempty"`
}

// Record is one key as DUMP saved it.
type Record struct {
	Key       string
	Payload   []byte // DUMP's reply
	PTTL      int64  // ms left when it was saved; -1: no TTL
	ExpiresAt int64  // server ms at which it expires; 0: never
}

// MaxExpiresAt is the latest expiry restore takes: its script's numbers
// are Lua doubles, exact up to 2^53 (Redis 7.0 sends 1e17 as "1e+17").
const MaxExpiresAt = 1 << 53

// line is every field a line may have.
type line struct {
	Version   *int    `json:"idmpctl_backup,omitempty"`
	Created   string  `json:"created,omitempty"`
	Source    string  `json:"source,omitempty"`
	Pattern   string  `json:"pattern,omitempty"`
	Key       *string `json:"key,omitempty"`
	KeyB64    *string `json:"key_b64,omitempty"`
	Dump      *string `json:"dump,omitempty"`
	PTTL      *int64  `json:"pttl_ms,omitempty"`
	ExpiresAt *int64  `json:"expires_at_ms,omitempty"`
	Kept      string  `json:"kept,omitempty"`
	End       bool    `json:"end,omitempty"`
	Records   *int64  `json:"records,omitempty"`
	KeptCount *int64  `json:"kept_count,omitempty"`
}

// withKey is l naming key, as key_b64 when it is not UTF-8.
func withKey(l line, key string) line {
	if utf8.ValidString(key) {
		l.Key = &key
		return l
	}
	b := base64.StdEncoding.EncodeToString([]byte(key))
	l.KeyB64 = &b
	return l
}

// Writer appends to a backup file. Its methods may be called from several
// goroutines (the nodes of a cluster are purged concurrently).
type Writer struct {
	mu      sync.Mutex
	f       *os.File
	bw      *bufio.Writer
	records int64
	kept    int64
	err     error // the first write error: every later call returns it
}

// ErrExists is Create's error for a path that exists: a backup is never
// overwritten.
var ErrExists = errors.New("exists: a backup is never overwritten; give a new file name")

// Create makes a new backup file at path (mode 0600: it holds the records'
// data) with its header line, file and directory entry durable.
func Create(path string, h Header) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, ErrExists
	}
	if err != nil {
		return nil, err
	}
	w := &Writer{f: f, bw: bufio.NewWriterSize(f, 256<<10)}
	v := Version
	if h.Created == "" {
		h.Created = time.Now().UTC().Format(time.RFC3339)
	}
	err = w.writeLine(line{Version: &v, Created: h.Created, Source: h.Source, Pattern: h.Pattern})
	if err == nil {
		err = w.sync()
	}
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		if err == nil {
			err = d.Sync() // the new file's name survives a crash too
		}
		d.Close()
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

func (w *Writer) writeLine(l line) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.bw.Write(b)
	return err
}

func (w *Writer) sync() error {
	if err := w.bw.Flush(); err != nil {
		return err
	}
	return w.f.Sync()
}

// Save appends records and fsyncs the file: when it returns nil they are on
// disk, and their keys may be deleted.
func (w *Writer) Save(recs []Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	for _, r := range recs {
		d := base64.StdEncoding.EncodeToString(r.Payload)
		if w.err = w.writeLine(withKey(line{PTTL: &r.PTTL, ExpiresAt: &r.ExpiresAt, Dump: &d}, r.Key)); w.err != nil {
			return w.err
		}
	}
	if w.err = w.sync(); w.err == nil {
		w.records += int64(len(recs))
	}
	return w.err
}

// Kept marks keys saved before as kept by the purge (reason: changed,
// live...): restore skips them. Written through, fsynced by Close.
func (w *Writer) Kept(keys []string, reason string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	for _, k := range keys {
		if w.err = w.writeLine(withKey(line{Kept: reason}, k)); w.err != nil {
			return w.err
		}
	}
	w.kept += int64(len(keys))
	w.err = w.bw.Flush()
	return w.err
}

// Counts are the records saved and the kept lines written so far.
func (w *Writer) Counts() (records, kept int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.records, w.kept
}

// Close writes the end line, fsyncs and closes. A purge stopped by an error
// or an interrupt still closes its backup: only a crash leaves no end line.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.err
	if err == nil {
		r, k := w.records, w.kept
		err = w.writeLine(line{End: true, Records: &r, KeptCount: &k})
	}
	if err == nil {
		err = w.sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Entry is one line as read.
type Entry struct {
	Line   int
	Header *Header
	Record *Record
	Kept   string // a kept line: the reason
	KeptOf string // a kept line: the key
	End    bool
	// Counts of the end line.
	Records, KeptCount int64
}

// LineError is a line that is not what a backup file holds.
type LineError struct {
	Line int
	Why  string
	// Truncated: the file ends inside this line (what a killed purge
	// leaves), rather than holding a bad line.
	Truncated bool
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Why) }

// Read calls fn with each entry of a backup file, in order; the first must
// be a header of a known version. It stops at the first invalid line (a
// *LineError; a truncated last line is one) or fn's first error.
func Read(r io.Reader, fn func(Entry) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		raw, err := readLine(br)
		switch end := err == io.EOF && len(raw) == 0; {
		case end && n == 1:
			return &LineError{Line: 1, Why: "empty file: not an idmpctl backup"}
		case end:
			return nil
		case errors.Is(err, errLongLine):
			return &LineError{Line: n, Why: fmt.Sprintf("longer than %d MiB", maxLine>>20)}
		case err == io.EOF:
			return &LineError{Line: n, Why: "truncated: the line has no end (the file was cut short)", Truncated: true}
		case err != nil:
			return err
		}
		e, lerr := parseLine(n, raw)
		if lerr != nil {
			return lerr
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

var errLongLine = errors.New("line too long")

// readLine reads one line without its newline; io.EOF with a partial line
// means the file ended inside it.
func readLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > maxLine {
			return nil, errLongLine
		}
		switch {
		case err == nil:
			return out[:len(out)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return out, err
		}
	}
}

func parseLine(n int, raw []byte) (Entry, error) {
	bad := func(format string, args ...any) (Entry, error) {
		return Entry{}, &LineError{Line: n, Why: fmt.Sprintf(format, args...)}
	}
	var l line
	if t := bytes.TrimLeft(raw, " \t\r"); len(t) == 0 || t[0] != '{' {
		return bad("not a JSON object")
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return bad("%s", jsonWhy(err))
	}
	e := Entry{Line: n}
	if n == 1 {
		switch {
		case l.Version == nil:
			return bad("not an idmpctl backup (the first line has no \"idmpctl_backup\")")
		case *l.Version != Version:
			return bad("backup format version %d: this idmpctl reads version %d", *l.Version, Version)
		}
		e.Header = &Header{Version: *l.Version, Created: l.Created, Source: l.Source, Pattern: l.Pattern}
		return e, nil
	}
	key, hasKey, err := lineKey(l)
	if err != nil {
		return bad("%v", err)
	}
	switch {
	case l.Version != nil:
		return bad("a second header")
	case l.End:
		if l.Records == nil || l.KeptCount == nil || hasKey {
			return bad("an end line needs \"records\" and \"kept_count\", and no key")
		}
		e.End, e.Records, e.KeptCount = true, *l.Records, *l.KeptCount
	case l.Kept != "":
		if !hasKey || l.Dump != nil {
			return bad("a kept line needs a key, and no dump")
		}
		e.Kept, e.KeptOf = l.Kept, key
	default:
		switch {
		case !hasKey:
			return bad("a record needs \"key\" (or \"key_b64\")")
		case l.Dump == nil || *l.Dump == "":
			return bad("record %q has no \"dump\"", key)
		case l.PTTL == nil || *l.PTTL < -1:
			return bad("record %q needs \"pttl_ms\" of -1 (no TTL) or more", key)
		case l.ExpiresAt == nil || *l.ExpiresAt < 0 || (*l.PTTL == -1) != (*l.ExpiresAt == 0):
			return bad("record %q: \"expires_at_ms\" must be 0 exactly when pttl_ms is -1", key)
		case *l.ExpiresAt > MaxExpiresAt:
			return bad("record %q: \"expires_at_ms\" %d is past the latest expiry restore can set, %d (2^53 ms)", key, *l.ExpiresAt, int64(MaxExpiresAt))
		}
		payload, err := base64.StdEncoding.DecodeString(*l.Dump)
		if err != nil {
			return bad("record %q: \"dump\" is not base64 (%s)", key, base64Why(err))
		}
		e.Record = &Record{Key: key, Payload: payload, PTTL: *l.PTTL, ExpiresAt: *l.ExpiresAt}
	}
	return e, nil
}

func lineKey(l line) (string, bool, error) {
	switch {
	case l.Key != nil && l.KeyB64 != nil:
		return "", false, errors.New("both \"key\" and \"key_b64\"")
	case l.Key != nil && *l.Key == "", l.KeyB64 != nil && *l.KeyB64 == "":
		return "", false, errors.New("the key must not be empty") // no idmpctl verb names it
	case l.Key != nil:
		return *l.Key, true, nil
	case l.KeyB64 != nil:
		b, err := base64.StdEncoding.DecodeString(*l.KeyB64)
		if err != nil {
			return "", false, fmt.Errorf("\"key_b64\" is not base64 (%s)", base64Why(err))
		}
		return string(b), true, nil
	}
	return "", false, nil
}

// jsonWhy says what is wrong with a line the JSON decoder refused, in
// words about the file rather than about Go's types.
func jsonWhy(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return "not a JSON object"
	case errors.As(err, &te):
		want := "of another type"
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int64:
			want = "a whole number"
		case reflect.String:
			want = "a string"
		case reflect.Bool:
			want = "true or false"
		}
		return fmt.Sprintf("%q must be %s, not a JSON %s", te.Field, want, te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("not one JSON object (bad JSON at byte %d)", se.Offset)
	}
	return "not one JSON object"
}

// base64Why is where standard base64 stopped making sense.
func base64Why(err error) string {
	var ce base64.CorruptInputError
	if errors.As(err, &ce) {
		return fmt.Sprintf("bad character or length at byte %d", int64(ce)+1)
	}
	return "bad base64"
}
