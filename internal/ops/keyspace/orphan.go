package keyspace

// purge --match PATTERN --orphan-state: the emulated IDMP state of deleted
// streams (flagged orphan-state in scans) goes, each state whole (a part
// left behind would make a stream created again under the name dedupe
// against old IDs), by internal/ops/stream's script that deletes it only
// while its stream is still gone. The scan is this package's; the state
// and its layout are stream's: keyspace, which cleans the keyspace, owns
// the workflow and calls stream for each state.

import (
	"context"
	"slices"
	"strings"

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

// OrphanPlan is the orphaned state a scan found, grouped by state: what a
// confirmation names before Drop deletes it. The keys of one state are
// held until the scan ends (orphaned state is what is left of deleted
// streams: seldom many).
type OrphanPlan struct {
	Summary PurgeSummary // Scanned, Matched (keys of orphaned state), Kept
	groups  []*orphanGroup
}

// orphanGroup is the keys of one orphaned state, and the streams it may
// belong to.
type orphanGroup struct {
	names []string
	keys  []records.Record
}

// FindOrphanState scans every primary for the keys of orphaned emulated
// IDMP state matching opts, grouped by the state they belong to. It
// writes nothing.
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

// Drop deletes each state of the plan whole, in one script call each
// within the connection's timeout, unless its stream exists again (its
// keys are then "changed": kept). A dry run deletes nothing
// ("would-delete"). emit hears of every key, a state's keys sorted. The
// summary is the plan's with what was deleted and kept; an error stops
// the drop (the states before it are gone).
func (p *OrphanPlan) Drop(ctx context.Context, c *redisconn.Conn, dryRun bool, emit func(PurgeItem)) (PurgeSummary, error) {
	sum := p.Summary
	streams, err := stream.Open(ctx, c, stream.ModeEmulated)
	if err != nil {
		return sum, err
	}
	for _, g := range p.groups {
		outcome := PurgeWouldDelete
		if !dryRun {
			keys := make([]string, len(g.keys))
			for i, r := range g.keys {
				keys[i] = r.Key
			}
			wctx, cancel := c.Ctx(ctx)
			_, kept, err := streams.DropOrphanedState(wctx, g.names, keys)
			cancel()
			if err != nil {
				return sum, err
			}
			outcome = PurgeDeleted
			if kept {
				outcome = PurgeChanged
			}
		}
		slices.SortFunc(g.keys, func(a, b records.Record) int { return strings.Compare(a.Key, b.Key) })
		for _, r := range g.keys {
			switch outcome {
			case PurgeDeleted:
				sum.Deleted++
			case PurgeChanged:
				sum.Changed++
			}
			emit(PurgeItem{Record: r, Outcome: outcome})
		}
	}
	return sum, nil
}
