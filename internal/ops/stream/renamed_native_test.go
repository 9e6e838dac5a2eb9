package stream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/redistest"
)

// A native server (8.6.2+) with XCFGSET renamed and XIDMPRECORD renamed
// away (rename-command): cfgset is the server's configuration (78) naming
// XCFGSET, as renamed EVAL is (docs/exit-codes.md), not an internal error
// (70); migrate says XIDMPRECORD is not known by that name, not "upgrade to
// 8.6.2"; and inspect --server lists both as not known by their names.
func TestRenamedNativeCommands(t *testing.T) {
	t.Parallel()
	srv := redistest.NewNative(t, `rename-command XCFGSET xcfg2`, `rename-command XIDMPRECORD ""`)
	conn := redistest.Connect(t, srv.URL)
	s, err := NewStreams(conn, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := srv.Do("XADD", "s", "*", "f", "v"); err != nil {
		t.Fatal(err)
	}
	_, err = s.CfgSet(ctx, "s", 0, 5)
	wantErr(t, err, exit.Config, "unknown command 'xcfgset'")
	var e *exit.Error
	if !errors.As(err, &e) || !strings.Contains(e.Hint, "XCFGSET") || !strings.Contains(e.Hint, "rename-command") {
		t.Fatalf("cfgset: %v: want a hint that names XCFGSET and rename-command", err)
	}

	err = s.CheckMigrate(ctx)
	wantErr(t, err, exit.Config, "XIDMPRECORD")
	if !errors.As(err, &e) || strings.Contains(e.Error()+e.Hint, "8.6.2 or later") || strings.Contains(e.Hint, "upgrade") {
		t.Fatalf("migrate on 8.6.3 tells to upgrade: %v (hint %q)", err, e.Hint)
	}
	if !strings.Contains(e.Error()+e.Hint, "rename-command") {
		t.Fatalf("migrate: %v (hint %q): want it to say the command is renamed away", err, e.Hint)
	}

	r, err := redisconn.InspectServer(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if !r.NativeIDMP || strings.Join(r.Unknown, " ") != "XCFGSET XIDMPRECORD" {
		t.Fatalf("inspect --server: native %v, unknown %q; want native (XADD IDMP) without XCFGSET and XIDMPRECORD", r.NativeIDMP, r.Unknown)
	}
}
