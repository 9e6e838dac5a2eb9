package keyspace

// purge --match PATTERN --orphan-state: the emulated IDMP state of deleted
// streams goes, each state whole (a part left would make a stream created
// again under the name dedupe against old IDs), by internal/ops/stream's
// script, which deletes it only while its stream is still gone.

import (
	"context"
	"slices"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/records"
)

// OrphanOptions select the orphaned state to drop.
type OrphanOptions struct {
	Pattern string
	Literal bool
	Decode  records.DecodeOptions
}

// OrphanPlan is the orphaned state a scan found, by state, for a
// confirmation to name before Drop (held whole: seldom many keys).
type OrphanPlan struct {
	Summary PurgeSummary // Scanned, Matched (keys of orphaned state), Kept
	groups  []*orphanGroup
}

// orphanGroup is one orphaned state's keys and the streams it may belong to.
type orphanGroup struct {
	names []string
	keys  []records.Record
}

// FindOrphanState scans every primary for keys of orphaned emulated IDMP
// state matching opts, grouped by state. It writes nothing.
func FindOrphanState(ctx context.Context, c *redisconn.Conn, opts OrphanOptions) (*OrphanPlan, error) {
	plan := &OrphanPlan{}
	byID := map[string]*orphanGroup{}
	scan, err := ScanKeys(ctx, c, ScanOptions{Pattern: opts.Pattern, Literal: opts.Literal, All: true, Decode: opts.Decode},
		func(r records.Record) error {
			if !r.HasFlag(records.FlagOrphanState) {
				return nil
			}
			names := idmp.StateStreams(r.Key)
			id := strings.Join(names, "\x00")
			g := byID[id]
			if g == nil {
				g = &orphanGroup{names: names}
				byID[id] = g
				plan.groups = append(plan.groups, g)
			}
			g.keys = append(g.keys, r)
			plan.Summary.Matched++
			return nil
		})
	if err != nil {
		return nil, err
	}
	plan.Summary.Scanned = scan.Scanned
	plan.Summary.Kept = plan.Summary.Scanned - plan.Summary.Matched
	return plan, nil
}

// States is how many states (deleted streams) the plan holds.
func (p *OrphanPlan) States() int { return len(p.groups) }

// Keys are the plan's keys, state by state in the order the scan met them.
func (p *OrphanPlan) Keys() []string {
	var out []string
	for _, g := range p.groups {
		for _, r := range g.keys {
			out = append(out, r.Key)
		}
	}
	return out
}

// Drop deletes each state whole, one script call each, unless its stream
// exists again (its keys are then "changed"); a dry run deletes nothing.
// emit hears of every key, a state's sorted. An error stops the drop.
func (p *OrphanPlan) Drop(ctx context.Context, c *redisconn.Conn, dryRun bool, emit func(PurgeItem)) (PurgeSummary, error) {
	sum := p.Summary
	streams, err := stream.Open(ctx, c, stream.ModeEmulated)
	if err != nil {
		return sum, err
	}
	for _, g := range p.groups {
		outcome, count := PurgeWouldDelete, new(int64) // a dry run counts nothing
		if !dryRun {
			keys := make([]string, len(g.keys))
			for i, r := range g.keys {
				keys[i] = r.Key
			}
			wctx, cancel := c.Ctx(ctx)
			_, kept, err := streams.DropOrphanedState(wctx, g.names, keys)
			cancel()
			if err != nil {
				return sum, exit.Wrap(err, "purge --orphan-state")
			}
			outcome, count = PurgeDeleted, &sum.Deleted
			if kept {
				outcome, count = PurgeChanged, &sum.Changed
			}
		}
		slices.SortFunc(g.keys, func(a, b records.Record) int { return strings.Compare(a.Key, b.Key) })
		for _, r := range g.keys {
			*count++
			emit(PurgeItem{Record: r, Outcome: outcome})
		}
	}
	return sum, nil
}
