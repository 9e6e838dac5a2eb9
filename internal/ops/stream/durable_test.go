package stream

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// iidLines is a batch input of one add a line, the line's text its iid.
type iidLines struct {
	lines []string
	next  int
	tmpl  AddRequest
}

func (in *iidLines) Next() (int64, []byte, error) {
	if in.next == len(in.lines) {
		return 0, nil, io.EOF
	}
	in.next++
	return int64(in.next), []byte(in.lines[in.next-1]), nil
}

func (in *iidLines) Parse(_ int64, raw []byte, r *AddRequest) (bool, error) {
	*r = in.tmpl
	r.IID, r.Fields = string(raw), []string{"f", string(raw)}
	return true, nil
}

func (in *iidLines) Ready() bool { return true }

func iids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i+1)
	}
	return out
}

// TestDurableAdds runs in both modes: emulated on the server under test,
// native on a Redis 8.6 primary and replica (the server under test when it
// is one).
func TestDurableAdds(t *testing.T) {
	for _, mode := range []Mode{ModeEmulated, ModeNative} {
		t.Run(mode.String(), func(t *testing.T) { testDurableAdds(t, mode) })
	}
}

func testDurableAdds(t *testing.T, mode Mode) {
	var opts redistest.Options
	if mode == ModeNative {
		opts.Binary = redistest.RequireNative(t)
	}
	primary := redistest.NewWith(t, opts)
	replica := redistest.NewReplica(t, primary)
	c := redistest.Connect(t, primary.URL)
	s, err := NewStreams(c, mode)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d := redisconn.Durability{Replicas: 1, Timeout: 5 * time.Second}
	req := AddRequest{Stream: "s", PID: "p", IID: "a", Fields: []string{"f", "v"}}
	res, ack, err := s.addDurably(ctx, req, d)
	if err != nil || ack.Replicas != 1 || res.Duplicate {
		t.Fatalf("add: %+v, ack %+v, %v", res, ack, err)
	}
	if n, _ := replica.Do("XLEN", "s"); n != "1" {
		t.Fatalf("acknowledged, but the replica's XLEN is %s", n)
	}
	res, ack, err = s.addDurably(ctx, req, d)
	if err != nil || ack.Replicas != 1 || !res.Duplicate {
		t.Fatalf("duplicate: %+v, ack %+v, %v", res, ack, err)
	}

	// A batch whose every round trip was acknowledged emits each line with it.
	tmpl := AddRequest{Stream: "s", PID: "p"}
	var got []BatchResult
	spec := BatchSpec{Template: tmpl, ID: "b1", Chunk: 3, Window: 2, Durability: d}
	sum, err := s.RunBatch(ctx, spec, &iidLines{lines: iids("i", 10), tmpl: tmpl}, func(r BatchResult) error {
		got = append(got, r)
		return nil
	})
	if err != nil || len(got) != 10 || sum.Lines != 10 || sum.Unacked != 0 {
		t.Fatalf("batch: %d results, %+v, %v", len(got), sum, err)
	}
	for _, r := range got {
		if r.Ack == nil || r.Ack.Replicas != 1 {
			t.Fatalf("line %d: ack %v", r.Line, r.Ack)
		}
	}

	replica.Kill()
	if err := primary.WaitReplicas(0, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	d.Timeout = 100 * time.Millisecond

	// A single add stands on the primary and says so.
	res, ack, err = s.addDurably(ctx, AddRequest{Stream: "s", PID: "p", IID: "b", Fields: []string{"f", "v"}}, d)
	var na *redisconn.NotAckedError
	if exit.Code(err) != exit.Unavailable || !errors.As(err, &na) || ack.Replicas != 0 || res.ID == "" ||
		!strings.Contains(err.Error(), "entry "+res.ID+" was added on the primary") {
		t.Fatalf("unacknowledged add: %+v, ack %+v, %v", res, ack, err)
	}

	// A batch stops at its first round trip, printing nothing of it; its
	// progress record has the lines, so a re-run (replicas back) resumes
	// after them and adds nothing twice. A round trip of script calls
	// carries Window chunks (6 lines: emulated, and native by its chunk
	// script); the native MULTI/EXEC path a chunk (3 lines: one
	// MULTI/EXEC, then WAIT on its connection).
	atRisk := int64(spec.Chunk * spec.Window)
	got = nil
	spec.ID, spec.Durability = "b2", d
	start := time.Now()
	sum, err = s.RunBatch(ctx, spec, &iidLines{lines: iids("j", 20), tmpl: tmpl}, func(r BatchResult) error {
		got = append(got, r)
		return nil
	})
	if exit.Code(err) != exit.Unavailable || !errors.As(err, &na) || len(got) != 0 || sum.Unacked != atRisk || sum.LastLine != atRisk {
		t.Fatalf("unacknowledged batch: %d results, %+v, %v", len(got), sum, err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the unacknowledged batch stopped after %s", took)
	}
	t.Logf("%v", err)
	before, _ := primary.Do("XLEN", "s")

	redistest.NewReplica(t, primary)
	d.Timeout = 5 * time.Second
	spec.Durability = d
	sum, err = s.RunBatch(ctx, spec, &iidLines{lines: iids("j", 20), tmpl: tmpl}, func(r BatchResult) error {
		got = append(got, r)
		return nil
	})
	left := 20 - atRisk
	if err != nil || sum.ResumedAt != atRisk || sum.Lines != left || int64(len(got)) != left || got[0].Line != atRisk+1 {
		t.Fatalf("re-run: %d results, %+v, %v", len(got), sum, err)
	}
	after, _ := primary.Do("XLEN", "s")
	if b, _ := strconv.Atoi(before); strconv.FormatInt(int64(b)+left, 10) != after {
		t.Errorf("XLEN %s before the re-run, %s after: want the %d lines left added once", before, after, left)
	}
}

// The write a recovery's wait follows (cover) leaves the progress record
// as every state key is, without a TTL: under volatile-* eviction a record
// with one goes first, and its batch adds its lines again. Before: the
// record kept the PEXPIRE of that write (an hour here).
func TestCoverLeavesNoTTL(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	ctx := context.Background()
	r := nativeTestRun(t, streamsOf(conn, ModeEmulated, nil), "s", "b")
	r.spec.Durability = redisconn.Durability{Replicas: 1, Timeout: 10 * time.Millisecond}
	r.unacked = []BatchResult{{Line: 1}}
	if err := conn.Client().HSet(ctx, r.key, "line", "1").Err(); err != nil {
		t.Fatal(err)
	}
	var na *redisconn.NotAckedError
	if err := r.cover(ctx); !errors.As(err, &na) {
		t.Fatalf("cover with no replica: %v", err)
	}
	if ttl := conn.Client().PTTL(ctx, r.key).Val(); ttl != -1 {
		t.Fatalf("the record's PTTL after cover: %v, want none", ttl)
	}
}
