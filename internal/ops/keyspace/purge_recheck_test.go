package keyspace

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// readKeys reads one batch of keys, as a scan's reader does.
func readKeys(ctx context.Context, c *redisconn.Conn, keys []string, ro readOptions) ([]keyRead, error) {
	return newKeyReader(c, ro).read(ctx, keys, nil, 1)
}

// The re-check compares short values whole and long ones (or ones holding a
// NUL, which the joined comparison cannot tell apart) by digest: both
// kinds keep what changed and delete what did not.
func TestPurgeRecheckComparisonKinds(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	claim := func(key string, extra ...any) {
		args := append([]any{"status", "COMPLETED", "owner", "w", "token", "1", "attempts", "1",
			"lease_until", "1", "created", "1", "updated", "2"}, extra...)
		if err := c.Client().HSet(ctx, key, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("e", 300) // a hashtable hash, read in part; compared by digest
	for _, k := range []string{"nul:same", "nul:changed"} {
		claim(k, "error", "a\x00b")
	}
	for _, k := range []string{"long:same", "long:changed"} {
		claim(k, "error", long)
	}
	for _, k := range []string{"short:same", "short:changed", "short:removed"} {
		claim(k, "error", "x")
	}
	for _, k := range []string{"str:same", "str:changed"} {
		c.Client().Set(ctx, k, `{"status":"DONE"}`, 0)
	}
	sum, items := purgeRun(t, c, PurgeOptions{Pattern: "*", BeforeDelete: purgeHookRuns(t, c,
		[]any{"HSET", "nul:changed", "error", "a\x00c"},
		[]any{"HSET", "long:changed", "error", long[1:] + "f"},
		[]any{"HSET", "short:changed", "owner", "v"},
		[]any{"HDEL", "short:removed", "error"},
		[]any{"SET", "str:changed", `{"status":"DONE","x":1}`, "KEEPTTL"},
	)})
	wantChanged := []string{"long:changed", "nul:changed", "short:changed", "short:removed", "str:changed"}
	wantDeleted := []string{"long:same", "nul:same", "short:same", "str:same"}
	if !slices.Equal(items[PurgeChanged], wantChanged) || !slices.Equal(items[PurgeDeleted], wantDeleted) {
		t.Errorf("changed %v, deleted %v (%+v)", items[PurgeChanged], items[PurgeDeleted], sum)
	}
	wantKeysExist(t, c, true, wantChanged...)
	wantKeysExist(t, c, false, wantDeleted...)
}

// A key that reaches one re-check twice is deleted once, and reported so.
func TestPurgeRecheckKeyTwice(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	c.Client().Set(ctx, "m", "DONE", 0)
	reads, err := readKeys(ctx, c, []string{"m"}, readOptions{})
	if err != nil || reads[0].rec.Format != records.FormatMarker {
		t.Fatalf("read: %+v %v", reads, err)
	}
	p := &purger{c: c}
	outcomes, err := p.recheck(ctx, []keyRead{reads[0], reads[0]})
	if err != nil || !slices.Equal(outcomes, []PurgeOutcome{PurgeDeleted, PurgeChanged}) {
		t.Errorf("outcomes %v %v", outcomes, err)
	}
	wantKeysExist(t, c, false, "m")
}

// A re-check the server answers with an error deleted nothing: its UNLINK,
// checked first, is its one write and its last command. A user who may
// UNLINK ok:* only (an ACL selector) gets each key of the call refused and
// the NOPERM (77), not a lost reply (no outcomes); both keys stay.
func TestPurgeRecheckRefused(t *testing.T) {
	srv := redistest.New(t)
	ctx := context.Background()
	if _, err := srv.Do("ACL", "SETUSER", "op", "on", ">pw", "~*", "&*", "+@all", "-unlink", "(~ok:* +unlink)"); err != nil {
		t.Fatal(err)
	}
	admin := redistest.Connect(t, srv.URL).Client()
	admin.Set(ctx, "ok:1", "DONE", 0)
	admin.Set(ctx, "no:1", "DONE", 0)
	c := redistest.Connect(t, "unix://op:pw@"+srv.Addr)
	reads, err := readKeys(ctx, c, []string{"ok:1", "no:1"}, readOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := &purger{c: c}
	outcomes, err := p.recheck(ctx, reads)
	if exit.Code(err) != exit.Permission || !slices.Equal(outcomes, []PurgeOutcome{purgeRefused, purgeRefused}) {
		t.Fatalf("outcomes %v, %v", outcomes, err)
	}
	wantKeysExist(t, c, true, "ok:1", "no:1")
	if outcomes, err = p.recheck(ctx, reads[:1]); err != nil || !slices.Equal(outcomes, []PurgeOutcome{PurgeDeleted}) {
		t.Errorf("ok:1 alone: %v, %v", outcomes, err)
	}
	wantKeysExist(t, c, false, "ok:1")
}
