package stream

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDefaultBatchID: the same file resumes its batch from any working
// directory; stdin, another file or another first line is another batch.
// The digest is pinned: a change would make every batch stopped before it
// start again from line 1.
func TestDefaultBatchID(t *testing.T) {
	dir := t.TempDir()
	abs := filepath.Join(dir, "in.ndjson")
	first := []byte(`{"iid":"a","fields":{"f":"v"}}`)
	id := DefaultBatchID(abs, first)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chdir(wd) })
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	if got := DefaultBatchID("in.ndjson", first); got != id {
		t.Errorf("relative path: %s, want %s", got, id)
	}
	for name, other := range map[string]string{
		"stdin":      DefaultBatchID("-", first),
		"other file": DefaultBatchID(abs+".2", first),
		"other line": DefaultBatchID(abs, []byte(`{"iid":"b","fields":{"f":"v"}}`)),
	} {
		if other == id {
			t.Errorf("%s: the same ID %s", name, id)
		}
	}
	if got := DefaultBatchID("-", []byte("x")); got != "17074fab907d355f" {
		t.Errorf(`DefaultBatchID("-", "x") = %s`, got)
	}
}
