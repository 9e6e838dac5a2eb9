package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/idmpctl/idmpctl/internal/backup"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
	"github.com/spf13/cobra"
)

// RestoreOptions are restore's inputs.
type RestoreOptions struct {
	Factory *Factory

	File                 string
	Replace, DryRun, Yes bool

	plan *backup.Plan // what the file holds, read by Validate
}

// Validate reads the whole file before any server is contacted: its header,
// the keys purge marked kept, the end line, and the first bad line if any.
func (o *RestoreOptions) Validate() error {
	if o.File == "" {
		return &exit.Error{Code: exit.Usage, Err: errors.New("restore: the FILE must not be empty"),
			Hint: "an unset shell variable? give the file purge --backup wrote; nothing was changed"}
	}
	f, err := os.Open(o.File)
	if err != nil {
		return inputError("restore", err) // 66, as --batch FILE and @FILE
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return exit.New(exit.NotFound, "restore", "%s is a directory, not a backup file", o.File)
	}
	plan, err := backup.ReadPlan(f)
	var le *backup.LineError
	switch {
	case errors.As(err, &le):
		return &exit.Error{Code: exit.Data, What: "restore " + o.File, Err: err, Hint: "restore reads the files purge --backup writes"}
	case err != nil:
		return &exit.Error{Code: exit.Usage, What: "restore " + o.File, Err: err}
	}
	o.plan = plan
	return nil
}

// NewCmdRestore builds restore; runF replaces the run step in tests.
func NewCmdRestore(f *Factory, runF func(*RestoreOptions) error) *cobra.Command {
	o := &RestoreOptions{Factory: f}
	c := &cobra.Command{
		Use:         "restore FILE",
		Short:       "Put back the records purge --backup saved",
		Annotations: map[string]string{writesAnnotation: writesUnlessDryRun},
		Long: `Put back the records a purge deleted, from the file purge --backup wrote:
each with RESTORE and the expiry it had (RESTORE ... ABSTTL, on the server's
clock), to its node in a cluster.

A key that exists is never overwritten unless --replace, which is as careful
as purge: it first looks which keys exist now and would be overwritten (a
live claim among them, maybe), names them and asks on a terminal, and needs
--yes otherwise; a key that appears after that look is not overwritten.
The summary counts what was replaced apart from what was restored where its
key was missing. A record whose TTL
ran out since the backup is not restored; a record the purge kept (it
changed, or was live) is skipped; a record whose re-check went unanswered
(the purge timed out or was interrupted: deleted or not, it did not learn)
is restored only where its key is missing, even with --replace, as is every
record of a file without its end line (a killed purge). The file is read
whole first: a bad or truncated line is reported with its number, the
records before it are restored and nothing from it on (exit 65); a file
whose end line counts other lines than it holds is refused whole (65).

Raw output: "restored|replaced|existing|expired|kept|failed<TAB>KEY" per
record (a dry run: "would-restore", or "would-replace" for a key --replace
would overwrite; "failed" for a payload the server would refuse, exit 65),
and a summary on stderr.`,
		Example: `  idmpctl purge --match 'idem:*' --status FAILED \
    --backup purge-2026-11-23.ndjson --yes
  idmpctl restore purge-2026-11-23.ndjson --dry-run
  idmpctl restore purge-2026-11-23.ndjson
  idmpctl restore purge-2026-11-23.ndjson --replace --yes`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.File = args[0]
			return runValidated(c, o, runF, restoreRun, o.Validate)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&o.Replace, "replace", false, "overwrite keys that exist (RESTORE ... REPLACE)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "restore nothing; say what would be restored")
	fl.BoolVar(&o.Yes, "yes", false, "with --replace: overwrite the keys that exist without asking (needed when stdin is not a terminal)")
	return c
}

func restoreRun(ctx context.Context, o *RestoreOptions) error {
	ctx, stop := untilInterrupted(o.Factory, ctx, nil)
	defer stop()
	fct, p := o.Factory, o.Factory.Printer
	conn, err := fct.Conn(ctx)
	if err != nil {
		return err
	}
	opts := keyspace.RestoreFileOptions{Name: o.File, Plan: o.plan, Replace: o.Replace, DryRun: o.DryRun,
		Open: func() (io.ReadCloser, error) {
			f, err := os.Open(o.File)
			if err != nil {
				return nil, inputError("restore", err)
			}
			return f, nil
		}}
	// --replace overwrites only what the user agreed to: the keys that
	// exist now, named first, asked about on a terminal (else --yes).
	if o.Replace && !o.DryRun {
		if opts.Agreed, err = o.confirmReplace(ctx, conn, opts); err != nil {
			return err
		}
	}
	flush := p.BufferStream()
	item := &view.RestoreItem{} // one, shown again for each record
	sum, runErr := keyspace.RestoreFile(ctx, conn, opts, func(it keyspace.RestoreItem) {
		item.RestoreItem = it
		_ = p.Show(item)
	})
	flush()
	if perr := p.Show(view.Restore{Summary: sum, File: o.File, Replace: o.Replace}); perr != nil && runErr == nil {
		runErr = perr
	}
	if runErr != nil {
		return runErr
	}
	if err := keyspace.RestoreStopped(o.File, o.plan); err != nil {
		return err
	}
	if o.plan.End == nil {
		what := "every complete record in it was read"
		if o.Replace {
			what += ", and restored only where its key was missing: --replace does not apply to a cut file, whose last records the purge may have kept"
		}
		p.Warnf("%s has no end line: the purge that wrote it did not close it (it was killed?); %s", o.File, what)
	}
	return nil
}

// confirmReplace names the keys --replace would overwrite now and asks (or
// needs --yes). It returns them: the run overwrites no other, and a key
// that appears after the look is skipped as existing.
func (o *RestoreOptions) confirmReplace(ctx context.Context, conn *redisconn.Conn, opts keyspace.RestoreFileOptions) (map[string]bool, error) {
	found, err := keyspace.KeysToReplace(ctx, conn, opts)
	if err != nil {
		return nil, err
	}
	agreed := map[string]bool{}
	var keys view.KeyList
	for _, k := range found {
		agreed[k] = true
		keys.Add(k)
	}
	if len(agreed) == 0 {
		return agreed, nil
	}
	what := fmt.Sprintf("restore --replace would overwrite %s that exist now with what %s saved", render.N(int64(len(agreed)), "key"), render.Field(o.File))
	if err := confirm(o.Factory, o.Yes, what, "Overwrite them?", keys); err != nil {
		return nil, err
	}
	return agreed, nil
}
