package backup

import (
	"errors"
	"strings"
	"testing"
)

// TestReadPlan: the plan restore decides from: records, the keys purge
// kept and why, the end line, and a bad line past the header.
func TestReadPlan(t *testing.T) {
	const header = `{"idmpctl_backup":1,"created":"2026-11-23T10:00:00Z","pattern":"idem:*"}` + "\n"
	const recs = `{"key":"a","dump":"AA==","pttl_ms":-1,"expires_at_ms":0}` + "\n" +
		`{"key":"b","dump":"AA==","pttl_ms":-1,"expires_at_ms":0}` + "\n" +
		`{"key":"c","dump":"AA==","pttl_ms":-1,"expires_at_ms":0}` + "\n" +
		`{"key":"b","kept":"changed"}` + "\n" + `{"key":"c","kept":"unknown"}` + "\n"
	const end = `{"end":true,"records":3,"kept_count":2}` + "\n"

	p, err := ReadPlan(strings.NewReader(header + recs + end))
	if err != nil {
		t.Fatal(err)
	}
	if p.Records != 3 || p.Header.Pattern != "idem:*" || p.End == nil || p.BadLine != nil || !p.Complete() {
		t.Errorf("whole file: %+v", p)
	}
	for key, want := range map[string][2]bool{"a": {false, false}, "b": {true, true}, "c": {false, true}} {
		if kept, missing := p.KeptByPurge(key), p.MissingOnly(key); kept != want[0] || missing != want[1] {
			t.Errorf("%s: kept %v, missing-only %v; want %v", key, kept, missing, want)
		}
	}

	// Cut: no end line, every record missing-only; a cut last line is the
	// bad line, the records before it stand.
	p, err = ReadPlan(strings.NewReader(header + recs + `{"key":"d","du`))
	if err != nil {
		t.Fatal(err)
	}
	if p.End != nil || p.Complete() || !p.MissingOnly("a") || p.BadLine == nil || !p.BadLine.Truncated || p.BadLine.Line != 7 || p.Records != 3 {
		t.Errorf("cut file: %+v (bad line %+v)", p, p.BadLine)
	}

	// The end line's counts are the file's: a lost or added record or kept
	// line refuses the whole file (65 in restore), not only the lines after it.
	for name, file := range map[string]string{
		"record lost":       header + recs[strings.Index(recs, "\n")+1:] + end,
		"kept line lost":    header + recs[:strings.LastIndex(recs[:len(recs)-1], "\n")+1] + end,
		"record after end":  header + recs + end + `{"key":"d","dump":"AA==","pttl_ms":-1,"expires_at_ms":0}` + "\n",
		"count of no lines": header + `{"end":true,"records":1,"kept_count":0}` + "\n",
	} {
		var le *LineError
		if p, err := ReadPlan(strings.NewReader(file)); !errors.As(err, &le) || !strings.Contains(le.Why, "the end line's counts") {
			t.Errorf("%s: plan %+v, err %v; want the end line's counts refused", name, p, err)
		}
	}

	// A second end line is a bad line, as a second header is: a wrong first
	// one refuses the whole file; after a right one, the records stand.
	wrongEnd := `{"end":true,"records":2,"kept_count":2}` + "\n"
	var le2 *LineError
	if p, err := ReadPlan(strings.NewReader(header + recs + wrongEnd + end)); !errors.As(err, &le2) || !strings.Contains(le2.Why, "the end line's counts") {
		t.Errorf("a wrong end line, then a right one: plan %+v, err %v; want the end line's counts refused", p, err)
	}
	p, err = ReadPlan(strings.NewReader(header + recs + end + end))
	if err != nil || p.BadLine == nil || p.BadLine.Line != 8 || p.Complete() || p.Records != 3 {
		t.Errorf("two end lines: %+v, %v (bad line %+v); want line 8 bad, the records standing", p, err, p.BadLine)
	}

	// Not a backup: the first line is the error.
	_, err = ReadPlan(strings.NewReader("hello\n"))
	var le *LineError
	if !errors.As(err, &le) || le.Line != 1 {
		t.Errorf("not a backup: %v", err)
	}
}
