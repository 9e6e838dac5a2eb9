package cmd

import (
	"context"
	"errors"
	"slices"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
	"github.com/spf13/cobra"
)

// MigrateOptions are migrate's inputs.
type MigrateOptions struct {
	Factory *Factory

	Streams []string
	Match   string
	DryRun  bool
}

// Validate checks the selection: streams or a pattern, not both, none empty.
func (o *MigrateOptions) Validate() error {
	switch {
	case len(o.Streams) == 0 && o.Match == "":
		return &exit.Error{Code: exit.Usage, Err: errors.New("migrate needs STREAM... or --match PATTERN"), Hint: "see 'idmpctl migrate --help'"}
	case len(o.Streams) > 0 && o.Match != "":
		return exit.Usagef("give streams or --match, not both")
	case slices.Contains(o.Streams, ""):
		return exit.Usagef("the stream name must not be empty")
	}
	return nil
}

// NewCmdMigrate builds migrate; runF replaces the run step in tests.
func NewCmdMigrate(f *Factory, runF func(*MigrateOptions) error) *cobra.Command {
	o := &MigrateOptions{Factory: f}
	c := &cobra.Command{
		Annotations: map[string]string{writesAnnotation: writesUnlessDryRun},
		Use:         "migrate STREAM... | --match PATTERN [--dry-run]",
		Short:       "Move emulated IDMP state into native tracking (Redis 8.6.2+)",
		Long: `Move the emulated IDMP state of streams into the server's native tracking,
after an upgrade to Redis 8.6.2 or later (docs/upgrade.md). Per stream, in
one atomic step: the stream's emulated IDMP-DURATION and IDMP-MAXSIZE with
XCFGSET (only while native tracking is empty: XCFGSET with other values
clears it; and only over the server's defaults, none of which it narrows:
they may be settings given to the stream with the same values, so each
becomes the wider of the two; other settings given to the stream natively
stay, and iids move under them only when they are at least as wide),
XIDMPRECORD for each live (pid, iid) whose entry still exists,
then the emulated state of what moved, or expired, is removed.

What cannot move stays emulated, and every idmpctl add on the native server
keeps answering its retries from it until it expires (the upgrade guard):
iids whose entry was trimmed or deleted (XIDMPRECORD needs the entry), and
every live iid while native tracking already holds iids (Redis appends a
recorded iid after newer ones and would evict those first). Each is listed
with when it expires. Safe to interrupt and to run again: each step is one
script call, and a repeat finds less, or nothing, to move.

--match scans every primary of a cluster for streams. Native counters:
XIDMPRECORD counts in iids-added. Exit codes: 66 no such stream, 65 not a
stream, 78 a server without XIDMPRECORD (nothing changed).
Raw output, one line per stream: stream, status (none|foreign|stale|done|
kept), settings (equal|set|native|blocked), recorded, kept, dropped-expired,
and with --dry-run a last field "dry-run" (the counts say what it would do);
then one line per kept iid: "kept", stream, pid, iid, entry ID, expires (RFC
3339), why (missing|native|changed|full).`,
		Example: `  idmpctl migrate orders --dry-run
  idmpctl migrate orders payments
  idmpctl migrate --match 'orders:*'`,
		RunE: func(c *cobra.Command, args []string) error {
			o.Streams = args
			return runValidated(c, o, runF, migrateRun, o.Validate)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.Match, "match", "", "glob pattern of the streams to migrate, on every primary")
	fl.BoolVar(&o.DryRun, "dry-run", false, "show what would move and what would stay, change nothing")
	return c
}

func migrateRun(ctx context.Context, o *MigrateOptions) error {
	f := o.Factory
	ctx, cancel := untilInterrupted(f, ctx, nil)
	defer cancel()
	rctx, rcancel := f.callBound(ctx, 0)
	defer rcancel()
	streams, err := openStreams(rctx, f, "auto")
	if err != nil {
		return err
	}
	p, shown := f.Printer, false
	err = streams.MigrateStreams(ctx, stream.MigrateSelection{Streams: o.Streams, Match: o.Match}, o.DryRun, func(r stream.MigrateResult) error {
		shown = true
		return p.Show(view.Migrate{MigrateResult: r})
	})
	if err == nil && !shown && p.Human() {
		p.Line("No streams match %s", render.Field(o.Match)) // a person is told; raw and JSON print nothing
	}
	return err
}
