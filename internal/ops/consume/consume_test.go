package consume

import (
	"encoding/json"
	"testing"

	"github.com/idmpctl/idmpctl/internal/batch"
	"github.com/idmpctl/idmpctl/internal/idmp"
)

// The handler's stdin is one JSON object that xadd --batch's reader takes
// back byte for byte: fields in order, binary values as {"b64":...}, and
// repeated or binary names as a list of pairs.
func TestEntryJSON(t *testing.T) {
	for _, c := range []struct {
		fields []string
		want   string
	}{
		{[]string{"b", "2", "a", "1"}, `{"stream":"s","id":"1-0","fields":{"b":"2","a":"1"}}`},
		{[]string{"v", "\xff\x00", "q", `"<&>\`}, `{"stream":"s","id":"1-0","fields":{"v":{"b64":"/wA="},"q":"\"\u003c\u0026\u003e\\"}}`},
		{[]string{"f", "1", "f", "2"}, `{"stream":"s","id":"1-0","fields":[["f","1"],["f","2"]]}`},
		{[]string{"\xfe", "x"}, `{"stream":"s","id":"1-0","fields":[[{"b64":"/g=="},"x"]]}`},
	} {
		got := entryJSON("s", entry{"1-0", c.fields})
		if string(got) != c.want+"\n" {
			t.Errorf("%q:\n got %s want %s", c.fields, got, c.want)
			continue
		}
		var v struct {
			Fields json.RawMessage `json:"fields"`
		}
		if err := json.Unmarshal(got, &v); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		fields, err := batch.ParseFields(v.Fields)
		if err != nil || len(fields) != len(c.fields) {
			t.Fatalf("%s: read back %q, %v", v.Fields, fields, err)
		}
		for i := range fields {
			if fields[i] != c.fields[i] {
				t.Errorf("%s: field %d read back %q, want %q", v.Fields, i, fields[i], c.fields[i])
			}
		}
	}
}

// Claim keys share the stream's cluster slot: a hash-tagged name keeps its
// tag, any other is wrapped in braces; a name with '}' and no tag cannot.
func TestClaimKeySlot(t *testing.T) {
	for stream, want := range map[string]string{
		"orders":     "{orders}:consume:g:1-0",
		"{o}.orders": "{o}.orders:consume:g:1-0",
		"a}b":        "{a}b}:consume:g:1-0", // standalone: no slot to share
	} {
		base, err := idmp.SlotBase(stream, false, "consume", "claim key")
		if err != nil || ClaimKey(base, "g", "1-0") != want {
			t.Errorf("%q: %q %v, want %q", stream, ClaimKey(base, "g", "1-0"), err, want)
		}
	}
	if _, err := idmp.SlotBase("a}b", true, "consume", "claim key"); err == nil || err.Code != 64 {
		t.Errorf("a}b in a cluster: %v, want a usage error", err)
	}
}
