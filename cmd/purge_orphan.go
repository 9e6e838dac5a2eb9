package cmd

import (
	"context"
	"fmt"
	"strconv"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/render"
	"github.com/idmpctl/idmpctl/internal/view"
)

// purgeOrphanRun is purge --match PATTERN --orphan-state: the emulated
// IDMP state of deleted streams that matches goes, each state whole
// (keyspace.FindOrphanState, then OrphanPlan.Drop), after a confirmation
// that names its keys.
func purgeOrphanRun(ctx context.Context, o *PurgeOptions) error {
	ctx, stop := untilInterrupted(o.Factory, ctx)
	defer stop()
	f := o.Factory
	p := f.Printer
	conn, err := f.Conn(ctx)
	if err != nil {
		return err
	}
	plan, err := keyspace.FindOrphanState(ctx, conn, keyspace.OrphanOptions{Pattern: o.Match, Literal: o.Literal, Decode: o.Ops.Decode})
	if err != nil {
		return exit.Wrap(err, "purge")
	}
	if plan.Summary.Matched > 0 && !o.DryRun && !o.Yes {
		var listed view.KeyList
		for _, k := range plan.Keys() {
			listed.Add(k)
		}
		what := fmt.Sprintf("drop the emulated IDMP state of %s whose stream is gone (%s matching %s)",
			render.N(int64(plan.States()), "deleted stream"), render.N(plan.Summary.Matched, "key"), strconv.Quote(o.Match))
		if err := confirm(f, false, change{What: what, Question: "Drop it?", Keys: listed.Keys, More: listed.More}); err != nil {
			return exit.Wrap(err, "purge")
		}
	}
	flush := p.BufferStream()
	var shown view.KeyList
	item := &view.PurgeItem{Keys: &shown}
	sum, err := plan.Drop(ctx, conn, o.DryRun, func(it keyspace.PurgeItem) {
		item.Record, item.Outcome = it.Record, it.Outcome
		_ = p.Show(item)
	})
	flush()
	if err != nil {
		return err
	}
	return printPurge(p, sum, o, shown, nil)
}
