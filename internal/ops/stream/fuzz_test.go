package stream

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// FuzzEmulatedAdd checks the argument encoding of the emulated add script:
// for any pid, iid and fields (binary, empty, long), the entry XRANGE reads
// back has exactly the given fields in order, a repeat inside the same batch
// and a later repeat are duplicates with the same ID (R2, R11), and IDMPAUTO
// derives AutoIID. Requests Validate rejects are skipped.
//
// One redis-server per run of the target (per fuzzing worker process), in
// the target's TempDir; every input writes to a stream of its own, deleted
// with its state afterwards.
//
//	make fuzz (or: go test ./internal/ops/stream -run '^$' -fuzz FuzzEmulatedAdd -fuzztime 2m -fuzzminimizetime 2s)
func FuzzEmulatedAdd(f *testing.F) {
	f.Add("api-1", "order-17", encodeFuzzFields("amount", "100"), uint16(0), false)
	f.Add("p", "a\x00b", encodeFuzzFields("f", "", "", "v", "f", "repeat"), uint16(0), false)
	f.Add("*", "-", encodeFuzzFields("IDMP", "123-456", "+", "\xff\xfe\r\n"), uint16(0), false)
	f.Add("ünï €", "{tag}}", encodeFuzzFields("k", "v"), uint16(10<<10), false)
	f.Add("p", "", encodeFuzzFields("b", "2", "a", "1"), uint16(0), true)
	f.Add("", "iid", encodeFuzzFields("f", "v"), uint16(0), false)
	f.Add("p", "iid", []byte{}, uint16(0), false)
	f.Add("p", "i", encodeFuzzFields("1", "2", "3", "4", "5", "6", "7", "8", "9", "10"), uint16(65535), false)

	srv, err := redistest.Start(redistest.Options{Dir: f.TempDir(), Unix: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(srv.Stop)
	conn := redistest.Connect(f, srv.URL)
	streams, err := NewStreams(conn, ModeEmulated)
	if err != nil {
		f.Fatal(err)
	}
	n := 0
	f.Fuzz(func(t *testing.T, pid, iid string, blob []byte, long uint16, auto bool) {
		fields := decodeFuzzFields(blob, int(long))
		n++
		stream := fmt.Sprintf("fuzz:%d", n)
		req := AddRequest{Stream: stream, PID: pid, IID: iid, Auto: auto, Fields: fields}
		if auto {
			req.IID = ""
		}
		if req.Validate() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		defer dropFuzzStream(ctx, t, conn, stream)

		res, err := streams.AddBatch(ctx, []AddRequest{req, req})
		if err != nil {
			t.Fatalf("AddBatch: %v", err)
		}
		if len(res) != 2 || res[0].Duplicate || !res[1].Duplicate || res[1].ID != res[0].ID || !res[1].OriginalExists {
			t.Fatalf("a request and its repeat in one batch: %+v", res)
		}
		wantIID := iid
		if auto {
			wantIID = AutoIID(fields)
		}
		if res[0].IID != wantIID {
			t.Fatalf("IID = %q, want %q", res[0].IID, wantIID)
		}

		got, err := xrangeFields(ctx, conn, stream, res[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, fields) {
			t.Fatalf("XRANGE %s fields = %q, want %q", res[0].ID, clip(got), clip(fields))
		}

		again, err := streams.add1(ctx, req)
		if err != nil {
			t.Fatalf("repeat: %v", err)
		}
		if !again.Duplicate || again.ID != res[0].ID || !again.OriginalExists {
			t.Fatalf("repeat: %+v, want a duplicate of %s", again, res[0].ID)
		}
		if l, err := conn.Client().XLen(ctx, stream).Result(); err != nil || l != 1 {
			t.Fatalf("XLEN = %d, %v; want 1", l, err)
		}
	})
}

// xrangeFields reads one entry's flat field/value list, in order and with
// repeats (go-redis's XMessage map would lose both).
func xrangeFields(ctx context.Context, c *redisconn.Conn, stream, id string) ([]string, error) {
	v, err := c.Client().Do(ctx, "XRANGE", stream, id, id).Slice()
	if err != nil {
		return nil, err
	}
	if len(v) != 1 {
		return nil, fmt.Errorf("XRANGE %s: %d entries", id, len(v))
	}
	entry, ok := v[0].([]any)
	if !ok || len(entry) != 2 {
		return nil, fmt.Errorf("XRANGE %s: entry %v", id, v[0])
	}
	flat, ok := entry[1].([]any)
	if !ok {
		return nil, fmt.Errorf("XRANGE %s: fields %v", id, entry[1])
	}
	out := make([]string, len(flat))
	for i, x := range flat {
		if out[i], ok = x.(string); !ok {
			return nil, fmt.Errorf("XRANGE %s: field %d is %T", id, i, x)
		}
	}
	return out, nil
}

func dropFuzzStream(ctx context.Context, t *testing.T, c *redisconn.Conn, stream string) {
	l, err := idmp.StateKeys(stream, false)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{stream, l.Meta, l.PIDs}
	pids, _ := c.Client().SMembers(ctx, l.PIDs).Result()
	for _, p := range pids {
		keys = append(keys, l.IDs(p), l.Order(p))
	}
	if err := c.Client().Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
}

// encodeFuzzFields is the seed form decodeFuzzFields reads: each string as
// a uvarint length and its bytes.
func encodeFuzzFields(fields ...string) []byte {
	var b []byte
	for _, s := range fields {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// decodeFuzzFields reads length-prefixed strings (a length past the end takes
// the rest), pads an odd count with an empty value, and when long > 0 adds
// a pair whose value is long bytes.
func decodeFuzzFields(b []byte, long int) []string {
	var out []string
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 {
			n, k = uint64(len(b)), 0
		}
		b = b[k:]
		n = min(n, uint64(len(b)))
		out = append(out, string(b[:n]))
		b = b[n:]
	}
	if len(out)%2 == 1 {
		out = append(out, "")
	}
	if long > 0 {
		out = append(out, "long", strings.Repeat("\x00\xffx", long/3+1)[:long])
	}
	return out
}

// clip shortens long fields for a failure message.
func clip(fields []string) []string {
	out := make([]string, len(fields))
	for i, s := range fields {
		if len(s) > 40 {
			s = fmt.Sprintf("%s...(%d bytes)", s[:40], len(s))
		}
		out[i] = s
	}
	return out
}
