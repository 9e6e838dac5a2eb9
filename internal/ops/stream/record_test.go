package stream

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestParseEntryID(t *testing.T) {
	for in, want := range map[string]string{
		"5": "5-0", "5-1": "5-1", "005-01": "5-1", "+5": "5-0", " 5": "5-0",
		"18446744073709551615-18446744073709551615": "18446744073709551615-18446744073709551615",
		"bad": "", "1-": "", "-1": "", "-": "", "+": "", "5-*": "", "": "", "1-2-3": "", "-5-1": "",
		"18446744073709551616": "", strings.Repeat("1", 128): "",
	} {
		got, ok := ParseEntryID(in)
		if ok != (want != "") || got != want {
			t.Errorf("ParseEntryID(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// bothModes runs f on the server under test emulated, and natively on
// Redis 8.6.3 (the reference).
func bothModes(t *testing.T, f func(t *testing.T, h *streamHarness)) {
	t.Run("emulated", func(t *testing.T) {
		t.Parallel()
		h, _ := tokenHarness(t)
		f(t, h)
	})
	t.Run("native", func(t *testing.T) {
		t.Parallel()
		srv := redistest.NewNative(t)
		s, err := NewStreams(redistest.Connect(t, srv.URL), ModeNative)
		if err != nil {
			t.Fatal(err)
		}
		f(t, newHarness(t, s, srv.URL))
	})
}

// RecordIID, the ops-level XIDMPRECORD the migration between modes uses:
// the same effects and errors (with exit codes) in both modes.
func TestRecordIID(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, h *streamHarness) {
		ctx := context.Background()
		s := h.key("s")
		str := h.key("str")
		h.rdb.Set(ctx, str, "x", 0)
		for _, c := range []struct {
			stream, pid, iid, id string
			code                 int
			want                 string
		}{
			{s, "p", "i", "bad", exit.Usage, ErrInvalidStreamID},
			{s, "", "i", "1-1", exit.Usage, ErrRecordEmptyPID},
			{s, "p", "", "1-1", exit.Usage, ErrRecordEmptyIID},
			{s, "p", "i", "1-1", exit.NotFound, "no such key"},
			{str, "p", "i", "1-1", exit.Data, "WRONGTYPE"},
		} {
			err := h.s.RecordIID(ctx, c.stream, c.pid, c.iid, c.id)
			if exit.Code(err) != c.code || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("record %q %q %q %q: %v (code %d), want %d %q", c.stream, c.pid, c.iid, c.id, err, exit.Code(err), c.code, c.want)
			}
		}
		id1 := h.plainXAdd(t, s)
		id2 := h.plainXAdd(t, s)
		if err := h.s.RecordIID(ctx, s, "p", "i", "1-1"); exit.Code(err) != exit.NotFound || !strings.Contains(err.Error(), ErrRecordNoEntry) {
			t.Errorf("record of a missing entry: %v", err)
		}
		for range 2 {
			if err := h.s.RecordIID(ctx, s, "p", "i", id1); err != nil {
				t.Fatalf("record: %v", err)
			}
		}
		if err := h.s.RecordIID(ctx, s, "p", "i", id2); exit.Code(err) != exit.Data || !strings.Contains(err.Error(), ErrRecordConflict) {
			t.Errorf("record of the pair with another ID: %v", err)
		}
		h.mustDup(t, s, "p", "i", id1)
		h.wantCounters(t, s, counters{1, 1, 1, 1})
		h.rdb.XDel(ctx, s, id2)
		if err := h.s.RecordIID(ctx, s, "q", "i", id2); exit.Code(err) != exit.NotFound {
			t.Errorf("record of a deleted entry: %v", err)
		}
	})
}

// A pair recorded for an entry older than the pid's newest iid sits
// behind it: Redis expires each pid's iids from the front and stops at
// the first live one, so the old pair is tracked while the newer lives,
// and both go once it expires.
func TestRecordIIDOutOfOrderExpiry(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, h *streamHarness) {
		ctx := context.Background()
		s := h.key("s")
		if err := h.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s, ID: "1-1", Values: []string{"f", "v"}}).Err(); err != nil {
			t.Fatal(err)
		}
		h.mustNew(t, s, "p", "first") // the state starts (100 s)
		h.cfgset(t, s, 1, 0)
		h.mustNew(t, s, "p", "live")
		if err := h.s.RecordIID(ctx, s, "p", "old", "1-1"); err != nil {
			t.Fatal(err)
		}
		h.wantCounters(t, s, counters{1, 2, 3, 0})
		h.mustDup(t, s, "p", "old", "1-1")
		// Past the duration (and a cron cycle of Redis's).
		deadline := time.Now().Add(5 * time.Second)
		for h.counters(t, s).tracked != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("still tracked after %s: %+v", 5*time.Second, h.counters(t, s))
			}
			time.Sleep(100 * time.Millisecond)
		}
		h.mustNew(t, s, "p", "old")
	})
}

// The record script's checks: each trips before any write.
func TestRecordScriptChecksBeforeWriting(t *testing.T) {
	t.Parallel()
	f := newChecksFixture(t)
	rdb := f.h.rdb
	ctx := context.Background()
	id := f.h.plainXAdd(t, f.stream)
	call, err := f.h.s.RecordCall(f.stream, "q", "new", id)
	if err != nil {
		t.Fatal(err)
	}
	keys, args := call.Keys, call.Args
	with := func(i int, v any) []any {
		a := append([]any(nil), args...)
		a[i] = v
		return a
	}
	for _, tr := range []struct {
		name string
		keys []string
		args []any
		want string
	}{
		{"a key too few", keys[:4], args, "malformed"},
		{"an argument too few", keys, args[:len(args)-1], "malformed"},
		{"an ID of another form", keys, with(5, "x"), "malformed"},
		{"an empty pid", keys, with(3, ""), ErrRecordEmptyPID},
		{"an empty iid", keys, with(4, ""), ErrRecordEmptyIID},
		{"a missing entry", keys, with(5, "1-1"), ErrRecordNoEntry},
		{"a missing stream", append([]string{f.h.key("nope")}, keys[1:]...), args, "no such key"},
		{"the pair with another ID", keys, with(4, "b"), ErrRecordConflict},
		{"another stream's state", keys, with(2, "other"), "IDMPCONFLICT"},
	} {
		before := serverDump(t, rdb)
		_, err := f.runRaw(recordScript.Script, tr.keys, tr.args...)
		if err == nil || !strings.Contains(err.Error(), tr.want) {
			t.Errorf("%s: %v, want %q", tr.name, err, tr.want)
		}
		wantUnchanged(t, tr.name, before, rdb)
	}
	// Each key of another type.
	for _, k := range []string{f.stream, f.l.Meta, f.l.PIDs, f.l.IDs("q"), f.l.Order("q")} {
		saved, err := rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		rdb.Del(ctx, k)
		rdb.Set(ctx, k, "x", 0)
		before := serverDump(t, rdb)
		if _, err := f.runRaw(recordScript.Script, keys, args...); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			t.Errorf("%s of another type: %v, want WRONGTYPE", k, err)
		}
		wantUnchanged(t, k+" of another type", before, rdb)
		rdb.Del(ctx, k)
		if err := rdb.RestoreReplace(ctx, k, 0, saved).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Every permission its writes need.
	for _, cmd := range []string{"rpush", "ltrim", "hset", "hdel", "hincrby", "sadd", "srem", "persist", "xrange"} {
		user := "rec-no-" + cmd
		if err := rdb.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-"+cmd).Err(); err != nil {
			t.Fatal(err)
		}
		uc := redis.NewClient(&redis.Options{Network: "unix", Addr: strings.TrimPrefix(f.srv.URL, "unix://"), Username: user, Password: "pw"})
		before := serverDump(t, rdb)
		_, err := rawRun(recordScript.Script, ctx, uc, keys, args...).Result()
		uc.Close()
		if exit.Classify(err) != exit.Permission {
			t.Errorf("without %s: %v, want a permission error", cmd, err)
		}
		wantUnchanged(t, "without "+cmd, before, rdb)
	}
	// And it goes through once nothing trips it.
	if v, err := f.runRaw(recordScript.Script, keys, args...); err != nil || fmt.Sprint(v) != "OK" {
		t.Fatalf("record: %v, %v", v, err)
	}
	if got := rdb.HGet(ctx, f.l.IDs("q"), "new").Val(); got != id {
		t.Fatalf("recorded %q, want %q", got, id)
	}
}
