package stream

import (
	"context"
	"slices"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// TestMigrateStreamsRefusesWithoutXIDMPRECORD: on a server without
// XIDMPRECORD the workflow stops before its selection (78), changing
// nothing.
func TestMigrateStreamsRefusesWithoutXIDMPRECORD(t *testing.T) {
	t.Parallel()
	conn, _ := redistest.Conn(t)
	if redistest.Caps(t, conn).NativeIDMP {
		t.Skip("the server under test has native IDMP: TestMigrateStreamsMatch covers it")
	}
	s, err := NewStreams(conn, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	called := false
	err = s.MigrateStreams(context.Background(), MigrateSelection{Match: "*"}, false, func(MigrateResult) error { called = true; return nil })
	if exit.Code(err) != exit.Config || called || err.Error()[:9] != "migrate: " {
		t.Errorf("MigrateStreams on %s: %v (called %v), want 78 before anything", redistest.Caps(t, conn).Version, err, called)
	}
}

// TestMigrateStreamsMatch: --match migrates every stream it finds, in
// order, on a native server; a named stream that does not exist is 66.
func TestMigrateStreamsMatch(t *testing.T) {
	t.Parallel()
	g := newGuardEnv(t)
	for _, name := range []string{"m:b", "m:a", "other"} {
		g.add(t, g.emu, AddRequest{Stream: g.h.key(name), PID: "p", IID: "i", Fields: []string{"f", "v"}})
	}
	var got []string
	err := g.nat.MigrateStreams(g.ctx, MigrateSelection{Match: g.h.key("m:*")}, false, func(r MigrateResult) error {
		got = append(got, r.Stream+" "+r.Status)
		return nil
	})
	if want := []string{g.h.key("m:a") + " done", g.h.key("m:b") + " done"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("--match: %q, %v; want %q", got, err, want)
	}
	err = g.nat.MigrateStreams(g.ctx, MigrateSelection{Streams: []string{g.h.key("nosuch")}}, false, func(MigrateResult) error { return nil })
	if exit.Code(err) != exit.NotFound {
		t.Errorf("a named stream that does not exist: %v", err)
	}
}
