package cmd

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/keyspace"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/idmpctl/idmpctl/internal/render"
)

// orphanGroup is the keys of one orphaned state a scan found, and the
// streams it may belong to.
type orphanGroup struct {
	names []string
	keys  []records.Record
}

// purgeOrphanRun is purge --match PATTERN --orphan-state: the emulated
// IDMP state of deleted streams (flagged orphan-state in scans) goes, each
// state whole (a part left behind would make a stream created again under
// the name dedupe against old IDs), by a script that deletes it only while
// its stream is still gone. The keys of one state are held until the scan
// ends (orphaned state is what is left of deleted streams: seldom many).
func purgeOrphanRun(ctx context.Context, o *PurgeOptions) error {
	ctx, stop := untilInterrupted(o.Factory, ctx)
	defer stop()
	f := o.Factory
	p := f.Printer
	conn, err := f.Conn(ctx)
	if err != nil {
		return err
	}
	groups := map[string]*orphanGroup{}
	var order []string
	var sum keyspace.PurgeSummary
	scan, err := keyspace.ScanKeys(ctx, conn, keyspace.ScanOptions{Pattern: o.Match, Literal: o.Literal, All: true, Decode: o.Ops.Decode},
		func(r records.Record) error {
			if !r.HasFlag(records.FlagOrphanState) {
				return nil
			}
			names := idmp.StateStreams(r.Key)
			id := strings.Join(names, "\x00")
			g := groups[id]
			if g == nil {
				g = &orphanGroup{names: names}
				groups[id] = g
				order = append(order, id)
			}
			g.keys = append(g.keys, r)
			sum.Matched++
			return nil
		})
	if err != nil {
		return exit.Wrap(err, "purge")
	}
	sum.Scanned = scan.Scanned
	sum.Kept = sum.Scanned - sum.Matched
	var listed keyList
	for _, id := range order {
		for _, r := range groups[id].keys {
			listed.add(r.Key)
		}
	}
	if sum.Matched > 0 && !o.DryRun && !o.Yes {
		what := fmt.Sprintf("drop the emulated IDMP state of %s whose stream is gone (%s matching %s)",
			render.N(int64(len(order)), "deleted stream"), render.N(sum.Matched, "key"), strconv.Quote(o.Match))
		if err := confirm(f, false, change{What: what, Question: "Drop it?", Keys: listed.Keys, More: listed.More}); err != nil {
			return exit.Wrap(err, "purge")
		}
	}
	streams, err := stream.NewStreams(conn, stream.ModeEmulated)
	if err != nil {
		return err
	}
	flush := bufferStream(p)
	var shown keyList
	report := purgeItems(p, &shown)
	for _, id := range order {
		g := groups[id]
		outcome := keyspace.PurgeWouldDelete
		if !o.DryRun {
			keys := make([]string, len(g.keys))
			for i, r := range g.keys {
				keys[i] = r.Key
			}
			wctx, cancel := f.callBound(ctx, 0)
			_, kept, derr := streams.DropOrphanedState(wctx, g.names, keys)
			cancel()
			if derr != nil {
				flush()
				return derr
			}
			outcome = keyspace.PurgeDeleted
			if kept {
				outcome = keyspace.PurgeChanged
			}
		}
		slices.SortFunc(g.keys, func(a, b records.Record) int { return strings.Compare(a.Key, b.Key) })
		for _, r := range g.keys {
			switch outcome {
			case keyspace.PurgeDeleted:
				sum.Deleted++
			case keyspace.PurgeChanged:
				sum.Changed++
			}
			report(r, outcome)
		}
	}
	flush()
	return printPurge(p, sum, o, shown, nil)
}
