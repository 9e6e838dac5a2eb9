package keyspace

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/backup"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// freezeAfterSave saves, then changes one record and freezes the server:
// the re-check that follows gets no reply within the timeout, and the
// server runs it once thawed.
type freezeAfterSave struct {
	*backup.Writer
	t     *testing.T
	srv   *redistest.Server
	thaw  time.Duration
	after func()
}

func (f *freezeAfterSave) Save(recs []backup.Record) error {
	if err := f.Writer.Save(recs); err != nil {
		return err
	}
	f.after()
	if err := f.srv.Freeze(); err != nil {
		f.t.Fatal(err)
	}
	time.AfterFunc(f.thaw, func() { _ = f.srv.Thaw() })
	return nil
}

// A re-check whose reply is lost (a timeout, an interrupt closing the
// connection) may have run on the server: the file must not present the
// chunk's records as plainly deleted, or restore --replace writes the old
// value over a record the purge kept because it had changed.
func TestPurgeBackupUnknownOutcome(t *testing.T) {
	srv := redistest.New(t)
	t.Cleanup(func() { _ = srv.Thaw() })
	c, err := redistest.Dial(context.Background(), redisconn.ConnConfig{URL: srv.URL, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	admin := redistest.Connect(t, srv.URL).Client()
	// A first purge loads the re-check script: the frozen server must find
	// it cached when it runs the EVALSHA it queued.
	admin.Set(ctx, "warm", "COMPLETED", 0)
	if _, err := Purge(ctx, c, PurgeOptions{Pattern: "warm"}, nil); err != nil || admin.Exists(ctx, "warm").Val() != 0 {
		t.Fatalf("warm-up purge: %v", err)
	}
	admin.Set(ctx, "idem:gone", "COMPLETED", 0)
	admin.Set(ctx, "idem:moved", "COMPLETED", 0)

	path := filepath.Join(t.TempDir(), "b.ndjson")
	w, err := backup.Create(path, backup.Header{})
	if err != nil {
		t.Fatal(err)
	}
	fw := &freezeAfterSave{Writer: w, t: t, srv: srv, thaw: 900 * time.Millisecond,
		after: func() { admin.Set(ctx, "idem:moved", "FAILED", 0) }}
	sum, perr := Purge(ctx, c, PurgeOptions{Pattern: "idem:*", Backup: fw}, nil)
	if perr == nil {
		t.Fatal("purge: no error from a re-check that timed out")
	}
	// The summary accounts for every candidate: the chunk whose re-check
	// went unanswered is counted unknown, not left out.
	if sum.Unknown != 2 || sum.Matched != sum.Deleted+sum.Changed+sum.Unknown {
		t.Errorf("summary %+v: want the 2 records of the unanswered chunk as unknown, and matched = deleted + changed + unknown", sum)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Wait for the thawed server to run the re-check it had queued.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && admin.Exists(ctx, "idem:gone").Val() == 1 {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("purge: %v; gone %d moved %q", perr, admin.Exists(ctx, "idem:gone").Val(), admin.Get(ctx, "idem:moved").Val())
	if admin.Exists(ctx, "idem:gone").Val() != 0 || admin.Get(ctx, "idem:moved").Val() != "FAILED" {
		t.Skip("the server did not run the queued re-check: nothing to test")
	}
	recs, kept, _ := readBackup(t, path)
	if len(recs) != 2 {
		t.Fatalf("%d records saved", len(recs))
	}
	for _, k := range []string{"idem:gone", "idem:moved"} {
		if kept[k] != backup.KeptUnknown {
			t.Errorf("%s: marked %q, want %q (its re-check's outcome is unknown)", k, kept[k], backup.KeptUnknown)
		}
	}
}

// A record whose expiry passes between the client's look at the clock and
// the RESTORE (a slow pipeline, or in a cluster another node's clock) is not
// restored: RESTORE ... REPLACE ABSTTL with a past expiry deletes the key
// that exists and replies OK, so a newer record would be lost and counted
// as restored. The client's view of the clock is moved back to stand for
// that moment.
func TestRestoreExpiredOnTheServersClock(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	rc := c.Client()
	rc.Set(ctx, "k", "old", time.Hour)
	payload, err := rc.Dump(ctx, "k").Result()
	if err != nil {
		t.Fatal(err)
	}
	rc.Set(ctx, "k", "newer", 0)
	now, err := rc.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	rec := backup.Record{Key: "k", Payload: []byte(payload), PTTL: 10, ExpiresAt: now.UnixMilli() - 2000}
	for _, replace := range []bool{true, false} {
		r, err := NewRestorer(ctx, c, RestoreOptions{Replace: replace})
		if err != nil {
			t.Fatal(err)
		}
		r.clientNow = func(context.Context) (int64, error) { return now.UnixMilli() - 60_000, nil }
		outs, err := r.Restore(ctx, []backup.Record{rec})
		if err != nil || len(outs) != 1 || outs[0] != Expired {
			t.Errorf("replace %v: %v %v, want expired", replace, outs, err)
		}
		if v, err := rc.Get(ctx, "k").Result(); v != "newer" {
			t.Errorf("replace %v: k is %q (%v), want the newer value kept", replace, v, err)
		}
	}
}

// A dry run says what the run would do: with --replace a key that exists
// would be replaced, not skipped; a record whose fate the purge did not
// learn is never replaced, so it would be skipped.
func TestRestoreDryRunReplace(t *testing.T) {
	c, _ := redistest.Conn(t)
	ctx := context.Background()
	rc := c.Client()
	rc.Set(ctx, "a", "old", 0)
	payload, err := rc.Dump(ctx, "a").Result()
	if err != nil {
		t.Fatal(err)
	}
	rc.Set(ctx, "a", "newer", 0)
	rc.Set(ctx, "b", "newer", 0)
	recs := []backup.Record{{Key: "a", Payload: []byte(payload), PTTL: -1}, {Key: "b", Payload: []byte(payload), PTTL: -1},
		{Key: "c", Payload: []byte(payload), PTTL: -1}}
	r, err := NewRestorer(ctx, c, RestoreOptions{Replace: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := r.RestoreUnless(ctx, recs, []bool{false, true, false})
	if want := []RestoreOutcome{WouldReplace, Existing, WouldRestore}; err != nil || !slices.Equal(outs, want) {
		t.Errorf("dry run --replace: %v %v, want %v", outs, err, want)
	}
	if v := rc.Get(ctx, "a").Val(); v != "newer" {
		t.Errorf("a dry run wrote: a is %q", v)
	}
}
