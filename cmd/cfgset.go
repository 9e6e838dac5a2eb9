package cmd

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/duration"
	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
	"github.com/spf13/cobra"
)

// CfgSetOptions are cfgset's inputs.
type CfgSetOptions struct {
	Factory *Factory

	Stream                    string
	DurationFlag, MaxSizeFlag string
	DurationSet, MaxSizeSet   bool  // given, even as "" (which Redis calls no integer)
	Duration, MaxSize         int64 // 0: keep
	Yes, DryRun               bool
	Mode                      string
}

// parseSetting reads an XCFGSET value (limit units at most) as Redis 8.6.3
// does, with its texts; --duration also as a duration with its unit (1000s,
// 17m, 1h: whole seconds).
func parseSetting(flag, s string, limit int64, unit string) (int64, error) {
	v, ok := idmp.ParseInt(s)
	given := s
	if d, err := duration.Parse(s); !ok && err == nil && flag == "duration" && strings.ContainsAny(s, "smhd") {
		if d%time.Second != 0 {
			return 0, &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--duration %q: not a whole number of seconds", s),
				Hint: "IDMP-DURATION is whole seconds: for example --duration 1000 (seconds), 1000s, 17m or 1h"}
		}
		v, ok = int64(d/time.Second), true
		given = fmt.Sprintf("%s (%d seconds)", s, v)
	}
	if !ok {
		hint := fmt.Sprintf("give a plain integer from 1 to %d, without sign, leading zeros or unit", limit)
		if flag == "duration" {
			hint = fmt.Sprintf("give whole seconds from 1 to %d (no sign or leading zeros), or a duration with its unit: 1000s, 17m, 1h", limit)
		}
		return 0, &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--%s %q: ERR value is not an integer or out of range", flag, s), Hint: hint}
	}
	if v < 1 || v > limit {
		return 0, &exit.Error{Code: exit.Usage, Err: fmt.Errorf("--%s %s: ERR IDMP-%s must be between 1 and %d %s", flag, given, strings.ToUpper(flag), limit, unit),
			Hint: "idmpctl calc-maxsize computes both from your rate and mark-delay"}
	}
	return v, nil
}

// Validate parses and range-checks the settings.
func (o *CfgSetOptions) Validate() error {
	if o.Stream == "" {
		return exit.Usagef("the stream name must not be empty")
	}
	if !o.DurationSet && !o.MaxSizeSet {
		return &exit.Error{Code: exit.Usage, Err: fmt.Errorf("give --duration, --maxsize or both (ERR At least one parameter)"),
			Hint: "idmpctl calc-maxsize computes both from your rate and mark-delay"}
	}
	var err error
	if o.DurationSet {
		if o.Duration, err = parseSetting("duration", o.DurationFlag, idmp.MaxDuration, "seconds"); err != nil {
			return err
		}
	}
	if o.MaxSizeSet {
		if o.MaxSize, err = parseSetting("maxsize", o.MaxSizeFlag, idmp.MaxMaxSize, "entries"); err != nil {
			return err
		}
	}
	return nil
}

// NewCmdCfgSet builds cfgset; runF replaces the run step in tests.
func NewCmdCfgSet(f *Factory, runF func(*CfgSetOptions) error) *cobra.Command {
	o := &CfgSetOptions{Factory: f}
	c := &cobra.Command{
		Annotations: map[string]string{writesAnnotation: writesUnlessDryRun},
		Use:         "cfgset STREAM [--duration S] [--maxsize N]",
		Short:       "Set a stream's IDMP-DURATION / IDMP-MAXSIZE (XCFGSET), guarded",
		Long: `Set a stream's IDMP settings, showing the values before and after.

Changing either value clears every producer's tracked iids (retries of
messages sent before the change will no longer be recognised as duplicates),
so a change that would clear tracked iids asks on a terminal and otherwise
needs --yes. Setting the current values is a no-op that clears nothing.

Ranges: --duration 1..86400 seconds, bare (1000) or with a unit (1000s, 17m,
1h: whole seconds); --maxsize 1..10000 iids per producer.
Raw output: "status<TAB>changed|unchanged|dry-run", then
"idmp-duration<TAB>before<TAB>after", "idmp-maxsize<TAB>before<TAB>after" and
"cleared-iids<TAB>N".`,
		Example: `  idmpctl cfgset orders --duration 1000 --maxsize 100
  idmpctl cfgset orders --maxsize 500 --dry-run`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Stream = args[0]
			o.DurationSet, o.MaxSizeSet = c.Flags().Changed("duration"), c.Flags().Changed("maxsize")
			return runValidated(c, o, runF, cfgsetRun, o.Validate)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.DurationFlag, "duration", "", "IDMP-DURATION: seconds (1000) or a duration with its unit (1000s, 17m, 1h), 1s to 24h")
	fl.StringVar(&o.MaxSizeFlag, "maxsize", "", "IDMP-MAXSIZE, iids per producer (1-10000)")
	allowEmpty(fl, "duration", "maxsize") // "" is Redis's "not an integer" (Validate)
	fl.BoolVar(&o.Yes, "yes", false, "confirm a change that clears tracked iids")
	fl.BoolVar(&o.DryRun, "dry-run", false, "show what would change, change nothing")
	addModeFlag(c, &o.Mode)
	return c
}

// settingChanges names each setting that changes, before -> after: what
// a confirmation is asked for.
func settingChanges(before, after idmp.Config) string {
	var out []string
	if before.Duration != after.Duration {
		out = append(out, fmt.Sprintf("idmp-duration %ds -> %ds", before.Duration, after.Duration))
	}
	if before.MaxSize != after.MaxSize {
		out = append(out, fmt.Sprintf("idmp-maxsize %d -> %d", before.MaxSize, after.MaxSize))
	}
	return strings.Join(out, ", ")
}

// cfgsetRun is shared by cfgset and calc-maxsize --apply.
func cfgsetRun(ctx context.Context, o *CfgSetOptions) error {
	f, name := o.Factory, o.Stream
	what := "cfgset " + strconv.Quote(name)
	rctx, cancel := f.callBound(ctx, 0)
	defer cancel()
	streams, err := openStreams(rctx, f, o.Mode)
	if err != nil {
		return err
	}
	info, err := streams.Info(rctx, name)
	if exit.Code(err) == exit.NotFound {
		return exit.New(exit.NotFound, what, "ERR no such key")
	}
	if err != nil {
		return exit.Wrap(err, what)
	}
	before := idmp.Config{Duration: info.IDMPDuration, MaxSize: info.IDMPMaxSize}
	after := idmp.Config{Duration: cmp.Or(o.Duration, before.Duration), MaxSize: cmp.Or(o.MaxSize, before.MaxSize)} // 0: keep
	status, cleared := "unchanged", int64(0)
	switch {
	case after == before:
	case o.DryRun:
		status, cleared = "dry-run", info.IIDsTracked
	default:
		if info.IIDsTracked > 0 {
			change := fmt.Sprintf("changing %s (%s) clears %s of %s", render.Field(name), settingChanges(before, after),
				render.N(info.IIDsTracked, "tracked iid"), render.N(info.PIDsTracked, "producer"))
			if err := confirm(f, o.Yes, change, "Change the settings?", view.KeyList{}); err != nil {
				return exit.Wrap(err, what)
			}
		}
		wctx, cancel := f.callBound(ctx, 0) // the question took its own time
		defer cancel()
		res, err := streams.CfgSet(wctx, name, o.Duration, o.MaxSize)
		if err != nil {
			return exit.Wrap(err, what)
		}
		before, after, cleared = res.Before, res.After, res.ClearedIIDs
		if res.Changed {
			status = "changed"
		}
	}
	return f.Printer.Show(view.CfgSet{
		Stream: render.Text(name), Mode: streams.Mode().String(), Status: status, ClearedIIDs: cleared,
		Before: map[string]int{"idmp-duration": int(before.Duration), "idmp-maxsize": int(before.MaxSize)},
		After:  map[string]int{"idmp-duration": int(after.Duration), "idmp-maxsize": int(after.MaxSize)},
	})
}
