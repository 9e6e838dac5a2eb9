package stream

import (
	"context"
	"testing"

	"github.com/idmpctl/idmpctl/internal/redistest"
)

// NativeAutoIID is the iid Redis 8.6.3 derives for IDMPAUTO: recording it
// for the entry an IDMPAUTO add made finds it already there (XIDMPRECORD
// adds nothing, iids-tracked stays), and another pid's record of it is a
// new iid.
func TestNativeAutoIIDIsRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.NewNative(t)
	rdb := redistest.Connect(t, srv.URL).Client()
	ctx := context.Background()
	for i, fields := range [][]string{
		{"a", "1"},
		{"b", "2", "a", "1"},
		{"", ""},
		{"field", string(make([]byte, 300)), "x", "\xff\x00unicode ✓"},
		{"k", "v", "k", "v"},
	} {
		args := []any{"XADD", "s", "IDMPAUTO", "p", "*"}
		for _, f := range fields {
			args = append(args, f)
		}
		id, err := rdb.Do(ctx, args...).Text()
		if err != nil {
			t.Fatal(err)
		}
		before := rdb.XInfoStream(ctx, "s").Val()
		if err := rdb.Do(ctx, "XIDMPRECORD", "s", "p", NativeAutoIID(fields), id).Err(); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		after := rdb.XInfoStream(ctx, "s").Val()
		if after.IIDsTracked != before.IIDsTracked || after.IIDsAdded != before.IIDsAdded {
			t.Fatalf("case %d %q: XIDMPRECORD of NativeAutoIID added an iid (tracked %d -> %d): not Redis's hash",
				i, fields, before.IIDsTracked, after.IIDsTracked)
		}
	}
}
