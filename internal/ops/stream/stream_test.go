package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// Pure checks: no server.

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeAuto, "auto": ModeAuto, "Native": ModeNative, "emulated": ModeEmulated} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseMode("fast"); exit.Code(err) != exit.Usage {
		t.Errorf("ParseMode(fast) err = %v (code %d), want usage", err, exit.Code(err))
	}
	for _, m := range []Mode{ModeAuto, ModeNative, ModeEmulated} {
		if back, _ := ParseMode(m.String()); back != m {
			t.Errorf("%v does not round-trip", m)
		}
	}
}

// TestAddRequestValidate: R12's texts, as usage errors, before any server.
func TestAddRequestValidate(t *testing.T) {
	ok := AddRequest{Stream: "s", PID: "p", IID: "i", Fields: []string{"f", "v"}}
	with := func(f func(*AddRequest)) AddRequest { r := ok; f(&r); return r }
	cases := []struct {
		name string
		req  AddRequest
		want string
	}{
		{"empty pid", with(func(r *AddRequest) { r.PID = "" }), "ERR syntax error, IDMP requires a non-empty producer ID"},
		{"empty pid auto", with(func(r *AddRequest) { r.PID, r.IID, r.Auto = "", "", true }), "ERR syntax error, IDMPAUTO requires a non-empty producer ID"},
		{"empty iid", with(func(r *AddRequest) { r.IID = "" }), "ERR syntax error, IDMP requires a non-empty idempotent ID"},
		{"iid and auto", with(func(r *AddRequest) { r.Auto = true }), "ERR syntax error, IDMP/IDMPAUTO specified multiple times"},
		{"explicit id", with(func(r *AddRequest) { r.ID = "1-1" }), "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"},
		{"no fields", with(func(r *AddRequest) { r.Fields = nil }), "ERR wrong number of arguments for 'xadd' command"},
		{"odd fields", with(func(r *AddRequest) { r.Fields = []string{"f"} }), "ERR wrong number of arguments for 'xadd' command"},
		{"maxlen and minid", with(func(r *AddRequest) { r.MaxLen, r.MinID = 5, "1-0" }), "MAXLEN and MINID"},
		{"negative maxlen", with(func(r *AddRequest) { r.MaxLen = -1 }), "MAXLEN argument must be >= 0"},
		{"limit without approx", with(func(r *AddRequest) { r.MaxLen, r.Limit = 5, 10 }), "LIMIT cannot be used without the special ~ option"},
		{"limit without trim", with(func(r *AddRequest) { r.Limit = 10 }), "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"},
		{"approx without trim", with(func(r *AddRequest) { r.Approx = true }), "needs MAXLEN or MINID"},
	}
	for _, c := range cases {
		err := c.req.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || exit.Code(err) != exit.Usage {
			t.Errorf("%s: err = %v (code %d), want usage error with %q", c.name, err, exit.Code(err), c.want)
		}
	}
	for _, r := range []AddRequest{
		ok,
		with(func(r *AddRequest) { r.IID, r.Auto = "", true }),
		with(func(r *AddRequest) { r.ID = "*" }),
		with(func(r *AddRequest) { r.MaxLen, r.Approx, r.Limit = 100, true, 10 }),
		with(func(r *AddRequest) { r.MinID, r.Approx, r.Limit = "1-0", true, -1 }),
		with(func(r *AddRequest) { r.Fields = []string{"", ""} }),
	} {
		if err := r.Validate(); err != nil {
			t.Errorf("%+v: unexpected %v", r, err)
		}
	}
}

// TestAutoIID: R3's properties for the emulated content hash.
func TestAutoIID(t *testing.T) {
	a := AutoIID([]string{"amount", "100", "currency", "USD"})
	if len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Fatalf("AutoIID = %q, want 32 hex digits", a)
	}
	same := [][]string{{"currency", "USD", "amount", "100"}}
	differ := [][]string{
		{"amount", "200", "currency", "USD"},                     // a value
		{"amount", "100", "currencY", "USD"},                     // a field name
		{"amount", "100", "currency", "USD", "x", "y"},           // an extra pair
		{"amount", "100currency", "USD", ""},                     // the same bytes, split differently
		{"amount", "100", "currency", "USD", "x", "y", "x", "y"}, // a repeated pair does not cancel
		{"amount", "100", "amount", "100", "currency", "USD"},
	}
	for _, f := range same {
		if AutoIID(f) != a {
			t.Errorf("%q: order changed the iid", f)
		}
	}
	seen := map[string][]string{}
	for _, f := range differ {
		id := AutoIID(f)
		if id == a {
			t.Errorf("%q: same iid as the original", f)
		}
		if prev, dup := seen[id]; dup {
			t.Errorf("%q and %q: same iid", f, prev)
		}
		seen[id] = f
	}
	bin := []string{"f", "\x00\x01\x02\xff", "u", "héllo世界", "e", "", "big", strings.Repeat("x", 10240)}
	if AutoIID(bin) != AutoIID([]string{bin[6], bin[7], bin[4], bin[5], bin[2], bin[3], bin[0], bin[1]}) {
		t.Error("binary/unicode/empty/10KB values: order changed the iid")
	}
}

// TestModeResolution: Open settles the mode once, from HELLO's reply: auto
// is native where the server has IDMP, emulated elsewhere; native on a
// server without IDMP is a usage error naming it. Opening and an add probe
// nothing the server rejects (no XCFGSET, no INFO). The one failed call a
// native first add makes is its MULTI's XINFO STREAM before the XADD, on
// a stream that does not exist yet: read in the transaction all the same,
// as another client may make the stream meanwhile (tx.go).
func TestModeResolution(t *testing.T) {
	conn, srv := redistest.Conn(t)
	caps := redistest.Caps(t, conn)
	native := caps.NativeIDMP
	ctx := context.Background()
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	fresh := redistest.Connect(t, conn.Display)
	s, err := NewStreams(fresh, ModeAuto)
	if want := map[bool]Mode{true: ModeNative, false: ModeEmulated}[native]; err != nil || s.Mode() != want {
		t.Fatalf("auto: %v, %v; want %v", s, err, want)
	}
	if _, err := s.add1(ctx, AddRequest{Stream: "s", PID: "p", IID: "i", Fields: []string{"f", "v"}}); err != nil {
		t.Fatal(err)
	}
	stats, _ := srv.Do("INFO", "commandstats")
	for _, line := range strings.Split(fmt.Sprint(stats), "\n") {
		// (A first EVALSHA fails with NOSCRIPT on a fresh server.)
		expected := strings.HasPrefix(line, "cmdstat_evalsha:") || native && strings.HasPrefix(line, "cmdstat_xinfo|stream:calls=2,") && strings.Contains(line, "failed_calls=1")
		if strings.HasPrefix(line, "cmdstat_info:") || strings.HasPrefix(line, "cmdstat_xcfgset") ||
			strings.Contains(line, "cmdstat_") && !expected && !strings.Contains(line, "rejected_calls=0,failed_calls=0") {
			t.Errorf("an auto add asked: %s", strings.TrimSpace(line))
		}
	}
	if s, err := NewStreams(conn, ModeEmulated); err != nil || s.Mode() != ModeEmulated {
		t.Fatalf("emulated: %v, %v", s, err)
	}
	if native {
		return
	}
	for _, m := range []Mode{ModeNative} {
		_, err := NewStreams(conn, m)
		if exit.Code(err) != exit.Usage || !strings.Contains(err.Error(), caps.Product+" "+caps.Version+" has no XCFGSET") {
			t.Errorf("%v on %s %s: err = %v", m, caps.Product, caps.Version, err)
		}
	}
}

// TestAddBatchValidatesFirst: an invalid request stops the batch before
// anything is sent, with its index; no server is needed to see that.
func TestAddBatchValidatesFirst(t *testing.T) {
	s := streamsOf(&redisconn.Conn{}, ModeEmulated, nil)
	res, err := s.AddBatch(context.Background(), []AddRequest{{Stream: "s", PID: "p"}})
	var be *BatchError
	if len(res) != 0 || !errors.As(err, &be) || be.Index != 0 || exit.Code(err) != exit.Usage {
		t.Fatalf("res %v err %v", res, err)
	}
	if _, err := s.CfgSet(context.Background(), "s", 0, 0); exit.Code(err) != exit.Usage ||
		!strings.Contains(err.Error(), "ERR At least one parameter") {
		t.Errorf("CfgSet(0, 0) err = %v", err)
	}
	for _, c := range []struct {
		d, n int64
		want string
	}{
		{-1, 0, "ERR IDMP-DURATION must be between 1 and 86400 seconds"},
		{86401, 0, "ERR IDMP-DURATION must be between 1 and 86400 seconds"},
		{0, -5, "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"},
		{10, 10001, "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"},
	} {
		if _, err := s.CfgSet(context.Background(), "s", c.d, c.n); exit.Code(err) != exit.Usage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CfgSet(%d, %d) err = %v, want %q", c.d, c.n, err, c.want)
		}
	}
}

func TestLastIDAheadOfClock(t *testing.T) {
	i := Info{LastGeneratedID: "2000-0", ServerTimeMS: 1000}
	if !i.LastIDAheadOfClock(500) || i.LastIDAheadOfClock(1000) {
		t.Error("2000-0 vs clock 1000")
	}
	if (Info{LastGeneratedID: "0-0", ServerTimeMS: 1000}).LastIDAheadOfClock(0) {
		t.Error("0-0 is not ahead")
	}
}
