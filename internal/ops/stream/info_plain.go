package stream

// The emulated XINFO view for a user who may not run scripts (+@read
// +@connection +info +time): lua/stream_emu_info.lua's, by plain reads, so
// not one snapshot (Info.NotAtomic). It writes nothing.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/redis/go-redis/v9"
)

// plainMeta is the meta hash as load_meta reads it.
type plainMeta struct {
	duration, maxsize, added, dups int64
	owner                          *string
	snapID                         string
	snapAdded                      *int64
	snapSum                        string
	pids                           *int64 // the pids set's size after the last write (newer state only)
	gen                            string // the liveness token's gen ("" none)
	unordered                      bool   // a producer may hold iids out of entry order
}

// plainXInfo is what the view needs of XINFO STREAM (raw: entries-added is
// absent before Redis 7.0, which go-redis's parsed form hides).
type plainXInfo struct {
	length       int64
	lastGenID    string
	entriesAdded *int64
	firstID      string
	lastID       string
	groups       int64
}

// emulatedInfoPlain reads the view on the stream's node, whose TIME counts.
func (s *Streams) emulatedInfoPlain(ctx context.Context, stream string) (Info, error) {
	l, err := idmp.StateKeys(stream, s.Conn.Cluster())
	if err != nil {
		return Info{}, err
	}
	s.LoadDefaults(ctx) // best effort, as for the script: a stream without state shows them
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var node redis.UniversalClient = s.Conn.Client()
	if cc, ok := s.Conn.Client().(*redis.ClusterClient); ok {
		if node, err = cc.MasterForKey(ctx, stream); err != nil {
			return Info{}, err
		}
	}
	var typ *redis.StatusCmd
	var meta *redis.SliceCmd
	var xinfo *redis.Cmd
	var hasPIDs *redis.IntCmd
	_, err = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		typ = p.Type(ctx, stream)
		meta = p.HMGet(ctx, l.Meta, "duration", "maxsize", "iids-added", "iids-duplicates", "stream",
			"snap-id", "snap-added", "snap-sum", "pids", "gen", "unordered")
		xinfo = p.Do(ctx, "XINFO", "STREAM", stream)
		hasPIDs = p.Exists(ctx, l.PIDs)
		return nil
	})
	if err != nil && !isReply(err) {
		return Info{}, err
	}
	switch t := typ.Val(); {
	case typ.Err() != nil:
		return Info{}, typ.Err()
	case t == "none":
		return Info{}, errNoSuchKey()
	case t != "stream":
		// Redis's WRONGTYPE text, as the info script returns it.
		return Info{}, exit.New(exit.Data, "", "WRONGTYPE Operation against a key holding the wrong kind of value")
	}
	if err := meta.Err(); err != nil {
		return Info{}, err
	}
	m := parsePlainMeta(meta.Val())
	if m.owner != nil && *m.owner != stream {
		return Info{}, scriptErr(fmt.Errorf("IDMPCONFLICT emulated IDMP state %s belongs to stream %s", l.Meta, *m.owner))
	}
	xi, err := parsePlainXInfo(xinfo)
	if err != nil {
		return Info{}, err
	}
	if err := hasPIDs.Err(); err != nil {
		return Info{}, err
	}

	mode := "emulated"
	var problems []string
	switch {
	case m.owner == nil && hasPIDs.Val() == 1:
		// A state with a part missing (evicted, or deleted by hand).
		problems = append(problems, "the settings hash "+l.Meta+" is missing (settings and counters shown are the defaults)")
		m = s.freshMeta()
	case m.owner == nil:
		mode, m = "none", s.freshMeta()
	default:
		stale, err := plainStale(ctx, node, stream, xi, m)
		if err != nil {
			return Info{}, err
		}
		if stale {
			mode, m = "none", s.freshMeta()
		}
	}
	now, err := node.Time(ctx).Result()
	if err != nil {
		return Info{}, err
	}
	info := Info{
		Stream: stream, Mode: mode, IDMPDuration: m.duration, IDMPMaxSize: m.maxsize,
		IIDsAdded: m.added, IIDsDuplicates: m.dups, ServerTimeMS: now.UnixMilli(), Length: xi.length,
		LastGeneratedID: xi.lastGenID, EntriesAdded: -1, FirstID: xi.firstID, LastID: xi.lastID,
		NotAtomic: true, Token: mode == "emulated" && m.gen != "",
	}
	if xi.entriesAdded != nil {
		info.EntriesAdded = *xi.entriesAdded
	}
	if xi.groups > 0 {
		n, err := plainTokenGroups(ctx, node, stream)
		if err != nil {
			return Info{}, err
		}
		info.TokenGroups = n
	}
	if mode == "emulated" {
		pids, more, err := plainPIDs(ctx, node, l, m, info.ServerTimeMS)
		if err != nil {
			return Info{}, err
		}
		problems = append(problems, more...)
		for _, p := range pids {
			if p.IIDs > 0 {
				info.PIDs = append(info.PIDs, p)
				info.PIDsTracked++
				info.IIDsTracked += p.IIDs
			}
		}
		slices.SortFunc(info.PIDs, func(a, b PIDTracking) int { return strings.Compare(a.PID, b.PID) })
		info.Inconsistent = strings.Join(problems, "; ")
	}
	return info, nil
}

// isReply reports a reply error of one command of a pipeline (it stays on
// its command), as opposed to a failure of the round trip.
func isReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) || errors.Is(err, redis.Nil)
}

// freshMeta is fresh_meta(): the server-level defaults, or Redis's.
func (s *Streams) freshMeta() plainMeta {
	m := plainMeta{duration: idmp.DefaultDuration, maxsize: idmp.DefaultMaxSize}
	if s.Defaults != nil {
		m.duration, m.maxsize = s.Defaults.Duration, s.Defaults.MaxSize
	}
	return m
}

// parsePlainMeta is load_meta(): absent fields take Redis's defaults.
func parsePlainMeta(v []any) plainMeta {
	m := plainMeta{duration: idmp.DefaultDuration, maxsize: idmp.DefaultMaxSize}
	str := func(i int) (string, bool) {
		if i >= len(v) {
			return "", false
		}
		s, ok := v[i].(string)
		return s, ok
	}
	num := func(i int) *int64 {
		s, _ := str(i)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return &n
		}
		return nil
	}
	for i, into := range []*int64{&m.duration, &m.maxsize, &m.added, &m.dups} {
		if n := num(i); n != nil {
			*into = *n
		}
	}
	if s, ok := str(4); ok {
		m.owner = &s
	}
	m.snapID, _ = str(5)
	m.snapAdded, m.pids = num(6), num(8)
	m.snapSum, _ = str(7)
	m.gen, _ = str(9)
	u, _ := str(10)
	m.unordered = u == "1"
	return m
}

func parsePlainXInfo(cmd *redis.Cmd) (plainXInfo, error) {
	flat, err := cmd.Slice()
	if err != nil {
		return plainXInfo{}, err
	}
	var xi plainXInfo
	entryID := func(v any) string {
		if e, ok := v.([]any); ok && len(e) > 0 {
			id, _ := e[0].(string)
			return id
		}
		return ""
	}
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		switch v := flat[i+1]; k {
		case "length":
			xi.length, _ = v.(int64)
		case "last-generated-id":
			xi.lastGenID, _ = v.(string)
		case "entries-added":
			if n, ok := v.(int64); ok {
				xi.entriesAdded = &n
			}
		case "groups":
			xi.groups, _ = v.(int64)
		case "first-entry":
			xi.firstID = entryID(v)
		case "last-entry":
			xi.lastID = entryID(v)
		}
	}
	return xi, nil
}

// plainStale is stale() of lua/stream_common.lua: whether the stream was
// deleted and recreated by someone else since the state's last write.
func plainStale(ctx context.Context, node redis.UniversalClient, stream string, xi plainXInfo, m plainMeta) (bool, error) {
	if m.gen != "" {
		err := node.Do(ctx, "XINFO", "CONSUMERS", stream, tokenPrefix+m.gen).Err()
		switch {
		case err == nil:
			return false, nil
		case redis.HasErrorPrefix(err, "NOGROUP"):
			return true, nil
		case !isReply(err):
			return false, err
		}
		// Not readable (NOPERM): the snapshot decides.
	}
	if m.snapID == "" {
		return false, nil
	}
	if idLess(xi.lastGenID, m.snapID) {
		return true, nil
	}
	ea := xi.entriesAdded
	if ea != nil && m.snapAdded != nil && *ea < *m.snapAdded {
		return true, nil
	}
	if m.snapSum != "" {
		sum, ok, err := entrySum(ctx, node, stream, m.snapID)
		if err != nil {
			return false, err
		}
		if ok {
			return sum != m.snapSum, nil
		}
	}
	if ea == nil || m.snapAdded == nil {
		return false, nil
	}
	k := *ea - *m.snapAdded
	if k <= 64 {
		above, err := node.Do(ctx, "XRANGE", stream, "("+m.snapID, "+", "COUNT", k+1).Slice()
		if err == nil {
			return int64(len(above)) > k, nil
		}
		if !isReply(err) {
			return false, err
		}
	}
	if xi.length > 0 && xi.firstID != "" && !idLess(m.snapID, xi.firstID) {
		return false, nil
	}
	return xi.length > k, nil
}

// entrySum is entry_sum(): a digest of the entry with this ID.
func entrySum(ctx context.Context, node redis.UniversalClient, stream, id string) (string, bool, error) {
	v, err := node.Do(ctx, "XRANGE", stream, id, id).Result()
	if err != nil {
		return "", false, err
	}
	fields, ok := entryFields(v)
	if !ok {
		return "", false, nil
	}
	var b strings.Builder
	for _, s := range fields {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	sum := sha1.Sum([]byte(b.String()))
	return hex.EncodeToString(sum[:]), true, nil
}

// idLess compares stream IDs exactly (ms-seq; another text counts as 0-0).
func idLess(a, b string) bool {
	key := func(id string) []uint64 {
		ms, seq, _ := strings.Cut(id, "-")
		m, err1 := strconv.ParseUint(ms, 10, 64)
		n, err2 := strconv.ParseUint(seq, 10, 64)
		if err1 != nil || err2 != nil {
			return []uint64{0, 0}
		}
		return []uint64{m, n}
	}
	return slices.Compare(key(a), key(b)) < 0
}

// tokenPrefix starts the name of a liveness token: a consumer group that
// emulated IDMP state keeps on its stream (lua/stream_common.lua).
const tokenPrefix = "idmpctl:"

// IsTokenGroup reports whether a consumer group's name is that of a
// liveness token: idmpctl: and 12 hex digits.
func IsTokenGroup(name string) bool {
	gen, ok := strings.CutPrefix(name, tokenPrefix)
	return ok && len(gen) == 12 && strings.Trim(gen, "0123456789abcdef") == ""
}

// plainTokenGroups counts the liveness tokens among the stream's groups
// (0 when XINFO GROUPS is refused: the info script's count is the same).
func plainTokenGroups(ctx context.Context, node redis.UniversalClient, stream string) (int64, error) {
	groups, err := node.Do(ctx, "XINFO", "GROUPS", stream).Slice()
	if err != nil {
		if isReply(err) {
			return 0, nil
		}
		return 0, err
	}
	var n int64
	for _, g := range groups {
		flat, _ := g.([]any)
		for i := 0; i+1 < len(flat); i += 2 {
			if k, _ := flat[i].(string); k == "name" {
				if name, _ := flat[i+1].(string); IsTokenGroup(name) {
					n++
				}
			}
		}
	}
	return n, nil
}

// plainPIDs is each producer's live_count (binary searches for the expired
// prefix, stepping together in pipelined rounds), and what is inconsistent.
func plainPIDs(ctx context.Context, node redis.UniversalClient, l idmp.StateLayout, m plainMeta, nowMs int64) ([]PIDTracking, []string, error) {
	pids, err := node.SMembers(ctx, l.PIDs).Result()
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	if m.pids != nil && *m.pids != int64(len(pids)) {
		problems = append(problems, fmt.Sprintf("the pids set %s names %d of the %d producers last written", l.PIDs, len(pids), *m.pids))
	}
	type search struct {
		lo, hi, n    int64
		hlen, llen   *redis.IntCmd
		lindex, hget *redis.StringCmd
	}
	ss := make([]search, len(pids))
	if _, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, pid := range pids {
			ss[i].hlen, ss[i].llen = p.HLen(ctx, l.IDs(pid)), p.LLen(ctx, l.Order(pid))
		}
		return nil
	}); err != nil && !isReply(err) {
		return nil, nil, err
	}
	broken := 0
	for i, pid := range pids {
		s := &ss[i]
		if err := cmpErr(s.hlen.Err(), s.llen.Err()); err != nil {
			return nil, nil, err
		}
		hlen, llen := s.hlen.Val(), s.llen.Val()
		if hlen != llen {
			broken++
			if broken <= 3 {
				problems = append(problems, fmt.Sprintf("producer %s has %d iids but %d in its order list", luaQuote(pid), hlen, llen))
			}
		}
		s.hi, s.n = llen, llen
	}
	if broken > 3 {
		problems = append(problems, fmt.Sprintf("%d more producers likewise", broken-3))
	}
	durMs := m.duration * 1000
	if m.unordered {
		// Out of entry order: the expired prefix is scanned from the front.
		for i, pid := range pids {
			live, err := plainLiveScan(ctx, node, l, pid, ss[i].n, durMs, nowMs)
			if err != nil {
				return nil, nil, err
			}
			ss[i].lo = ss[i].n - live
		}
	}
	for round := 0; round < 64 && !m.unordered; round++ { // log2 of any list length
		active := false
		if _, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range ss {
				s := &ss[i]
				s.lindex, s.hget = nil, nil
				if s.lo < s.hi {
					active = true
					s.lindex = p.LIndex(ctx, l.Order(pids[i]), (s.lo+s.hi)/2)
				}
			}
			return nil
		}); err != nil && !isReply(err) {
			return nil, nil, err
		}
		if !active {
			break
		}
		if _, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range ss {
				if s := &ss[i]; s.lindex != nil && s.lindex.Err() == nil {
					s.hget = p.HGet(ctx, l.IDs(pids[i]), s.lindex.Val())
				}
			}
			return nil
		}); err != nil && !isReply(err) {
			return nil, nil, err
		}
		for i := range ss {
			s := &ss[i]
			if s.lindex == nil {
				continue
			}
			if err := cmpErr(s.lindex.Err()); err != nil {
				return nil, nil, err
			}
			id := "" // a missing iid is not live
			if s.hget != nil {
				if err := cmpErr(s.hget.Err()); err != nil {
					return nil, nil, err
				}
				id = s.hget.Val()
			}
			if mid := (s.lo + s.hi) / 2; liveID(id, durMs, nowMs) {
				s.hi = mid
			} else {
				s.lo = mid + 1
			}
		}
	}
	out := make([]PIDTracking, len(pids))
	for i, pid := range pids {
		out[i] = PIDTracking{PID: pid, IIDs: ss[i].n - ss[i].lo}
	}
	return out, problems, nil
}

// plainLiveScan is live_count's scan of an unordered list: the iids after
// the longest prefix of expired ones.
func plainLiveScan(ctx context.Context, node redis.UniversalClient, l idmp.StateLayout, pid string, n, durMs, nowMs int64) (int64, error) {
	for i := int64(0); i < n; {
		chunk, err := node.LRange(ctx, l.Order(pid), i, i+99).Result()
		if err != nil {
			return 0, err
		}
		if len(chunk) == 0 {
			break
		}
		ids, err := node.HMGet(ctx, l.IDs(pid), chunk...).Result()
		if err != nil {
			return 0, err
		}
		for k, v := range ids {
			if id, _ := v.(string); liveID(id, durMs, nowMs) {
				return n - (i + int64(k)), nil
			}
		}
		i += int64(len(chunk))
	}
	return 0, nil
}

// liveID reports whether an iid whose entry has this ID is within DURATION.
func liveID(id string, durMs, nowMs int64) bool {
	ms, ok := idMillis(id)
	return ok && int64(ms)+durMs > nowMs
}

// cmpErr is the first error that is not redis.Nil (a missing element).
func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

// luaQuote is Lua 5.1's string.format('%q', s), as the info script names
// producers: escapes only '"', '\\', newline, CR and NUL.
func luaQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\r':
			b.WriteString("\\r")
		case 0:
			b.WriteString("\\000")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
