package stream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The stream rules R1-R13 of docs/idmp.md as a table of cases that run in
// every mode a server allows: on a throwaway local server, and on the
// server at $IDMPCTL_CONFORMANCE_URL when set (unique key names, nothing
// flushed). R14 (XIDMPRECORD) is record_test.go's, R15 (tracking follows
// the key) move_test.go's and movedb_test.go's.

type ruleCase struct {
	name string
	run  func(t *testing.T, h *streamHarness)
}

// ruleCases is filled by the rules*_test.go files.
var ruleCases []ruleCase

func rule(name string, run func(t *testing.T, h *streamHarness)) bool {
	ruleCases = append(ruleCases, ruleCase{name, run})
	return true
}

func TestStreamConformance(t *testing.T) {
	t.Parallel()
	conn, srv := redistest.Conn(t)
	if redistest.Caps(t, conn).NativeIDMP {
		runRules(t, "local", conn, srv.URL, ModeEmulated, ModeNative)
	} else {
		runRules(t, "local", conn, srv.URL, ModeEmulated)
		// The native rules on a Redis 8.6 server beside the one under
		// test: make test's first pass (-race) runs them too.
		native := redistest.NewNative(t)
		runRules(t, "local-8.6", redistest.Connect(t, native.URL), native.URL, ModeNative)
	}
	if url := os.Getenv("IDMPCTL_CONFORMANCE_URL"); url != "" {
		runRules(t, "env", redistest.Connect(t, url), url, ModeEmulated, ModeNative)
	} else {
		t.Run("env", func(t *testing.T) { t.Skip("IDMPCTL_CONFORMANCE_URL not set") })
	}
}

func runRules(t *testing.T, label string, conn *redisconn.Conn, url string, modes ...Mode) {
	for _, mode := range modes {
		t.Run(label+"/"+mode.String(), func(t *testing.T) {
			if mode == ModeNative && !redistest.Caps(t, conn).NativeIDMP {
				t.Skipf("%s %s has no native IDMP (needs Redis 8.6+): native rules NOT checked", redistest.Caps(t, conn).Product, redistest.Caps(t, conn).Version)
			}
			for _, c := range ruleCases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					// A Streams of its own: it settles its mode and
					// caches the defaults, and is not for concurrent
					// use (one shared by the parallel cases had a case
					// see the defaults another loaded after its call
					// was built: "the add needs the server-level IDMP
					// defaults").
					s, err := NewStreams(conn, mode)
					if err != nil {
						t.Fatal(err)
					}
					c.run(t, newHarness(t, s, url))
				})
			}
		})
	}
}

// streamHarness gives a rule case unique key names and short helpers.
type streamHarness struct {
	s      *Streams
	rdb    redis.UniversalClient
	url    string
	prefix string
	ctx    context.Context
}

func newHarness(t *testing.T, s *Streams, url string) *streamHarness {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return &streamHarness{s: s, rdb: s.Conn.Client(), url: url, ctx: context.Background(),
		prefix: "idmpctl-test:" + hex.EncodeToString(b) + ":"}
}

func (h *streamHarness) emulated() bool { return h.s.Mode() == ModeEmulated }

// key is a unique stream name; tests that need a hash tag put it in name.
func (h *streamHarness) key(name string) string { return h.prefix + name }

func (h *streamHarness) add(t testing.TB, stream, pid, iid string, fields ...string) AddResult {
	t.Helper()
	if len(fields) == 0 {
		fields = []string{"f", "v"}
	}
	r, err := h.s.add1(h.ctx, AddRequest{Stream: stream, PID: pid, IID: iid, Fields: fields})
	if err != nil {
		t.Fatalf("add %q/%q: %v", pid, iid, err)
	}
	return r
}

// mustNew and mustDup check what a first add and a duplicate look like.
func (h *streamHarness) mustNew(t testing.TB, stream, pid, iid string, fields ...string) string {
	t.Helper()
	r := h.add(t, stream, pid, iid, fields...)
	if r.Duplicate || r.ID == "" {
		t.Fatalf("add %q/%q = %+v, want a new entry", pid, iid, r)
	}
	return r.ID
}

func (h *streamHarness) mustDup(t testing.TB, stream, pid, iid, want string) {
	t.Helper()
	r := h.add(t, stream, pid, iid, "f", "dup")
	if !r.Duplicate || r.ID != want {
		t.Fatalf("add %q/%q = %+v, want a duplicate of %s", pid, iid, r, want)
	}
}

func (h *streamHarness) xlen(t testing.TB, stream string) int64 {
	t.Helper()
	n, err := h.rdb.XLen(h.ctx, stream).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (h *streamHarness) info(t testing.TB, stream string) Info {
	t.Helper()
	i, err := h.s.Info(h.ctx, stream)
	if err != nil {
		t.Fatalf("info %q: %v", stream, err)
	}
	return i
}

func (h *streamHarness) cfgset(t testing.TB, stream string, duration, maxsize int64) CfgResult {
	t.Helper()
	r, err := h.s.CfgSet(h.ctx, stream, duration, maxsize)
	if err != nil {
		t.Fatalf("cfgset %q %d %d: %v", stream, duration, maxsize, err)
	}
	return r
}

// counters is the XINFO quadruple of R8, compared as one value.
type counters struct{ pids, tracked, added, dups int64 }

func (h *streamHarness) counters(t testing.TB, stream string) counters {
	t.Helper()
	i := h.info(t, stream)
	return counters{i.PIDsTracked, i.IIDsTracked, i.IIDsAdded, i.IIDsDuplicates}
}

func (h *streamHarness) wantCounters(t testing.TB, stream string, want counters) {
	t.Helper()
	if got := h.counters(t, stream); got != want {
		t.Fatalf("%s: {pids-tracked iids-tracked iids-added iids-duplicates} = %v, want %v", stream, got, want)
	}
}

// plainXAdd writes an entry without IDMP, as another client would.
func (h *streamHarness) plainXAdd(t testing.TB, stream string) string {
	t.Helper()
	id, err := h.rdb.XAdd(h.ctx, &redis.XAddArgs{Stream: stream, Values: []string{"plain", "x"}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// wantErr checks an error's exit code and that its text holds want.
func wantErr(t testing.TB, err error, code int, want string) {
	t.Helper()
	if err == nil || exit.Code(err) != code || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v (code %d), want code %d with %q", err, exit.Code(err), code, want)
	}
}

// reqs builds AddRequests for pid with iids fmt.Sprintf(format, i) for i in is.
func reqs(stream, pid, format string, is ...int) []AddRequest {
	out := make([]AddRequest, len(is))
	for k, i := range is {
		out[k] = AddRequest{Stream: stream, PID: pid, IID: fmt.Sprintf(format, i), Fields: []string{"field", fmt.Sprint("v", i)}}
	}
	return out
}

func seq(from, to int) []int {
	var s []int
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func isBatchErr(err error, index int) bool {
	var be *BatchError
	return errors.As(err, &be) && be.Index == index
}
