package stream

import (
	"strings"
	"testing"
	"time"

	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
)

// Each variable part of a call says how many arguments it appends
// (redisconn.ArgList), and the call's room is made from it: a call built
// as the client builds it has no room left over, and needed none more.
func TestArgListLengths(t *testing.T) {
	conn, err := redisconn.Open(redisconn.ConnConfig{URL: "redis://127.0.0.1:1", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := func(pid, iid string, auto bool, fields ...string) AddRequest {
		return AddRequest{Stream: "s", PID: pid, IID: iid, Auto: auto, Fields: fields}
	}
	long := strings.Repeat("x", packedMax)
	shapes := map[string][]AddRequest{
		"uniform":     {req("p", "a", false, "f", "1"), req("p", "b", false, "f", "2")},
		"names vary":  {req("p", "a", false, "f", "1"), req("p", "b", false, "g", "2")},
		"fields vary": {req("p", "a", false, "f", "1"), req("p", "b", false, "f", "2", "g", "3")},
		"pids vary":   {req("p", "a", false, "f", "1"), req("q", "b", false, "f", "2")},
		"auto":        {req("p", "", true, "f", "1"), req("p", "", true, "f", "2")},
		"long value":  {req("p", "a", false, "f", long), req("p", "b", false, "f", "2")},
		"one":         {req("p", "a", false, "f", "1", "g", "2")},
	}
	exact := func(what string, call *redisconn.Call) {
		t.Helper()
		if len(call.Args) != cap(call.Args) {
			t.Errorf("%s: %d arguments in room for %d", what, len(call.Args), cap(call.Args))
		}
	}
	s := streamsOf(conn, ModeNative, nil)
	for name, reqs := range shapes {
		for _, bulk := range []int64{0, 1} { // packed where it fits, and never
			r := nativeTestRun(t, s, "s", "b")
			r.maxBulk = bulk
			call, _ := r.nativeBatchCall(nativeChunkOf(0, reqs...))
			exact(name+", native batch", call)
		}
		for _, cp := range []*chunkProgress{nil, {Key: "k", Index: "i", From: 1, To: 3, DropReplies: -1, Lines: []int64{2, 3}}} {
			call, _, err := emulated{s}.addCall(reqs, cp, replyOutcomes)
			if err != nil {
				t.Fatal(err)
			}
			exact(name+", emulated add", call)
		}
		call, _, err := native{s}.addCall(reqs, nil, replyOutcomes)
		if err != nil {
			t.Fatal(err)
		}
		exact(name+", native add", call)
	}
	call, err := s.RestoreCall("s", []string{"0", "payload", "REPLACE"}, &DumpState{Gen: "g",
		PIDs: []DumpPID{{PID: "p", IIDs: []string{"a", "b"}, IDs: []string{"1-0", "2-0"}}, {PID: "q"}}})
	if err != nil {
		t.Fatal(err)
	}
	exact("restore", call)
}
