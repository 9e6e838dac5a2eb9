package keyspace

// Issue 16 item 2: purge never selects a live record, in any format that
// carries a lease or a deadline, unless --force; a PROCESSING record with
// no deadline at all only with --older-than or --force. The re-check
// refuses live records on the server's clock too.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

func TestPurgeNeverSelectsLiveRecords(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	now, err := c.Client().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	ms := now.UnixMilli()
	old := ms - 48*time.Hour.Milliseconds()
	for _, cmd := range [][]any{
		// idmpctl claims: live, and past their lease.
		{"HSET", "p:claim:live", "status", "PROCESSING", "owner", "w", "token", "5", "attempts", "1",
			"lease_until", ms + 600_000, "created", old, "updated", old},
		{"HSET", "p:claim:stale", "status", "PROCESSING", "owner", "w", "token", "5", "attempts", "1",
			"lease_until", 1, "created", old, "updated", old},
		// Powertools: in progress before and after its in_progress_expiration.
		{"SET", "p:pt:live", fmt.Sprintf(`{"status":"INPROGRESS","expiration":%d,"in_progress_expiration":%d}`, ms/1000+3600, ms+600_000)},
		{"SET", "p:pt:stale", fmt.Sprintf(`{"status":"INPROGRESS","expiration":%d,"in_progress_expiration":%d}`, ms/1000+3600, ms-1000)},
		// Other formats with a deadline.
		{"SET", "p:json:live", fmt.Sprintf(`{"status":"STARTED","expires_at":%d,"updated_at":%d}`, ms+600_000, old)},
		{"HSET", "p:hash:live", "state", "PROCESSING", "locked_until", ms + 600_000, "updated", old},
		// PROCESSING with no deadline at all: one old, one without any time.
		{"SET", "p:json:nodeadline", fmt.Sprintf(`{"status":"PROCESSING","updated_at":%d}`, old)},
		{"SET", "p:marker", "PROCESSING"},
		{"SET", "p:done", "COMPLETED"},
	} {
		if err := c.Client().Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	live := []string{"p:claim:live", "p:hash:live", "p:json:live", "p:pt:live"}
	noDeadline := []string{"p:json:nodeadline", "p:marker"}
	processing := []records.Status{records.Processing}

	// A dry run by status: the live and the deadline-less are kept, and
	// counted as such.
	sum, items := purgeRun(t, c, PurgeOptions{Pattern: "p:*", Statuses: processing, DryRun: true})
	if want := []string{"p:claim:stale", "p:pt:stale"}; !slices.Equal(items[PurgeWouldDelete], want) {
		t.Errorf("dry run would delete %v, want %v", items[PurgeWouldDelete], want)
	}
	if sum.LiveKept != int64(len(live)+len(noDeadline)) || !strings.Contains(sum.LiveReason, "--force") {
		t.Errorf("dry run summary %+v: want %d kept as live, with the reason", sum, len(live)+len(noDeadline))
	}
	// Several live records: the summary's reason speaks of them all, not of
	// the first one's time left.
	if strings.Contains(sum.LiveReason, " left") || !strings.Contains(sum.LiveReason, "their") {
		t.Errorf("summary reason %q quotes one record for %d", sum.LiveReason, sum.LiveKept)
	}
	// Everything recognised, no filter: the same records stay.
	sum, items = purgeRun(t, c, PurgeOptions{Pattern: "p:*"})
	if want := []string{"p:claim:stale", "p:done", "p:pt:stale"}; !slices.Equal(items[PurgeDeleted], want) {
		t.Errorf("purge deleted %v, want %v (%+v)", items[PurgeDeleted], want, sum)
	}
	wantKeysExist(t, c, true, append(slices.Clone(live), noDeadline...)...)
	// --stale never takes a live record either.
	_, items = purgeRun(t, c, PurgeOptions{Pattern: "p:*", Stale: true})
	if len(items[PurgeDeleted]) != 0 {
		t.Errorf("--stale deleted %v", items[PurgeDeleted])
	}
	// --older-than takes a deadline-less PROCESSING record old enough (one
	// with no time at all never matches it), never a live one.
	_, items = purgeRun(t, c, PurgeOptions{Pattern: "p:*", OlderThan: time.Hour})
	if want := []string{"p:json:nodeadline"}; !slices.Equal(items[PurgeDeleted], want) {
		t.Errorf("--older-than 1h deleted %v, want %v", items[PurgeDeleted], want)
	}
	// --force takes the rest.
	_, items = purgeRun(t, c, PurgeOptions{Pattern: "p:*", Statuses: processing, Force: true})
	if want := []string{"p:claim:live", "p:hash:live", "p:json:live", "p:marker", "p:pt:live"}; !slices.Equal(items[PurgeDeleted], want) {
		t.Errorf("--force deleted %v, want %v", items[PurgeDeleted], want)
	}
}

// The re-check refuses, on the server's clock, a record whose lease is
// live, whatever the client decided: a client that chose it (a bug, a
// clock that ran ahead) cannot delete it. With --force it goes.
func TestPurgeRecheckRefusesLiveRecords(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	now, err := c.Client().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	ms := now.UnixMilli()
	c.Client().HSet(ctx, "live", "status", "PROCESSING", "owner", "w", "token", "5", "attempts", "1",
		"lease_until", ms+600_000, "created", ms, "updated", ms)
	c.Client().Set(ctx, "pt", fmt.Sprintf(`{"status":"INPROGRESS","expiration":%d,"in_progress_expiration":%d}`, ms/1000+3600, ms+600_000), 0)
	reads, err := readKeys(ctx, c, []string{"live", "pt"}, readOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := &purger{c: c}
	outcomes, err := p.recheck(ctx, reads)
	if err != nil || !slices.Equal(outcomes, []PurgeOutcome{PurgeLive, PurgeLive}) {
		t.Fatalf("re-check of live records: %v %v", outcomes, err)
	}
	wantKeysExist(t, c, true, "live", "pt")
	p.opts.Force = true
	outcomes, err = p.recheck(ctx, reads)
	if err != nil || !slices.Equal(outcomes, []PurgeOutcome{PurgeDeleted, PurgeDeleted}) {
		t.Fatalf("re-check with --force: %v %v", outcomes, err)
	}
	wantKeysExist(t, c, false, "live", "pt")
}
