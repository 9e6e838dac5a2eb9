package stream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// gatedLines is iidLines released a few lines at a time (release): a run
// waits for lines not released yet, as for a slow producer. waitBlocked
// tells the test when the run waits, and after which line.
type gatedLines struct {
	iidLines
	mu      sync.Mutex
	limit   int
	changed chan struct{}
	// blockedAt is the line after which the run waits for input, -1 while
	// it does not; blocked is closed (and replaced) when it starts to.
	blockedAt int
	blocked   chan struct{}
}

func newGatedLines(lines []string, tmpl AddRequest) *gatedLines {
	return &gatedLines{iidLines: iidLines{lines: lines, tmpl: tmpl}, changed: make(chan struct{}),
		blockedAt: -1, blocked: make(chan struct{})}
}

// waitBlocked returns once the run waits for input after line n: with
// n = 0, once RunBatch has read the progress record and asks for its
// first line (start reads the record before any line); with n at the end
// of a chunk, once that chunk's reply has been handled and the run asks
// for the next line. It fails the test if the run ends first (done is
// closed) or after 30 s.
func (in *gatedLines) waitBlocked(t *testing.T, n int, done <-chan struct{}) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		in.mu.Lock()
		at, ch := in.blockedAt, in.blocked
		in.mu.Unlock()
		if at == n {
			return
		}
		select {
		case <-ch:
		case <-done:
			t.Fatalf("the run ended before it waited for input after line %d", n)
		case <-timeout:
			t.Fatalf("the run did not wait for input after line %d within 30s (it waits after line %d)", n, at)
		}
	}
}

// release lets the run read up to line n.
func (in *gatedLines) release(n int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.limit = n
	close(in.changed)
	in.changed = make(chan struct{})
}

func (in *gatedLines) Next() (int64, []byte, error) {
	for {
		in.mu.Lock()
		ok, wait := in.next < in.limit || in.next == len(in.lines), in.changed
		if ok {
			in.blockedAt = -1
		} else if in.blockedAt != in.next {
			in.blockedAt = in.next
			close(in.blocked)
			in.blocked = make(chan struct{})
		}
		in.mu.Unlock()
		if ok {
			return in.iidLines.Next()
		}
		<-wait
	}
}

func (in *gatedLines) Ready() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.next < in.limit
}

// forBatchModes runs f for the emulated batch on the server under test,
// and for the native batch (its chunk script) on a native-IDMP server
// beside it: each server started with config, IDMP-MAXSIZE maxsize for a
// stream whose tracking starts.
func forBatchModes(t *testing.T, maxsize int64, config []string, f func(t *testing.T, conn *redisconn.Conn, s *Streams)) {
	t.Run("emulated", func(t *testing.T) {
		t.Parallel()
		conn, _ := redistest.Conn(t, config...)
		f(t, conn, streamsOf(conn, ModeEmulated, &idmp.Defaults{Duration: 100, MaxSize: maxsize}))
	})
	t.Run("native", func(t *testing.T) {
		t.Parallel()
		conn, _ := nativeConn(t, config...)
		if err := conn.Client().ConfigSet(context.Background(), "stream-idmp-maxsize", strconv.FormatInt(maxsize, 10)).Err(); err != nil {
			t.Fatal(err)
		}
		f(t, conn, streamsOf(conn, ModeNative, nil))
	})
}

// otherRun commits chunks of a batch as another run of it would, on a
// connection of its own named as that run's are.
type otherRun struct {
	t      *testing.T
	s      *Streams
	cn     *redis.Conn
	run    string
	lines  []string
	tmpl   AddRequest
	layout idmp.StateLayout
}

func (o *otherRun) commit(from, to int) {
	o.t.Helper()
	h := sha256.New()
	for _, l := range o.lines[:to] {
		h.Write([]byte(l + "\n"))
	}
	var reqs []AddRequest
	var lines []int64
	var iids []string
	for i := from; i < to; i++ {
		r := o.tmpl
		r.IID, r.Fields = o.lines[i], []string{"f", o.lines[i]}
		reqs = append(reqs, r)
		lines = append(lines, int64(i+1))
		iids = append(iids, r.IID)
	}
	if o.s.Mode() == ModeNative {
		r := &batchRun{s: o.s, spec: BatchSpec{Template: o.tmpl, ID: "b", TTL: time.Hour}, layout: o.layout,
			key: o.layout.Batch(o.tmpl.PID, "b"), run: o.run}
		c := &chunk{from: int64(from), to: int64(to), digest: hex.EncodeToString(h.Sum(nil)), reqs: reqs, lines: lines}
		call, iids := r.nativeBatchCall(c)
		v, err := rawRun(nativeAddScript.Script, context.Background(), o.cn, call.Keys, call.Args...).Result()
		if err != nil {
			o.t.Fatalf("the other run's chunk %d-%d: %v", from, to, err)
		}
		if _, err := parseNativeBatchReplyT(v, iids, len(reqs)); err != nil {
			o.t.Logf("the other run's chunk %d-%d: %v", from, to, err)
		}
		return
	}
	cp := &chunkProgress{Key: o.layout.Batch(o.tmpl.PID, "b"), Index: o.layout.Batches, ID: "b", PID: o.tmpl.PID,
		From: int64(from), To: int64(to), Digest: hex.EncodeToString(h.Sum(nil)), DropReplies: -1, TTL: time.Hour, Lines: lines, Run: o.run}
	call, _, err := emulated{o.s}.addCall(reqs, cp, replyOutcomes)
	if err != nil {
		o.t.Fatal(err)
	}
	v, err := rawRun(addScript.Script, context.Background(), o.cn, call.Keys, call.Args...).Result()
	if err != nil {
		o.t.Fatalf("the other run's chunk %d-%d: %v", from, to, err)
	}
	if _, err := parseAddReply(v, iids, len(reqs)); err != nil {
		o.t.Logf("the other run's chunk %d-%d: %v", from, to, err)
	}
}

// A run started while another run of the same batch is dying (killed with
// chunks in its socket, which the server runs after the kill) resumes
// after the dying run's last chunk, however long those chunks take: the
// dying run's connection (named after it) is waited out, and once the
// server no longer lists it nothing of it can run. Before, a record that
// moved within 150 ms meant a live run: exit 75 with nobody else running.
// A run whose connection stays open is live: 75.
func TestBatchRunAfterADyingRun(t *testing.T) {
	t.Parallel()
	forBatchModes(t, 100, nil, testBatchRunAfterADyingRun)
}

func testBatchRunAfterADyingRun(t *testing.T, conn *redisconn.Conn, s *Streams) {
	ctx := context.Background()
	for _, dying := range []bool{true, false} {
		stream := "s-dying-" + strconv.FormatBool(dying)
		layout, _ := idmp.StateKeys(stream, false)
		tmpl := AddRequest{Stream: stream, PID: "p"}
		lines := iids("i", 1000)
		// A client of its own: closing it closes the connection (a pooled
		// one would go back to the pool, named and open).
		oc := redis.NewClient(conn.Client().(*redis.Client).Options())
		cn := oc.Conn()
		other := &otherRun{t: t, s: s, cn: cn, run: "0ther", lines: lines, tmpl: tmpl, layout: layout}
		if err := cn.ClientSetName(ctx, batchClientName(other.run)).Err(); err != nil {
			t.Fatal(err)
		}
		other.commit(0, 100)
		in := newGatedLines(lines, tmpl)
		type outcome struct {
			sum BatchSummary
			err error
		}
		done, ended := make(chan outcome, 1), make(chan struct{})
		go func() {
			defer close(ended)
			sum, err := s.RunBatch(ctx, BatchSpec{Template: tmpl, ID: "b", Chunk: 100, Window: 1}, in, func(BatchResult) error { return nil })
			done <- outcome{sum, err}
		}()
		// The new run has read the record (line 100); the other's next
		// chunk lands before the new run's first (one chunk: the input has
		// no more yet), and more come every 60 ms (a live run's pace, not
		// an ordering).
		in.waitBlocked(t, 0, ended)
		other.commit(100, 200)
		in.release(200)
		for k := 2; k < 6; k++ {
			time.Sleep(60 * time.Millisecond)
			other.commit(k*100, (k+1)*100)
		}
		if dying {
			cn.Close()
			oc.Close() // as a kill closes it, after its last chunk ran
		}
		in.release(len(lines))
		var o outcome
		select {
		case o = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the run did not end")
		}
		if !dying {
			cn.Close()
			oc.Close()
		}
		n := conn.Client().XLen(ctx, stream).Val()
		t.Logf("dying %v: %v; summary %+v; XLEN %d", dying, o.err, o.sum, n)
		if dying && (o.err != nil || n != 1000) {
			t.Errorf("after a dying run: %v, XLEN %d; want exit 0 and 1,000 entries", o.err, n)
		}
		if !dying && exit.Code(o.err) != exit.Busy {
			t.Errorf("beside a live run: %v, want exit 75", o.err)
		}
		if n > 1000 {
			t.Errorf("XLEN %d: duplicates", n)
		}
	}
}

// A run that stopped committed lines in chunks cut elsewhere than this
// run's (a piped input is cut where it waited): a chunk of this run whose
// lines that run committed in two chunks still reports every one of its
// lines, once. Before: only the lines of the other run's first chunk (the
// replies kept under this chunk's first line) were reported; the rest of
// the chunk was committed and never reported.
func TestBatchRunAfterRunCutElsewhere(t *testing.T) {
	t.Parallel()
	// IDMP-MAXSIZE 1: a line sent twice is in the stream twice.
	forBatchModes(t, 1, nil, testBatchRunAfterRunCutElsewhere)
}

func testBatchRunAfterRunCutElsewhere(t *testing.T, conn *redisconn.Conn, s *Streams) {
	ctx := context.Background()
	for k, cuts := range [][][2]int{{{100, 150}, {150, 300}}, {{100, 150}, {150, 180}}} {
		stream := "s-cut-" + strconv.Itoa(k)
		layout, _ := idmp.StateKeys(stream, false)
		tmpl := AddRequest{Stream: stream, PID: "p"}
		lines := iids("i", 500)
		oc := redis.NewClient(conn.Client().(*redis.Client).Options())
		cn := oc.Conn()
		other := &otherRun{t: t, s: s, cn: cn, run: "0ther", lines: lines, tmpl: tmpl, layout: layout}
		if err := cn.ClientSetName(ctx, batchClientName(other.run)).Err(); err != nil {
			t.Fatal(err)
		}
		other.commit(0, 100)
		in := newGatedLines(lines, tmpl)
		type outcome struct {
			sum BatchSummary
			err error
		}
		done, ended := make(chan outcome, 1), make(chan struct{})
		seen := map[int64]int{}
		go func() {
			defer close(ended)
			sum, err := s.RunBatch(ctx, BatchSpec{Template: tmpl, ID: "b", Chunk: 100, Window: 1}, in, func(r BatchResult) error {
				seen[r.Line]++
				return nil
			})
			done <- outcome{sum, err}
		}()
		in.waitBlocked(t, 0, ended) // the run has read the record: line 100
		for _, c := range cuts {
			other.commit(c[0], c[1])
		}
		cn.Close()
		oc.Close()
		in.release(len(lines))
		var o outcome
		select {
		case o = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the run did not end")
		}
		if o.err != nil {
			t.Fatal(o.err)
		}
		var missing, twice []int64
		for l := int64(101); l <= 500; l++ {
			switch seen[l] {
			case 0:
				missing = append(missing, l)
			case 1:
			default:
				twice = append(twice, l)
			}
		}
		if n := conn.Client().XLen(ctx, stream).Val(); n != 500 || len(missing) > 0 || len(twice) > 0 {
			t.Errorf("cut at %v: XLEN %d; lines not reported: %v; reported twice: %v; summary %+v", cuts, n, missing, twice, o.sum)
		}
	}
}

// On a server without CLIENT (renamed away, as some managed services do),
// a run that finds the record moved by another run falls back to the
// record standing still, rather than failing on CLIENT LIST.
func TestBatchRunAfterAStoppedRunWithoutCLIENT(t *testing.T) {
	t.Parallel()
	forBatchModes(t, 100, []string{`rename-command CLIENT ""`}, testBatchRunAfterAStoppedRunWithoutCLIENT)
}

func testBatchRunAfterAStoppedRunWithoutCLIENT(t *testing.T, conn *redisconn.Conn, s *Streams) {
	ctx := context.Background()
	stream := "s-noclient"
	layout, _ := idmp.StateKeys(stream, false)
	tmpl := AddRequest{Stream: stream, PID: "p"}
	lines := iids("i", 500)
	cn := conn.Client().(*redis.Client).Conn()
	defer cn.Close()
	other := &otherRun{t: t, s: s, cn: cn, run: "0ther", lines: lines, tmpl: tmpl, layout: layout}
	other.commit(0, 100)
	in := newGatedLines(lines, tmpl)
	done, ended := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(ended)
		_, err := s.RunBatch(ctx, BatchSpec{Template: tmpl, ID: "b", Chunk: 100, Window: 1}, in, func(BatchResult) error { return nil })
		done <- err
	}()
	in.waitBlocked(t, 0, ended) // the run has read the record: line 100
	other.commit(100, 200)
	in.release(200) // one chunk, which finds the record moved
	in.waitBlocked(t, 200, ended)
	in.release(len(lines))
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end")
	}
	if n := conn.Client().XLen(ctx, stream).Val(); n != 500 {
		t.Fatalf("XLEN %d, want 500", n)
	}
}

// A run that stopped committed lines past where this run's first chunk
// went: a recovery settles that chunk and leaves the rest to come (each of
// this run's later chunks up to the stopped run's line is refused). When
// one of those is refused while a chunk after it, pipelined behind it,
// commits, the record names this run: the lines between were still the
// stopped run's. Before: "its replies are not kept in the progress record"
// (70), as a lost reply of this run; TestBatchRunAfterRunCutElsewhere hit it
// now and then.
func TestBatchRunAfterStoppedRunAheadOfPipelinedChunks(t *testing.T) {
	t.Parallel()
	forBatchModes(t, 100, nil, testBatchRunAfterStoppedRunAheadOfPipelinedChunks)
}

func testBatchRunAfterStoppedRunAheadOfPipelinedChunks(t *testing.T, conn *redisconn.Conn, s *Streams) {
	ctx := context.Background()
	stream := "s-ahead"
	layout, _ := idmp.StateKeys(stream, false)
	tmpl := AddRequest{Stream: stream, PID: "p"}
	lines := iids("i", 500)
	oc := redis.NewClient(conn.Client().(*redis.Client).Options())
	cn := oc.Conn()
	other := &otherRun{t: t, s: s, cn: cn, run: "0ther", lines: lines, tmpl: tmpl, layout: layout}
	if err := cn.ClientSetName(ctx, batchClientName(other.run)).Err(); err != nil {
		t.Fatal(err)
	}
	other.commit(0, 100)
	// The run reads the record (line 100) and waits for its input; the
	// other run commits up to line 300 and stops.
	in := newGatedLines(lines, tmpl)
	type outcome struct {
		sum BatchSummary
		err error
	}
	done, ended := make(chan outcome, 1), make(chan struct{})
	seen := map[int64]int{}
	settled := make(chan struct{})
	go func() {
		defer close(ended)
		sum, err := s.RunBatch(ctx, BatchSpec{Template: tmpl, ID: "b", Chunk: 100, Window: 1}, in, func(r BatchResult) error {
			seen[r.Line]++
			if r.Line == 200 {
				close(settled)
			}
			return nil
		})
		done <- outcome{sum, err}
	}()
	in.waitBlocked(t, 0, ended) // the run has read the record
	other.commit(100, 150)
	other.commit(150, 300)
	cn.Close()
	oc.Close()
	// Its first chunk (lines 101-200) alone: refused, settled by a
	// recovery as the stopped run's.
	in.release(200)
	select {
	case <-settled:
	case o := <-done:
		t.Fatalf("the run ended: %+v, %v", o.sum, o.err)
	case <-time.After(30 * time.Second):
		t.Fatal("line 200 was not settled")
	}
	// The rest: lines 201-300 (the stopped run's) and 301-400 go in two
	// sends, the second committed behind the first's refusal.
	in.release(len(lines))
	var o outcome
	select {
	case o = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	for l := int64(101); l <= 500; l++ {
		if seen[l] != 1 {
			t.Errorf("line %d reported %d times", l, seen[l])
		}
	}
	if n := conn.Client().XLen(ctx, stream).Val(); n != 500 {
		t.Errorf("XLEN %d, want 500", n)
	}
}

// A run stopped (BatchSpec.Stop: xadd's first SIGINT) with chunks on the
// wire reads their replies and emits their results before it ends: every
// line committed is emitted, and the interrupted error names the last one,
// where the record stands. Before: the chunks in flight were committed
// after the run ended, their results never emitted.
func TestBatchStopReadsTheChunksSent(t *testing.T) {
	t.Parallel()
	forBatchModes(t, 100, nil, testBatchStopReadsTheChunksSent)
}

func testBatchStopReadsTheChunksSent(t *testing.T, conn *redisconn.Conn, s *Streams) {
	ctx := context.Background()
	tmpl := AddRequest{Stream: "s-stop", PID: "p"}
	layout, _ := idmp.StateKeys(tmpl.Stream, false)
	stop := make(chan struct{})
	var once sync.Once
	var emitted []int64 // by the emitting goroutine, read after RunBatch returns
	sum, err := s.RunBatch(ctx, BatchSpec{Template: tmpl, ID: "b", Chunk: 100, Window: 1, Stop: stop},
		&iidLines{lines: iids("i", 20_000), tmpl: tmpl}, func(r BatchResult) error {
			once.Do(func() { close(stop) }) // the first chunk is in: more are on the wire
			emitted = append(emitted, r.Line)
			return nil
		})
	var e *exit.Error
	if !errors.As(err, &e) || e.Code != exit.Interrupted {
		t.Fatalf("err = %v, want the interrupted error", err)
	}
	hint := e.Hint
	record := conn.Client().HGet(ctx, layout.Batch("p", "b"), "line").Val()
	xlen := conn.Client().XLen(ctx, tmpl.Stream).Val()
	t.Logf("stopped at line %d, %d emitted, record at %s, XLEN %d: %s", sum.LastLine, len(emitted), record, xlen, hint)
	if sum.LastLine >= 20_000 || int64(len(emitted)) != sum.LastLine || record != strconv.FormatInt(sum.LastLine, 10) || xlen != sum.LastLine {
		t.Fatalf("stopped at line %d: %d results emitted, record at line %s, XLEN %d: want them all equal (and short of the end)",
			sum.LastLine, len(emitted), record, xlen)
	}
	for i, n := range emitted {
		if n != int64(i+1) {
			t.Fatalf("result %d is line %d", i+1, n)
		}
	}
	if want := fmt.Sprintf("lines 1-%d are committed, none after them", sum.LastLine); !strings.Contains(hint, want) {
		t.Errorf("hint %q, want %q", hint, want)
	}
}
