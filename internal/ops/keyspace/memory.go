package keyspace

// What keys cost: MEMORY USAGE of a sample (calc-ttl --sample), and a scan's
// bytes by format and status estimated from a sample (inspect --memory).
// Read-only: every command used is in @read.

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/ops/redisconn"
	"github.com/idmpctl/idmpctl/internal/records"
	"github.com/redis/go-redis/v9"
)

// MaxSamples bounds --samples: the sample's keys are held until measured.
const MaxSamples = 100_000

// KeySize is one key as measured.
type KeySize struct {
	Key        string
	Type       string
	KeyBytes   int64 // the name's bytes
	ValueBytes int64 // the value's: STRLEN; a hash's field and value bytes; else its DUMP payload's
	UsageBytes int64 // MEMORY USAGE key SAMPLES 0: name, value and Redis's structures for the key
}

// SampleKeys returns up to n keys matching pattern from each primary.
func SampleKeys(ctx context.Context, c *redisconn.Conn, pattern string, n int) ([]string, error) {
	if _, err := c.Capabilities(ctx); err != nil {
		return nil, err
	}
	match := scanMatch(pattern, false)
	var mu sync.Mutex
	var out []string
	err := c.EachPrimary(ctx, func(ctx context.Context, node redis.Cmdable, _ string) error {
		var keys []string
		var cursor uint64
		seen := map[string]bool{}
		for range 1 << 20 { // bounded: SCAN ends long before on any real keyspace
			sctx, cancel := c.Ctx(ctx)
			batch, next, err := node.Scan(sctx, cursor, match, DefaultScanCount).Result()
			cancel()
			if err != nil {
				return err
			}
			for _, k := range batch {
				if !seen[k] && len(keys) < n {
					seen[k] = true
					keys = append(keys, k)
				}
			}
			if next == 0 || len(keys) >= n {
				break
			}
			cursor = next
		}
		mu.Lock()
		out = append(out, keys...)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, exit.Wrap(err, "scan")
	}
	slices.Sort(out)
	return out, nil
}

// MeasureKeys measures keys in pipelined batches: MEMORY USAGE (SAMPLES 0:
// exact), and with values the name and value sizes. Gone keys are left out.
func MeasureKeys(ctx context.Context, c *redisconn.Conn, keys []string, values bool) ([]KeySize, error) {
	if _, err := c.Capabilities(ctx); err != nil {
		return nil, err
	}
	out := make([]KeySize, 0, len(keys))
	for chunk := range slices.Chunk(keys, keyBatch) {
		usage := make([]*redis.IntCmd, len(chunk))
		types := make([]*redis.StatusCmd, len(chunk))
		err := c.Pipelined(ctx, func(p redis.Pipeliner, ctx context.Context) {
			for i, k := range chunk {
				usage[i] = p.MemoryUsage(ctx, k, 0)
				if values {
					types[i] = p.Type(ctx, k)
				}
			}
		})
		if err != nil {
			return nil, exit.Wrap(err, "memory usage")
		}
		var sizes []KeySize
		for i, k := range chunk {
			n, err := usage[i].Result()
			if errors.Is(err, redis.Nil) {
				continue // gone
			}
			if err != nil {
				return nil, exit.Wrap(err, "memory usage")
			}
			ks := KeySize{Key: k, KeyBytes: int64(len(k)), UsageBytes: n}
			if values {
				ks.Type = types[i].Val()
			}
			sizes = append(sizes, ks)
		}
		if values {
			if err := measureValues(ctx, c, sizes); err != nil {
				return nil, exit.Wrap(err, "measure values")
			}
		}
		out = append(out, sizes...)
	}
	return out, nil
}

// measureValues fills ValueBytes: STRLEN, a hash's field and value bytes
// (what a developer counts as "the value"), else the DUMP payload's length.
func measureValues(ctx context.Context, c *redisconn.Conn, sizes []KeySize) error {
	cmds := make([]redis.Cmder, len(sizes))
	err := c.Pipelined(ctx, func(p redis.Pipeliner, ctx context.Context) {
		for i, s := range sizes {
			switch s.Type {
			case "string":
				cmds[i] = p.StrLen(ctx, s.Key)
			case "hash":
				cmds[i] = p.HGetAll(ctx, s.Key)
			default:
				cmds[i] = p.Dump(ctx, s.Key)
			}
		}
	})
	if err != nil {
		return err
	}
	for i, cmd := range cmds {
		switch cmd := cmd.(type) {
		case *redis.IntCmd:
			sizes[i].ValueBytes = cmd.Val()
		case *redis.MapStringStringCmd:
			for f, v := range cmd.Val() {
				sizes[i].ValueBytes += int64(len(f) + len(v))
			}
		case *redis.StringCmd:
			sizes[i].ValueBytes = int64(len(cmd.Val()))
		}
		// WRONGTYPE or nil: changed or gone since TYPE, measured as 0.
		if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) && !redis.HasErrorPrefix(err, "WRONGTYPE") {
			return err
		}
	}
	return nil
}

// MemoryGroup is the records of one format and status, and what they cost.
type MemoryGroup struct {
	Format  records.Format `json:"format"`
	Status  records.Status `json:"status,omitempty"` // none for keys that are no record (streams, state keys)
	Records int64          `json:"records"`          // reported by the scan
	Sampled int64          `json:"sampled"`          // measured with MEMORY USAGE
	Bytes   int64          `json:"bytes"`            // estimated: records x the sample's mean (exact when all were sampled)
	Mean    float64        `json:"mean_bytes"`       // the sample's mean MEMORY USAGE
	Exact   bool           `json:"exact"`            // every record of the group was measured
	Missing int64          `json:"gone,omitempty"`   // sampled keys gone before they were measured
}

// MemoryReport is a scan's memory by format and status.
type MemoryReport struct {
	Estimated bool          `json:"estimated"` // some group was not measured whole
	Sampled   int64         `json:"sampled"`   // keys measured
	Records   int64         `json:"records"`
	Bytes     int64         `json:"bytes"` // the groups' sum
	Groups    []MemoryGroup `json:"by_format_status"`
}

type groupKey struct {
	format records.Format
	status records.Status
}

// MemorySampler keeps a uniform sample of up to n records of each format and
// status as a scan reports them (reservoir sampling), measured after it.
type MemorySampler struct {
	n      int
	rng    *rand.Rand
	groups map[groupKey]*reservoir
}

type reservoir struct {
	seen int64
	keys []string
}

// NewMemorySampler samples up to n records of each format and status.
func NewMemorySampler(n int) *MemorySampler {
	return &MemorySampler{n: n, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), groups: map[groupKey]*reservoir{}}
}

// Add counts one reported record and keeps its key when the sample takes it.
func (m *MemorySampler) Add(r records.Record) {
	g := groupKey{r.Format, r.Status}
	res := m.groups[g]
	if res == nil {
		res = &reservoir{}
		m.groups[g] = res
	}
	res.seen++
	if len(res.keys) < m.n {
		res.keys = append(res.keys, r.Key)
	} else if j := m.rng.Int64N(res.seen); j < int64(m.n) {
		res.keys[j] = r.Key
	}
}

// Measure measures the sample and estimates each group's bytes from it.
func (m *MemorySampler) Measure(ctx context.Context, c *redisconn.Conn) (MemoryReport, error) {
	order := make([]groupKey, 0, len(m.groups))
	var all []string
	for g, res := range m.groups {
		order = append(order, g)
		all = append(all, res.keys...)
	}
	sizes, err := MeasureKeys(ctx, c, all, false)
	if err != nil {
		return MemoryReport{}, err
	}
	usage := make(map[string]int64, len(sizes))
	for _, s := range sizes {
		usage[s.Key] = s.UsageBytes
	}
	slices.SortFunc(order, func(a, b groupKey) int {
		return cmp.Or(cmp.Compare(a.format, b.format), cmp.Compare(a.status, b.status))
	})
	rep := MemoryReport{Groups: []MemoryGroup{}} // JSON: [] when nothing matched, never null
	for _, g := range order {
		res := m.groups[g]
		grp := MemoryGroup{Format: g.format, Status: g.status, Records: res.seen}
		var sum int64
		for _, k := range res.keys {
			if n, ok := usage[k]; ok {
				grp.Sampled++
				sum += n
			} else {
				grp.Missing++
			}
		}
		if grp.Sampled > 0 {
			grp.Mean = float64(sum) / float64(grp.Sampled)
			grp.Bytes = int64(grp.Mean*float64(grp.Records) + 0.5)
		}
		grp.Exact = grp.Sampled == grp.Records
		if grp.Exact {
			grp.Bytes = sum
		}
		rep.Estimated = rep.Estimated || !grp.Exact
		rep.Sampled += grp.Sampled
		rep.Records += grp.Records
		rep.Bytes += grp.Bytes
		rep.Groups = append(rep.Groups, grp)
	}
	return rep, nil
}
