package stream

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/batch"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The native batch's chunk script (lua/stream_native_batch.lua), on a
// Redis 8.6 server beside the server under test (redistest.NewNative).

// nativeConn starts a native-IDMP server for one test and connects to it.
func nativeConn(t *testing.T, config ...string) (*redisconn.Conn, *redistest.Server) {
	t.Helper()
	srv := redistest.NewNative(t, config...)
	return redistest.Connect(t, srv.URL), srv
}

// reqLines is a batch input of requests, nil for a blank line.
type reqLines struct {
	reqs []*AddRequest
	next int
}

func (in *reqLines) Next() (int64, []byte, error) {
	if in.next == len(in.reqs) {
		return 0, nil, io.EOF
	}
	in.next++
	r := in.reqs[in.next-1]
	if r == nil {
		return int64(in.next), nil, nil
	}
	return int64(in.next), []byte(fmt.Sprintf("%s %s %v %q", r.PID, r.IID, r.Auto, r.Fields)), nil
}

func (in *reqLines) Parse(n int64, _ []byte, req *AddRequest) (bool, error) {
	r := in.reqs[n-1]
	if r == nil {
		return false, nil
	}
	*req = *r
	req.Fields = append([]string(nil), r.Fields...)
	return true, nil
}

func (in *reqLines) Ready() bool { return true }

// collectBatch runs RunBatch and returns every result, in order.
func collectBatch(s *Streams, spec BatchSpec, in BatchInput) ([]BatchResult, BatchSummary, error) {
	var out []BatchResult
	sum, err := s.RunBatch(context.Background(), spec, in, func(r BatchResult) error {
		out = append(out, r)
		return nil
	})
	return out, sum, err
}

// exactAdds adds the lines of reqs (nil: a blank line) one at a time,
// each a MULTI/EXEC that reads XINFO around its add (tx), as batch
// results: the oracle the script's outcomes are held to.
func exactAdds(s *Streams, reqs []*AddRequest) ([]BatchResult, error) {
	var out []BatchResult
	for i, r := range reqs {
		if r == nil {
			continue
		}
		res, err := s.add1(context.Background(), *r)
		if err != nil {
			return out, err
		}
		out = append(out, BatchResult{Line: int64(i + 1), AddResult: res})
	}
	return out, nil
}

// streamEntries is every entry's fields and values, in order.
func streamEntries(t *testing.T, rdb redis.UniversalClient, stream string) string {
	t.Helper()
	var b strings.Builder
	for _, m := range rdb.Do(context.Background(), "XRANGE", stream, "-", "+").Val().([]any) {
		fmt.Fprintf(&b, "%q\n", m.([]any)[1])
	}
	return b.String()
}

// streamCounters is what XINFO says of a stream's adds and tracking.
func streamCounters(t *testing.T, rdb redis.UniversalClient, stream string) string {
	t.Helper()
	v, err := rdb.XInfoStream(context.Background(), stream).Result()
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("length %d, entries-added %d, iids-added %d, iids-duplicates %d, iids-tracked %d, pids-tracked %d",
		v.Length, v.EntriesAdded, v.IIDsAdded, v.IIDsDuplicates, v.IIDsTracked, v.PIDsTracked)
}

// The chunk script and the MULTI/EXEC path tell each add as XINFO read
// around every add does (AddBatch, one MULTI/EXEC of [XINFO, (XADD,
// XINFO)...]): the same outcome for every line, whatever the stream went
// through before (originals deleted or trimmed, an ID ahead of the
// clock, its last ID set back, the stream deleted and made again), with
// several chunks and sends in flight, every shape of line, and trimming.
func TestNativeBatchAgreesWithMulti(t *testing.T) {
	t.Parallel()
	conn, _ := nativeConn(t)
	rdb := conn.Client()
	ctx := context.Background()
	s, err := NewStreams(conn, ModeNative)
	if err != nil {
		t.Fatal(err)
	}
	add := func(stream, pid, iid string) string {
		return rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, ProducerID: pid, IdempotentID: iid, Values: []string{"f", "old"}}).Val()
	}
	do := func(args ...any) {
		if err := rdb.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	req := func(iid string, fields ...string) *AddRequest {
		if len(fields) == 0 {
			fields = []string{"f", "v-" + iid}
		}
		return &AddRequest{PID: "p", IID: iid, Fields: fields}
	}
	repeats := func(iids ...string) []*AddRequest {
		var out []*AddRequest
		for _, i := range iids {
			out = append(out, req(i))
		}
		return out
	}
	for _, c := range []struct {
		name  string
		tmpl  AddRequest
		setup func(stream string)
		lines []*AddRequest
	}{
		{name: "repeats in and across chunks and sends", lines: repeats("a", "b", "a", "c", "b", "d", "a", "e", "f", "e", "g", "a", "h")},
		{name: "blank lines", lines: []*AddRequest{req("a"), nil, req("a"), nil, nil, req("b"), req("a")}},
		{name: "auto", tmpl: AddRequest{Auto: true}, lines: []*AddRequest{
			{PID: "p", Auto: true, Fields: []string{"f", "1"}}, {PID: "p", Auto: true, Fields: []string{"f", "1"}},
			{PID: "p", Auto: true, Fields: []string{"f", "2"}}, {PID: "p", Auto: true, Fields: []string{"f", "1"}},
			{PID: "q", Auto: true, Fields: []string{"f", "1"}}}},
		{name: "pids of their own", lines: []*AddRequest{req("a"), {PID: "q", IID: "a", Fields: []string{"f", "1"}},
			req("a"), {PID: "q", IID: "a", Fields: []string{"f", "2"}}, {PID: "r", IID: "b", Fields: []string{"x", "1", "y", "2"}}}},
		{name: "shapes", lines: []*AddRequest{req("a", "f", "1", "g", "2"), req("b", "g", "1", "f", "2"), req("a", "f", "1"),
			req("c", "f", "1", "g", "2", "h", "3"), req("b", "f", "1", "g", "2"), req("d", "f", "1", "f", "2")}},
		{name: "two fields named alike", lines: []*AddRequest{req("a", "amount", "1", "currency", "EUR"), req("b", "amount", "2", "currency", "EUR"),
			req("a", "amount", "3", "currency", "USD"), req("c", "amount", "4", "currency", "EUR")}},
		{name: "maxlen", tmpl: AddRequest{MaxLen: 2}, lines: repeats("a", "b", "c", "a", "d", "b", "a")},
		{name: "maxlen approx limit", tmpl: AddRequest{MaxLen: 2, Approx: true, Limit: 1}, lines: repeats("a", "b", "a", "c")},
		{name: "minid", tmpl: AddRequest{MinID: "1-0"}, lines: repeats("a", "b", "a")},
		{name: "nomkstream on a stream", tmpl: AddRequest{NoMkStream: true}, setup: func(s string) { add(s, "p", "a") },
			lines: repeats("a", "b", "a")},
		{name: "an original deleted", setup: func(s string) {
			do("XDEL", s, add(s, "p", "a"))
			add(s, "p", "b")
		}, lines: repeats("a", "b", "c", "a")},
		{name: "originals trimmed", setup: func(s string) {
			add(s, "p", "a")
			add(s, "p", "b")
			do("XTRIM", s, "MAXLEN", "0")
		}, lines: repeats("a", "c", "b")},
		{name: "an ID ahead of the clock", setup: func(s string) {
			do("XADD", s, "99999999999999-5", "f", "v")
			add(s, "p", "a")
		}, lines: repeats("a", "b", "b", "c", "a")},
		{name: "the last ID set forward", setup: func(s string) {
			add(s, "p", "a")
			do("XSETID", s, "99999999999999-18446744073709551614")
		}, lines: repeats("a", "b", "c", "b", "a")},
		{name: "the last ID set back", setup: func(s string) {
			add(s, "p", "a")
			do("XTRIM", s, "MAXLEN", "0")
			do("XSETID", s, "0-1")
			time.Sleep(3 * time.Millisecond) // not in the millisecond of a's original
		}, lines: repeats("a", "b", "a", "c")},
		{name: "the stream deleted", setup: func(s string) {
			add(s, "p", "a")
			do("DEL", s)
		}, lines: repeats("a", "a", "b")},
		{name: "a long value among short ones", lines: []*AddRequest{req("a"), req("b", "f", strings.Repeat("v", 300)), req("c"),
			req("d"), req("a"), req("e", "f", strings.Repeat("w", 254)), req("b")}},
		{name: "auto, one pid", tmpl: AddRequest{Auto: true}, lines: []*AddRequest{
			{PID: "p", Auto: true, Fields: []string{"f", "1"}}, {PID: "p", Auto: true, Fields: []string{"f", "1"}},
			{PID: "p", Auto: true, Fields: []string{"f", "2"}}, {PID: "p", Auto: true, Fields: []string{"f", "1", "g", "2"}}}},
		{name: "fields not named alike, one pid", lines: []*AddRequest{req("a", "f", "1", "g", "2"), req("b", "g", "1", "f", "2"),
			req("a", "h", "1", "i", "2"), req("c", "f", "1", "f", "2")}},
		{name: "IDMP-MAXSIZE 2", setup: func(s string) {
			add(s, "p", "z")
			do("XCFGSET", s, "IDMP-MAXSIZE", "2")
		}, lines: repeats("a", "b", "c", "a", "c", "b", "z")},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got [2][]BatchResult
			var counts, entries [2]string
			for k, path := range []string{"script", "exact"} {
				stream := strings.ReplaceAll(c.name, " ", "-") + "-" + path
				if c.setup != nil {
					c.setup(stream)
				}
				tmpl := c.tmpl
				tmpl.Stream, tmpl.PID = stream, "p"
				reqs := make([]*AddRequest, len(c.lines))
				for i, r := range c.lines {
					if r != nil {
						q := *r
						q.Stream, q.NoMkStream, q.MaxLen, q.MinID, q.Approx, q.Limit = stream, tmpl.NoMkStream, tmpl.MaxLen, tmpl.MinID, tmpl.Approx, tmpl.Limit
						reqs[i] = &q
					}
				}
				spec := BatchSpec{Template: tmpl, ID: "b", Chunk: 3, Window: 2}
				var err error
				switch path {
				case "script":
					got[k], _, err = collectBatch(s, spec, &reqLines{reqs: reqs})
				default:
					got[k], err = exactAdds(s, reqs)
				}
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				counts[k] = streamCounters(t, rdb, stream)
				entries[k] = streamEntries(t, rdb, stream)
			}
			for k, path := range []string{"the script"} {
				if len(got[k]) != len(got[1]) {
					t.Fatalf("%d results by %s, %d by XINFO around each add", len(got[k]), path, len(got[1]))
				}
				for i := range got[k] {
					a, b := got[k][i], got[1][i]
					if a.Line != b.Line || a.Duplicate != b.Duplicate || a.OriginalExists != b.OriginalExists || a.IID != b.IID || a.ReplyLost || a.Mode != ModeNative {
						t.Errorf("line %d: %s %+v, XINFO around each add %+v", b.Line, path, a, b)
					}
				}
			}
			// New entries' IDs grow; a duplicate of a line added in this run
			// replies that line's ID.
			last := map[string]string{}
			prev := ""
			for i, a := range got[0] {
				r := c.lines[a.Line-1]
				key := r.PID + "\x00" + r.IID + "\x00" + strings.Join(r.Fields, "\x00")
				if !r.Auto {
					key = r.PID + "\x00" + r.IID
				}
				switch {
				case !a.Duplicate && prev != "" && !idLess(prev, a.ID):
					t.Errorf("result %d (line %d): new entry %s after %s", i, a.Line, a.ID, prev)
				case a.Duplicate && last[key] != "" && a.ID != last[key]:
					t.Errorf("result %d (line %d): a duplicate of %s replied %s", i, a.Line, last[key], a.ID)
				}
				if !a.Duplicate {
					prev, last[key] = a.ID, a.ID
				}
			}
			if entries[0] != entries[1] {
				t.Errorf("the entries after the script:\n%s\nafter XINFO around each add:\n%s", entries[0], entries[1])
			}
			if counts[0] != counts[1] {
				t.Errorf("the stream after the script: %s; after XINFO around each add: %s", counts[0], counts[1])
			}
		})
	}
}

// nativeTestRun is a run of batch id on stream, for calling the chunk
// script as a run does (nativeBatchCall).
func nativeTestRun(t *testing.T, s *Streams, stream, id string) *batchRun {
	t.Helper()
	layout, err := idmp.StateKeys(stream, false)
	if err != nil {
		t.Fatal(err)
	}
	spec := BatchSpec{Template: AddRequest{Stream: stream, PID: "p"}, ID: id, TTL: time.Hour}
	return &batchRun{s: s, spec: spec, layout: layout, key: layout.Batch("p", id), digest: sha256.New(), run: newRunID()}
}

// nativeChunkOf is a chunk of reqs after line from, a line each.
func nativeChunkOf(from int64, reqs ...AddRequest) *chunk {
	c := &chunk{from: from, to: from + int64(len(reqs)), digest: "d", reqs: reqs}
	for i := range reqs {
		c.lines = append(c.lines, from+int64(i)+1)
	}
	return c
}

// Refusals and errors of the chunk script leave the server as it was:
// every check runs before the first write.
func TestNativeBatchScriptChecksBeforeWriting(t *testing.T) {
	t.Parallel()
	conn, srv := nativeConn(t)
	rdb := conn.Client()
	ctx := context.Background()
	s := streamsOf(conn, ModeNative, nil)
	req := func(stream, iid string, fields ...string) AddRequest {
		if len(fields) == 0 {
			fields = []string{"f", "v"}
		}
		return AddRequest{Stream: stream, PID: "p", IID: iid, Fields: fields}
	}
	run := func(c redis.Scripter, r *batchRun, ch *chunk, edit func(keys []string, args []any) ([]string, []any)) (any, error) {
		call, _ := r.nativeBatchCall(ch)
		keys, args := call.Keys, call.Args
		if edit != nil {
			keys, args = edit(append([]string(nil), keys...), append([]any(nil), args...))
		}
		return rawRun(nativeAddScript.Script, ctx, c, keys, args...).Result()
	}
	// A stream with a committed chunk: its record stands at line 1.
	r := nativeTestRun(t, s, "s", "b")
	if v, err := run(rdb, r, nativeChunkOf(0, req("s", "a")), nil); err != nil {
		t.Fatalf("the first chunk: %v, %v", v, err)
	}
	next := nativeChunkOf(1, req("s", "x"), req("s", "y"))
	big := make([]string, 0, idmp.MaxEmulatedFieldArgs+2)
	for i := range idmp.MaxEmulatedFieldArgs/2 + 1 {
		big = append(big, "f"+strconv.Itoa(i), "v")
	}
	set := func(i int, v any) func([]string, []any) ([]string, []any) {
		return func(k []string, a []any) ([]string, []any) {
			a[i] = v
			return k, a
		}
	}
	type trip struct {
		name  string
		setup func()
		run   func() (any, error)
		want  string // in the error, or the reply
		after func()
	}
	trips := []trip{
		{name: "a key too few", run: func() (any, error) {
			return run(rdb, r, next, func(k []string, a []any) ([]string, []any) { return k[:3], a })
		}, want: "malformed"},
		{name: "an argument too few", run: func() (any, error) {
			return run(rdb, r, next, func(k []string, a []any) ([]string, []any) { return k, a[:len(a)-1] })
		}, want: "malformed"},
		{name: "an argument too many", run: func() (any, error) {
			return run(rdb, r, next, func(k []string, a []any) ([]string, []any) { return k, append(a, "x") })
		}, want: "malformed"},
		{name: "no TTL for the record", run: func() (any, error) { return run(rdb, r, next, set(nativeAddScript.ArgIndex("TTL"), "")) }, want: "malformed"},
		// The items packed (one pid, short strings): their lengths must
		// cut the strings exactly.
		{name: "packed: a length too few", run: func() (any, error) {
			return run(rdb, r, next, func(k []string, a []any) ([]string, []any) {
				a[len(a)-3] = a[len(a)-3].([]byte)[1:] // the defaults come last
				return k, a
			})
		}, want: "malformed"},
		{name: "packed: a byte too many", run: func() (any, error) {
			return run(rdb, r, next, func(k []string, a []any) ([]string, []any) {
				a[len(a)-4] = append(append([]byte(nil), a[len(a)-4].([]byte)...), 'x')
				return k, a
			})
		}, want: "malformed"},
		{name: "packed: a length of 255", run: func() (any, error) {
			return run(rdb, r, next, func(k []string, a []any) ([]string, []any) {
				l := append([]byte(nil), a[len(a)-3].([]byte)...)
				l[0] = 255
				a[len(a)-3] = l
				return k, a
			})
		}, want: "malformed"},
		{name: "no pids", run: func() (any, error) { return run(rdb, r, next, set(nativeAddScript.ArgIndex("NPIDs"), "0")) }, want: "malformed"},
		{name: "an empty pid", run: func() (any, error) { return run(rdb, r, next, set(nativeAddScript.ArgIndex("NPIDs")+1, "")) }, want: "non-empty producer ID"},
		{name: "an empty iid", run: func() (any, error) {
			return run(rdb, r, nativeChunkOf(1, req("s", "x"), req("s", "")), nil)
		}, want: "non-empty idempotent ID"},
		{name: "too many fields for unpack", run: func() (any, error) {
			return run(rdb, r, nativeChunkOf(1, req("s", "x"), req("s", "big", big...)), nil)
		}, want: "[F 2 7802]"},
		{name: "the record moved on", run: func() (any, error) {
			return run(rdb, r, nativeChunkOf(0, req("s", "x")), nil)
		}, want: "[P 1]"},
		{name: "emulated state of another type", setup: func() { rdb.Set(ctx, r.layout.Meta, "x", 0) }, run: func() (any, error) {
			return run(rdb, r, next, nil)
		}, want: "WRONGTYPE", after: func() { rdb.Del(ctx, r.layout.Meta) }},
		{name: "a record of another type", setup: func() { rdb.Set(ctx, r.layout.Batch("p", "b2"), "x", 0) }, run: func() (any, error) {
			return run(rdb, nativeTestRun(t, s, "s", "b2"), nativeChunkOf(0, req("s", "x")), nil)
		}, want: "WRONGTYPE"},
		{name: "an index of another type", setup: func() {
			l, _ := idmp.StateKeys("s2", false)
			rdb.Set(ctx, l.Batches, "x", 0)
		}, run: func() (any, error) {
			return run(rdb, nativeTestRun(t, s, "s2", "b"), nativeChunkOf(0, req("s2", "x")), nil)
		}, want: "WRONGTYPE"},
		{name: "a stream of another type", setup: func() { rdb.Set(ctx, "s3", "x", 0) }, run: func() (any, error) {
			return run(rdb, nativeTestRun(t, s, "s3", "b"), nativeChunkOf(0, req("s3", "x")), nil)
		}, want: "WRONGTYPE"},
		{name: "NOMKSTREAM and no stream", run: func() (any, error) {
			q := req("s4", "x")
			q.NoMkStream = true
			return run(rdb, nativeTestRun(t, s, "s4", "b"), nativeChunkOf(0, q), nil)
		}, want: "[ n ]"},
	}
	for _, deny := range []string{"xadd", "xinfo", "xrange", "hset", "hdel", "persist", "zadd"} {
		user := "no" + deny
		if _, err := srv.Do("ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-"+deny); err != nil {
			t.Fatal(err)
		}
		as := redistest.Connect(t, strings.Replace(srv.URL, "unix://", "unix://"+user+":pw@", 1)).Client()
		trips = append(trips, trip{name: "-" + deny, run: func() (any, error) { return run(as, r, next, nil) },
			want: "NOPERM this user has no permission to run the " + strings.ToUpper(deny)})
	}
	for _, tr := range trips {
		if tr.setup != nil {
			tr.setup()
		}
		before := serverDump(t, rdb)
		v, err := tr.run()
		got := fmt.Sprint(v)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tr.want) {
			t.Errorf("%s: %q, want %q", tr.name, got, tr.want)
		}
		wantUnchanged(t, tr.name, before, rdb)
		if tr.after != nil {
			tr.after()
		}
	}
	// And the next chunk goes.
	if v, err := run(rdb, r, next, nil); err != nil || fmt.Sprint(v) == "" {
		t.Fatalf("the next chunk: %v, %v", v, err)
	}
	if n := rdb.XLen(ctx, "s").Val(); n != 3 {
		t.Errorf("XLEN %d, want 3", n)
	}
}

// A duplicate the ID rule takes for a new entry (the stream's last ID set
// back below a trimmed original, in the millisecond of the chunk, which a
// MULTI/EXEC holds still): the counters do not agree, and the reply says
// so ('u'); the add and the record's move stand.
func TestNativeBatchOutcomesNotConfirmed(t *testing.T) {
	t.Parallel()
	conn, _ := nativeConn(t)
	rdb := conn.Client()
	ctx := context.Background()
	s := streamsOf(conn, ModeNative, nil)
	r := nativeTestRun(t, s, "s", "b")
	// Loaded (the MULTI below runs it with EVALSHA): a pipe loads it.
	pipe, err := conn.OpenPipe(ctx, "s", "", nativeAddScript.Script)
	if err != nil {
		t.Fatal(err)
	}
	pipe.Close()
	call, iids := r.nativeBatchCall(nativeChunkOf(0, AddRequest{Stream: "s", PID: "p", IID: "a", Fields: []string{"f", "v"}}))
	var reply *redis.Cmd
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: "s", ProducerID: "p", IdempotentID: "a", Values: []string{"f", "v"}})
		p.XTrimMaxLen(ctx, "s", 0)
		p.Do(ctx, "XSETID", "s", "0-1")
		reply = p.Do(ctx, call.Command(false)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	v := reply.Val()
	res, perr := parseNativeBatchReplyT(v, iids, 1)
	var unknown *errOutcomesUnknown
	if !errors.As(perr, &unknown) || unknown.then != nil || len(res) != 1 {
		t.Fatalf("reply %v: %v, %v", v, res, perr)
	}
	if line := rdb.HGet(ctx, r.key, "line").Val(); line != "1" {
		t.Errorf("the record stands at line %q, want 1", line)
	}
	if got := streamCounters(t, rdb, "s"); !strings.Contains(got, "iids-duplicates 1") {
		t.Errorf("the stream: %s", got)
	}
}

// wantEveryLineOnce checks a run's results and its stream: lines 1 to n,
// each once and in order, and n entries.
func wantEveryLineOnce(t *testing.T, rdb redis.UniversalClient, stream string, got []BatchResult, n int) {
	t.Helper()
	for i, r := range got {
		if r.Line != int64(i+1) {
			t.Fatalf("result %d is line %d", i, r.Line)
		}
	}
	if len(got) != n {
		t.Errorf("%d results, want %d", len(got), n)
	}
	if x := rdb.XLen(context.Background(), stream).Val(); x != int64(n) {
		t.Errorf("XLEN %d, want %d", x, n)
	}
}

// Emulated IDMP state on the stream (from the start, or made while chunks
// are in flight): the native chunk script guards it inline, every line
// once. A user who may not run scripts (or EVALSHA) is refused (77), with
// nothing written.
func TestNativeBatchPaths(t *testing.T) {
	t.Parallel()
	conn, srv := nativeConn(t)
	rdb := conn.Client()
	ctx := context.Background()
	for _, c := range []struct {
		name, user string
		state      bool // emulated state made at the start
		midway     bool // the emulated state is made after 40 lines
	}{
		{name: "emulated state", state: true},
		{name: "emulated state made midway", midway: true},
		{name: "no scripting", user: "-@scripting"},
		{name: "no EVALSHA", user: "-evalsha"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stream := strings.ReplaceAll(c.name, " ", "-")
			cn := conn
			if c.user != "" {
				user := "u1"
				if c.user == "-evalsha" {
					user = "u2"
				}
				if _, err := srv.Do("ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", c.user); err != nil {
					t.Fatal(err)
				}
				cn = redistest.Connect(t, strings.Replace(srv.URL, "unix://", "unix://"+user+":pw@", 1))
			}
			l, _ := idmp.StateKeys(stream, false)
			if c.state {
				rdb.HSet(ctx, l.Meta, "stream", stream)
			}
			tmpl := AddRequest{Stream: stream, PID: "p"}
			spec := BatchSpec{Template: tmpl, ID: "b", Chunk: 10, Window: 2}
			if c.user != "" {
				_, _, err := collectBatch(streamsOf(cn, ModeNative, nil), spec, &iidLines{lines: iids("i", 200), tmpl: tmpl})
				if exit.Code(err) != exit.Permission {
					t.Fatalf("native without scripts: %v (exit %d)", err, exit.Code(err))
				}
				if n := rdb.XLen(ctx, stream).Val(); n != 0 {
					t.Fatalf("refused, yet %d entries", n)
				}
				return
			}
			s := streamsOf(cn, ModeNative, nil)
			in := newGatedLines(iids("i", 200), tmpl)
			type outcome struct {
				got []BatchResult
				sum BatchSummary
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				got, sum, err := collectBatch(s, spec, in)
				done <- outcome{got, sum, err}
			}()
			if c.midway {
				in.release(40)
				for deadline := time.Now().Add(10 * time.Second); rdb.HGet(ctx, l.Batch("p", "b"), "line").Val() != "40"; {
					if time.Now().After(deadline) {
						t.Fatal("the first 40 lines were not committed")
					}
					time.Sleep(5 * time.Millisecond)
				}
				rdb.HSet(ctx, l.Meta, "stream", stream)
			}
			in.release(200)
			var o outcome
			select {
			case o = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the run did not end")
			}
			if o.err != nil {
				t.Fatal(o.err)
			}
			if o.sum.Lines != 200 || o.sum.Added != 200 {
				t.Errorf("summary %+v", o.sum)
			}
			wantEveryLineOnce(t, rdb, stream, o.got, 200)
		})
	}
}

// A line with more field/value arguments than one XADD from Lua takes is
// refused as a malformed line is: the lines before it are committed, and
// the error says to add it with a single xadd (which takes it natively).
func TestNativeBatchLineTooBigForScript(t *testing.T) {
	t.Parallel()
	conn, _ := nativeConn(t)
	rdb := conn.Client()
	s := streamsOf(conn, ModeNative, nil)
	big := make([]string, 0, idmp.MaxEmulatedFieldArgs+2)
	for i := range idmp.MaxEmulatedFieldArgs/2 + 1 {
		big = append(big, "f"+strconv.Itoa(i), "v")
	}
	var reqs []*AddRequest
	for i := 1; i <= 30; i++ {
		r := &AddRequest{Stream: "s", PID: "p", IID: "i" + strconv.Itoa(i), Fields: []string{"f", strconv.Itoa(i)}}
		if i == 15 {
			r.Fields = big
		}
		reqs = append(reqs, r)
	}
	got, sum, err := collectBatch(s, BatchSpec{Template: AddRequest{Stream: "s", PID: "p"}, ID: "b", Chunk: 4, Window: 2}, &reqLines{reqs: reqs})
	var le *batch.LineError
	var e *exit.Error
	if !errors.As(err, &le) || le.Line != 15 || !errors.As(le.Err, &e) || !strings.Contains(e.Hint, "single xadd") || sum.LastLine != 14 {
		t.Fatalf("%v (%+v)", err, sum)
	}
	wantEveryLineOnce(t, rdb, "s", got, 14)
	if r, err := s.add1(context.Background(), *reqs[14]); err != nil || r.Duplicate {
		t.Fatalf("a single add of line 15: %+v, %v", r, err)
	}
}

// An add that fails mid-chunk (the stream's IDs exhausted) stops the run
// there: the lines before it are committed and reported, the record counts
// them, and the same run again resumes at the failing line.
func TestNativeBatchStopsMidChunk(t *testing.T) {
	t.Parallel()
	conn, _ := nativeConn(t)
	rdb := conn.Client()
	ctx := context.Background()
	s := streamsOf(conn, ModeNative, nil)
	if err := rdb.Do(ctx, "XADD", "s", "18446744073709551615-18446744073709551612", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	tmpl := AddRequest{Stream: "s", PID: "p"}
	for run := 1; run <= 2; run++ {
		got, sum, err := collectBatch(s, BatchSpec{Template: tmpl, ID: "b", Chunk: 10}, &iidLines{lines: iids("i", 6), tmpl: tmpl})
		if err == nil || !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), "exhausted") {
			t.Fatalf("run %d: %v", run, err)
		}
		want := 3
		if run == 2 {
			want = 0
		}
		if len(got) != want || sum.LastLine != 3 {
			t.Errorf("run %d: %d results, summary %+v", run, len(got), sum)
		}
		l, _ := idmp.StateKeys("s", false)
		if line := rdb.HGet(ctx, l.Batch("p", "b"), "line").Val(); line != "3" {
			t.Errorf("run %d: the record stands at line %q, want 3", run, line)
		}
		if n := rdb.XLen(ctx, "s").Val(); n != 4 {
			t.Errorf("run %d: XLEN %d, want 4", run, n)
		}
	}
}

// A chunk whose outcomes the server's counters did not confirm (the
// script's 'u') is committed: its lines are reported as a lost reply's
// are, and the run goes on.
func TestNativeBatchReceivesUnconfirmedOutcomes(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	ctx := context.Background()
	s := streamsOf(conn, ModeNative, nil)
	r := nativeTestRun(t, s, "s", "b")
	r.results = make(chan []BatchResult, 10)
	c := nativeChunkOf(0, AddRequest{Stream: "s", PID: "p", IID: "a", Fields: []string{"f", "v"}},
		AddRequest{Stream: "s", PID: "p", IID: "b", Fields: []string{"f", "v"}})
	c.parse = func(v any) ([]AddResult, error) { return parseNativeReply(v, []string{"a", "b"}) }
	pipe, err := conn.OpenPipe(ctx, "s", "")
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	// The server's reply, as the script makes it.
	if err := pipe.Send([][]any{{"EVAL", "return {'1-1,d11-1', '', '', 'u'}", "0"}}); err != nil {
		t.Fatal(err)
	}
	queue := []*chunk{c}
	if moved, err := r.receive(ctx, pipe, &queue, 1); moved || err != nil || len(queue) != 0 {
		t.Fatalf("moved %v, %v, %d chunks left", moved, err, len(queue))
	}
	close(r.results)
	var got []BatchResult
	for rs := range r.results {
		got = append(got, rs...)
	}
	if len(got) != 2 || !got[0].ReplyLost || !got[1].ReplyLost || r.sum.LastLine != 2 {
		t.Errorf("results %+v, summary %+v", got, r.sum)
	}
}

// A server with EVALSHA (or SCRIPT) renamed away: a batch is refused (78)
// with nothing written; a single add needs no script.
func TestNativeBatchWithoutEVALSHA(t *testing.T) {
	t.Parallel()
	for _, renamed := range []string{"EVALSHA", "SCRIPT"} {
		t.Run(renamed, func(t *testing.T) {
			t.Parallel()
			conn, _ := nativeConn(t, "rename-command "+renamed+` ""`)
			tmpl := AddRequest{Stream: "s", PID: "p"}
			spec := BatchSpec{Template: tmpl, ID: "b", Chunk: 10, Window: 2}
			_, _, err := collectBatch(streamsOf(conn, ModeNative, nil), spec, &iidLines{lines: iids("i", 100), tmpl: tmpl})
			if exit.Code(err) != exit.Config {
				t.Fatalf("native: %v (exit %d), want 78", err, exit.Code(err))
			}
			if n := conn.Client().XLen(context.Background(), "s").Val(); n != 0 {
				t.Fatalf("refused, yet %d entries", n)
			}
			// A single add needs no script.
			r, err := streamsOf(conn, ModeNative, nil).add1(context.Background(), AddRequest{Stream: "s", PID: "p", IID: "i1", Fields: []string{"f", "v"}})
			if err != nil || r.Duplicate {
				t.Fatalf("a single add: %+v, %v", r, err)
			}
		})
	}
}

// A chunk of short strings that add up to more than the server's
// proto-max-bulk-len (1 MiB at least) is not packed into one argument:
// the server would refuse the whole command, and drop the connection.
func TestNativeBatchPackedWithinProtoMaxBulkLen(t *testing.T) {
	t.Parallel()
	for _, canRead := range []bool{true, false} {
		t.Run(fmt.Sprintf("CONFIG GET allowed %v", canRead), func(t *testing.T) {
			t.Parallel()
			conn, srv := nativeConn(t, "proto-max-bulk-len 1mb")
			if !canRead {
				if _, err := srv.Do("ACL", "SETUSER", "noconfig", "on", ">pw", "~*", "&*", "+@all", "-config"); err != nil {
					t.Fatal(err)
				}
				conn = redistest.Connect(t, strings.Replace(srv.URL, "unix://", "unix://noconfig:pw@", 1))
			}
			s := streamsOf(conn, ModeNative, nil)
			// 1,000 lines of 10 values of 200 bytes: 2 MB a chunk.
			var reqs []*AddRequest
			for i := range 1000 {
				f := make([]string, 0, 20)
				for k := range 10 {
					f = append(f, "f"+strconv.Itoa(k), strings.Repeat(strconv.Itoa(k), 200))
				}
				reqs = append(reqs, &AddRequest{Stream: "s", PID: "p", IID: "i" + strconv.Itoa(i), Fields: f})
			}
			got, sum, err := collectBatch(s, BatchSpec{Template: AddRequest{Stream: "s", PID: "p"}, ID: "b", Retries: 1}, &reqLines{reqs: reqs})
			if err != nil {
				t.Fatalf("%v (%+v)", err, sum)
			}
			wantEveryLineOnce(t, conn.Client(), "s", got, 1000)
		})
	}
}
