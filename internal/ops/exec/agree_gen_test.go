package exec_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// The agreement test's command generator (agree_test.go runs what it
// makes). A sequence is 25-60 steps over a few keys, each step a command
// or (in about one sequence in five) a pause of agreeWait: IDMP adds in
// both modes with their options in any order, duplicates, plain adds with
// explicit and * IDs, XCFGSET and CONFIG SET/GET of stream-idmp-*, XINFO,
// trims, deletions, renames and copies, MULTI blocks, wrong types and bad
// arities; some commands are mutated (a token dropped, doubled or put in
// an odd place) to walk Redis's grammar. Values are drawn from small pools
// so that retries, evictions and collisions are frequent.

// feature is a part of the generator's mix that a switch can take out.
type feature string

// Features of the emulation that branch i22-emu builds (issue 22: root
// causes 1 and 2, XIDMPRECORD, MOVE/RESTORE/SWAPDB). Until it merges they
// diverge by design, so the test leaves them out (and says so in its log).
const (
	// featRebuild: a key deleted (DEL, UNLINK) is written again in the
	// same sequence (root cause 1: a rebuilt stream kept its old state),
	// and now and then a stream is rebuilt on purpose as it was (g.rebuild:
	// the sequence, or * adds in one millisecond). Off, a deleted
	// name is never written again (its reads go on).
	featRebuild feature = "rebuild"
	// featLateDefaults: CONFIG SET of stream-idmp-* anywhere (root cause
	// 2: 8.6 takes the defaults when it creates a stream). Off, CONFIG SET
	// comes only before the sequence's first key exists.
	featLateDefaults feature = "late-defaults"
	// featXIDMPRecord: XIDMPRECORD commands (Redis 8.6.2).
	featXIDMPRecord feature = "xidmprecord"
	// featMoveDB: MOVE to database 1, SWAPDB 0 1 and SELECT between them.
	// Besides MOVE of a stream with state (refused today), they show that
	// the emulation's server-level defaults (the key
	// idmpctl:stream-idmp-defaults) belong to one database: after SELECT
	// or SWAPDB, CONFIG GET and new streams see another database's. DUMP
	// and RESTORE are not generated: a payload is its server's own.
	featMoveDB feature = "move-db"
)

// i22EmuMerged is the switch for the lead: set it to true when branch
// i22-emu is merged, and the generator takes in every feature above.
// IDMPCTL_AGREE_FEATURES=all (or a comma-separated list of them) turns
// them on before that, to check that branch's work. (Branch i22-agree
// merged main after i22-emu had, and set it.)
const i22EmuMerged = true

var i22EmuFeatures = []feature{featRebuild, featLateDefaults, featXIDMPRecord, featMoveDB}

// Differences the emulation keeps on purpose (docs/exec.md, "What differs
// from Redis 8.6"), off unless IDMPCTL_AGREE_FEATURES names them.
const (
	// featExhausted: plain adds at the last possible ID
	// (18446744073709551615-18446744073709551615). An IDMP add to such a
	// stream fails alike ("The stream has exhausted the last possible
	// ID"), but Redis 8.6.3 has already made the producer
	// (idmpGetOrCreateProducer comes before the check), so pids-tracked
	// counts a producer without iids; the emulation writes nothing when
	// an add fails. TestAgreementCases checks the error itself.
	featExhausted feature = "exhausted"
	// featDefaultsInMulti: CONFIG SET of stream-idmp-* inside MULTI. Out
	// of one, exec first gives the streams without state of their own the
	// defaults in force (8.6.3 keeps those of a stream's creation); inside
	// one it makes no round trips, so such a stream takes the new ones.
	featDefaultsInMulti feature = "defaults-in-multi"
	// featDefaultsPerDB: SELECT and SWAPDB in a sequence that sets the
	// server-level defaults. Emulated, they live in a key of a database
	// (idmpctl:stream-idmp-defaults), so another database has its own and
	// SWAPDB takes them along; natively they are the server's.
	featDefaultsPerDB feature = "defaults-per-db"
)

var allFeatures = append(slices.Clone(i22EmuFeatures), featExhausted, featDefaultsInMulti, featDefaultsPerDB)

// agreeWaitLabel is how a pause step shows in a reproducer.
const agreeWaitLabel = "sleep"

// step is one command, or a pause (wait) on both sides.
type step struct {
	args []string
	wait bool
}

type gen struct {
	r     *rand.Rand
	feats map[feature]bool
	steps []step
	// streams are the names that hold streams (a new one comes when every
	// name is retired); others hold or get other types.
	streams []string
	others  []string
	retired map[string]bool // deleted: never written again (without featRebuild)
	created bool            // a command that can create a key has been made
	waitAt  int             // the step index of the pause, -1 for none
	short   bool            // XCFGSET and CONFIG SET favour IDMP-DURATION 1 (a pause follows)
	inMulti bool
	fresh   int
	// selects: the sequence may SELECT and SWAPDB; without
	// featDefaultsPerDB it then sets no server-level defaults.
	selects bool
}

// genSequence makes seed's sequence.
func genSequence(seed uint64, feats map[feature]bool) []step {
	g := &gen{
		r:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		feats:   feats,
		streams: []string{"s", "t", "u"},
		others:  []string{"str", "h"},
		retired: map[string]bool{},
		waitAt:  -1,
	}
	n := 25 + g.r.IntN(30)
	if g.r.IntN(5) == 0 {
		g.waitAt = n/2 + g.r.IntN(n/2)
		g.short = true
	}
	g.selects = feats[featMoveDB] && g.chance(2)
	if !feats[featLateDefaults] && g.r.IntN(3) == 0 && g.mayConfigSet() {
		// The server-level defaults, set before anything exists.
		for range 1 + g.r.IntN(2) {
			g.add(g.configSet())
		}
	}
	for len(g.steps) < n {
		if len(g.steps) >= g.waitAt && g.waitAt >= 0 {
			g.steps = append(g.steps, step{wait: true})
			g.waitAt = -1
			continue
		}
		if g.r.IntN(12) == 0 {
			g.multi()
			continue
		}
		if g.feats[featRebuild] && g.r.IntN(25) == 0 {
			g.rebuild()
			continue
		}
		g.add(g.command())
	}
	return g.steps
}

func (g *gen) add(args []string) {
	if args != nil {
		g.steps = append(g.steps, step{args: args})
	}
}

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *gen) chance(n int) bool { return g.r.IntN(n) == 0 }

// readKey is any key: mostly a stream's name, some of other types, a
// missing one, and retired names.
func (g *gen) readKey() string {
	switch k := g.r.IntN(20); {
	case k < 14:
		return g.streams[g.r.IntN(len(g.streams))]
	case k < 17:
		return g.others[g.r.IntN(len(g.others))]
	case k < 18:
		return "missing"
	default:
		if len(g.retired) > 0 {
			names := make([]string, 0, len(g.retired))
			for n := range g.retired {
				names = append(names, n)
			}
			slices.Sort(names)
			return names[g.r.IntN(len(names))]
		}
		return g.streams[0]
	}
}

// writeKey is a key that a command may create: not a retired one.
func (g *gen) writeKey(stream bool) string {
	for range 20 {
		k := g.readKey()
		if !stream && g.r.IntN(3) == 0 {
			k = g.others[g.r.IntN(len(g.others))]
		}
		if k == "missing" && !g.chance(3) {
			continue
		}
		if g.writable(k) {
			g.created = true
			return k
		}
	}
	g.fresh++
	k := "s" + strconv.Itoa(g.fresh)
	g.streams = append(g.streams, k)
	g.created = true
	return k
}

func (g *gen) writable(k string) bool {
	return g.feats[featRebuild] || !g.retired[k]
}

// retire marks a key deleted: without featRebuild it is never written
// again, and a new stream name takes its place among the streams.
func (g *gen) retire(k string) {
	if g.feats[featRebuild] || g.retired[k] {
		return
	}
	g.retired[k] = true
	if i := slices.Index(g.streams, k); i >= 0 {
		g.fresh++
		g.streams[i] = "s" + strconv.Itoa(g.fresh)
	}
	if i := slices.Index(g.others, k); i >= 0 {
		g.fresh++
		g.others[i] = "o" + strconv.Itoa(g.fresh)
	}
}

// command makes one command (not MULTI, EXEC or a pause).
func (g *gen) command() []string {
	switch k := g.r.IntN(100); {
	case k < 22:
		return g.xaddIDMP(false)
	case k < 24:
		return g.burst()
	case k < 34:
		return g.xaddIDMP(true)
	case k < 44:
		return g.xaddPlain()
	case k < 52:
		return g.xcfgset()
	case k < 56:
		if (g.feats[featLateDefaults] || !g.created) && g.mayConfigSet() {
			return g.configSet()
		}
		return g.configGet()
	case k < 59:
		return g.configGet()
	case k < 66:
		return g.xinfo()
	case k < 70:
		return g.xtrim()
	case k < 72:
		return []string{"XDEL", g.readKey(), g.entryID()}
	case k < 77:
		return g.read()
	case k < 80:
		k := g.readKey()
		g.retire(k)
		return []string{g.pick("DEL", "UNLINK"), k}
	case k < 82:
		return g.wrongType()
	case k < 83:
		return g.xgroup()
	case k < 89:
		return g.move()
	case k < 93:
		return g.badArity()
	case k < 96 && g.feats[featXIDMPRecord]:
		return g.xidmprecord()
	case k < 99 && g.feats[featMoveDB]:
		return g.moveDB()
	default:
		return g.xaddIDMP(false)
	}
}

var (
	pids      = []string{"p1", "p1", "p2", "p3", "p\x00\xff"}
	iids      = []string{"i1", "i1", "i2", "i3", "i4", "i\"q"}
	fieldSets = [][2]string{{"f", "v"}, {"f", "w"}, {"g", "1"}, {"a", "b"}, {"h", ""}, {"f", "v w"}, {"b", "\x00\xff"}}
	// Entry IDs: small explicit ones, two in the far future (after which
	// * IDs are deterministic: their sequence grows) and the last one.
	explicitIDs = []string{"1-1", "2", "3-0", "3-*", "5-5", "0-1", "99999999999999-5", "99999999999999-9", "99999999999999-*"}
	maxID       = "18446744073709551615-18446744073709551615"
)

func (g *gen) fields(auto bool) []string {
	n := 1 + g.r.IntN(3)
	var out []string
	for range n {
		p := fieldSets[g.r.IntN(len(fieldSets))]
		out = append(out, p[0], p[1])
	}
	if auto && n > 1 && g.chance(2) {
		// The same pairs in another order: IDMPAUTO's iid ignores it.
		pairs := make([][2]string, 0, n)
		for i := 0; i < len(out); i += 2 {
			pairs = append(pairs, [2]string{out[i], out[i+1]})
		}
		g.r.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
		out = out[:0]
		for _, p := range pairs {
			out = append(out, p[0], p[1])
		}
	}
	return out
}

// trim is MAXLEN or MINID with or without = or ~, and sometimes LIMIT
// (a group of its own: Redis reads it anywhere before the ID).
func (g *gen) trim() (trim, limit []string) {
	if g.chance(2) {
		trim = []string{"MAXLEN"}
	} else {
		trim = []string{"MINID"}
	}
	approx := false
	switch g.r.IntN(3) {
	case 0:
		trim = append(trim, "=")
	case 1:
		trim = append(trim, "~")
		approx = true
	}
	if trim[0] == "MAXLEN" {
		trim = append(trim, g.pick("0", "1", "2", "3", "100", "-1", "x"))
	} else {
		trim = append(trim, g.pick("0", "2", "3-0", "5-5", "99999999999999-7", "99999999999999-9", "x", "-"))
	}
	if approx && g.chance(3) || g.chance(15) {
		limit = []string{"LIMIT", g.pick("0", "1", "10", "-1", "x")}
	}
	return trim, limit
}

func (g *gen) xaddIDMP(auto bool) []string {
	var groups [][]string
	if auto {
		groups = append(groups, []string{"IDMPAUTO", g.pick(pids...)})
	} else {
		groups = append(groups, []string{"IDMP", g.pick(pids...), g.pick(iids...)})
	}
	nomk := g.chance(7)
	if nomk {
		groups = append(groups, []string{"NOMKSTREAM"})
	}
	trimmed := g.chance(4)
	if trimmed {
		t, l := g.trim()
		groups = append(groups, t)
		if l != nil {
			groups = append(groups, l)
		}
	}
	if g.chance(10) {
		if trimmed {
			// DELREF and ACKED with trimming need Redis 8.2+: the
			// emulated side (7.0) refuses them where it would add
			// (docs/exec.md; TestAgreementCases/delref-order).
			groups = append(groups, []string{"KEEPREF"})
		} else {
			groups = append(groups, []string{g.pick("KEEPREF", "DELREF", "ACKED")})
		}
	}
	g.r.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
	var key string
	if nomk {
		key = g.readKey()
	} else {
		key = g.writeKey(true)
	}
	args := []string{"XADD", key}
	for _, gr := range groups {
		args = append(args, gr...)
	}
	args = append(args, "*")
	args = append(args, g.fields(auto)...)
	if g.chance(7) {
		args = g.mutate(args, xaddWords)
	}
	if plainWithDeletion(args) {
		return nil
	}
	return args
}

// plainWithDeletion reports an XADD that Redis reads as a plain add (no
// IDMP or IDMPAUTO before its ID: a mutation can move the *) with
// KEEPREF, DELREF or ACKED, Redis 8.2's words. exec emulates IDMP, not
// 8.2's plain XADD: it passes a plain one to the server as it is, and
// Redis 7.0 refuses the word (docs/exec.md: exec's limits). The scan is Redis
// 8.6.3's option loop (streamParseAddOrTrimArgsOrReply), not exec's.
func plainWithDeletion(args []string) bool {
	deletion, idmp := false, false
	for i := 2; i < len(args); i++ {
		more := len(args) - 1 - i
		switch o := strings.ToUpper(args[i]); {
		case args[i] == "*":
			return deletion && !idmp
		case (o == "MAXLEN" || o == "MINID") && more > 0:
			if more >= 2 && (args[i+1] == "~" || args[i+1] == "=") {
				i++
			}
			i++
		case o == "LIMIT" && more > 0:
			i++
		case !deletion && (o == "KEEPREF" || o == "DELREF" || o == "ACKED"):
			deletion = true
		case o == "NOMKSTREAM":
		case o == "IDMPAUTO" && more > 0:
			idmp = true
			i++
		case o == "IDMP" && more >= 2:
			idmp = true
			i += 2
		default:
			return deletion && !idmp // the ID
		}
	}
	return false
}

var xaddWords = []string{"IDMP", "IDMPAUTO", "MAXLEN", "MINID", "LIMIT", "~", "=", "NOMKSTREAM", "KEEPREF", "*", "", "0", "-1", "x", "5-5"}

// mutate changes one or two tokens after the key: drops one, doubles one,
// moves one, or puts a word of words somewhere.
func (g *gen) mutate(args []string, words []string) []string {
	out := slices.Clone(args)
	for range 1 + g.r.IntN(2) {
		if len(out) <= 2 {
			break
		}
		i := 2 + g.r.IntN(len(out)-2)
		switch g.r.IntN(4) {
		case 0:
			out = slices.Delete(out, i, i+1)
		case 1:
			out = slices.Insert(out, i, out[i])
		case 2:
			j := 2 + g.r.IntN(len(out)-2)
			out[i], out[j] = out[j], out[i]
		default:
			out = slices.Insert(out, i, g.pick(words...))
		}
	}
	return out
}

// burst is 2-4 IDMP adds to one stream with the same options (the
// emulation sends them in one script call), the last returned for the
// caller to add (a MULTI block counts it as one command).
func (g *gen) burst() []string {
	first := g.xaddIDMP(g.chance(3))
	idmp := slices.IndexFunc(first, func(a string) bool { return strings.EqualFold(a, "IDMP") })
	star := slices.Index(first, "*")
	if first == nil || star < 0 {
		return first
	}
	cur := first
	for range 1 + g.r.IntN(3) {
		g.add(cur)
		next := slices.Clone(first[:star+1])
		if idmp >= 0 && idmp+2 < star {
			next[idmp+2] = g.pick(iids...)
		}
		cur = append(next, g.fields(true)...)
		if plainWithDeletion(cur) {
			return nil
		}
	}
	return cur
}

func (g *gen) xgroup() []string {
	args := []string{"XGROUP", "CREATE", g.readKey(), g.pick("g1", "g2"), g.pick("0", "$")}
	if g.chance(2) {
		args[2] = g.writeKey(true)
		args = append(args, "MKSTREAM")
	}
	return args
}

func (g *gen) xaddPlain() []string {
	args := []string{"XADD"}
	nomk := g.chance(8)
	var opts []string
	if nomk {
		opts = append(opts, "NOMKSTREAM")
	}
	if g.chance(6) {
		t, l := g.trim()
		opts = append(opts, t...)
		opts = append(opts, l...)
	}
	id := "*"
	switch {
	case g.feats[featExhausted] && g.chance(40):
		id = maxID
	case g.chance(2):
		id = g.pick(explicitIDs...)
		if g.chance(10) {
			id = "0-0"
		}
	}
	if nomk {
		args = append(args, g.readKey())
	} else {
		args = append(args, g.writeKey(true))
	}
	args = append(args, opts...)
	args = append(args, id)
	args = append(args, g.fields(false)...)
	if g.chance(10) {
		args = g.mutate(args, xaddWords)
	}
	if plainWithDeletion(args) {
		return nil
	}
	return args
}

// durations never fall in 2..59: a pause (agreeWait) must leave an iid
// clearly expired (duration 1) or clearly live (60 and up) on both sides,
// whatever Redis's once-a-second expiry cycle does (see agree_test.go).
func (g *gen) duration() string {
	if g.short && g.chance(2) {
		return "1"
	}
	return g.pick("1", "60", "100", "100", "86400", "0", "86401", "-1", "x", "1.5", "05", "")
}

func (g *gen) maxsize() string {
	return g.pick("1", "2", "3", "100", "10000", "0", "10001", "-5", "x", "2 ")
}

func (g *gen) xcfgset() []string {
	args := []string{"XCFGSET", g.readKey()}
	if g.chance(6) {
		args[1] = g.writeKey(true) // an existing stream is the common case
	}
	var groups [][]string
	if !g.chance(12) {
		if g.chance(3) || g.short {
			groups = append(groups, []string{g.pick("IDMP-DURATION", "idmp-duration"), g.duration()})
		}
		if g.chance(2) || len(groups) == 0 {
			groups = append(groups, []string{g.pick("IDMP-MAXSIZE", "Idmp-MaxSize"), g.maxsize()})
		}
		if g.chance(8) {
			// A parameter given twice.
			d := slices.Clone(groups[g.r.IntN(len(groups))])
			groups = append(groups, d)
		}
		if g.chance(12) {
			groups = append(groups, []string{g.pick("IDMP-DURATION", "IDMP-MAXSIZE", "FOO")})
		}
	}
	g.r.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
	for _, gr := range groups {
		args = append(args, gr...)
	}
	if g.chance(10) {
		args = g.mutate(args, []string{"IDMP-DURATION", "IDMP-MAXSIZE", "60", "x", ""})
		if shortDuration(args) {
			return nil
		}
	}
	return args
}

// shortDuration reports a command that may set a duration of 2..59
// seconds (a mutation moved a value), which the generator never sends.
func shortDuration(args []string) bool {
	for i := 1; i+1 < len(args); i++ {
		if a := strings.ToLower(args[i]); a == "idmp-duration" || a == "stream-idmp-duration" {
			if n, err := strconv.Atoi(strings.TrimSpace(args[i+1])); err == nil && n >= 2 && n < 60 {
				return true
			}
		}
	}
	return false
}

func (g *gen) configSet() []string {
	names := []string{"stream-idmp-duration", "STREAM-IDMP-DURATION", "stream-idmp-maxsize", "Stream-Idmp-MaxSize"}
	args := []string{"CONFIG", "SET"}
	n := 1 + g.r.IntN(2)
	for range n {
		name := g.pick(names...)
		v := g.maxsize()
		if strings.Contains(strings.ToLower(name), "duration") {
			v = g.duration()
		}
		args = append(args, name, v)
	}
	if g.chance(10) {
		// A token dropped (the server's arity or syntax error); CONFIG SET
		// gets no foreign parameter names (docs/exec.md: it goes alone).
		i := 2 + g.r.IntN(len(args)-2)
		args = slices.Delete(args, i, i+1)
	}
	return args
}

func (g *gen) configGet() []string {
	pats := []string{"stream-idmp-duration", "STREAM-IDMP-MAXSIZE", "Stream-Idmp-*", "stream-idmp-*",
		"*idmp-d*", "stream-idmp-max?ize", "stream-idmp-[dm]*", "stream-idmp-nosuch", `stream-idmp\-duration`, "STREAM-IDMP-DURATION"}
	args := []string{"CONFIG", "GET"}
	for range 1 + g.r.IntN(2) {
		args = append(args, g.pick(pats...))
	}
	return args
}

func (g *gen) xinfo() []string {
	args := []string{"XINFO", "STREAM", g.readKey()}
	if g.chance(5) {
		args = append(args, "FULL")
		if g.chance(2) {
			args = append(args, "COUNT", g.pick("1", "0", "x"))
		}
	}
	return args
}

func (g *gen) xtrim() []string {
	t, l := g.trim()
	args := append([]string{"XTRIM", g.readKey()}, t...)
	return append(args, l...)
}

// entryID is an ID that some entries have: explicit ones, and the * IDs
// after the far-future anchor.
func (g *gen) entryID() string {
	return g.pick("1-1", "2-0", "3-0", "5-5", "99999999999999-5", "99999999999999-6", "99999999999999-7", "99999999999999-9", "99999999999999-10", "x")
}

func (g *gen) read() []string {
	k := g.readKey()
	switch g.r.IntN(5) {
	case 0:
		return []string{"XLEN", k}
	case 1:
		return []string{"EXISTS", k}
	case 2:
		return []string{"TYPE", k}
	default:
		return []string{"XRANGE", k, "-", "+"}
	}
}

func (g *gen) wrongType() []string {
	k := g.writeKey(false)
	switch g.r.IntN(3) {
	case 0:
		return []string{"SET", k, "x"}
	case 1:
		return []string{"HSET", k, "f", "v"}
	default:
		return []string{"LPUSH", k, "a"}
	}
}

// move is RENAME, RENAMENX or COPY (the destination is written).
func (g *gen) move() []string {
	src := g.readKey()
	if g.chance(8) {
		return []string{"COPY", src, src}
	}
	dst := g.writeKey(true)
	switch g.r.IntN(4) {
	case 0:
		return []string{"RENAMENX", src, dst}
	case 1:
		args := []string{"COPY", src, dst}
		if g.chance(2) {
			args = append(args, "REPLACE")
		}
		return args
	default:
		return []string{"RENAME", src, dst}
	}
}

func (g *gen) badArity() []string {
	k := g.readKey()
	return [][]string{
		{"XADD", k},
		{"XADD", k, "*"},
		{"XADD", k, "IDMP", "p1", "i1", "*"},
		{"XADD", k, "IDMP", "p1", "i1", "*", "f"},
		{"XADD", k, "IDMPAUTO", "p1", "*", "f", "v", "g"},
		{"XADD", k, "IDMP", "p1"},
		{"XCFGSET"},
		{"XCFGSET", k},
		{"XINFO", "STREAM"},
		{"CONFIG", "SET", "stream-idmp-duration"},
		{"CONFIG", "GET"},
		{"RENAME", k},
		{"COPY", k},
	}[g.r.IntN(13)]
}

func (g *gen) xidmprecord() []string {
	args := []string{"XIDMPRECORD", g.readKey(), g.pick(pids...), g.pick(iids...), g.entryID()}
	if g.chance(6) {
		args = args[:len(args)-1]
	}
	return args
}

// mayConfigSet reports whether CONFIG SET of the defaults may come now
// (see featDefaultsInMulti and featDefaultsPerDB).
func (g *gen) mayConfigSet() bool {
	return (!g.inMulti || g.feats[featDefaultsInMulti]) && (!g.selects || g.feats[featDefaultsPerDB])
}

func (g *gen) moveDB() []string {
	switch k := g.r.IntN(4); {
	case k == 0 && g.selects:
		return []string{"SWAPDB", "0", "1"}
	case k == 1 && g.selects:
		return []string{"SELECT", g.pick("0", "1")}
	default:
		return []string{"MOVE", g.readKey(), "1"}
	}
}

// rebuild deletes a stream and builds it again as it was, then retries
// an iid of the old one: 8.6.3 adds it (a new stream has no iids). Either
// with the same explicit IDs (issue 22's sequence), or with * IDs, which
// repeat when the rebuild falls in the same millisecond.
func (g *gen) rebuild() {
	k := g.writeKey(true)
	pid, iid := g.pick(pids...), g.pick(iids...)
	idmp := []string{"XADD", k, "IDMP", pid, iid, "*", "f", "v"}
	if g.chance(2) {
		g.add([]string{"XADD", k, "99999999999999-5", "f", "v"})
		g.add(idmp)
		g.add([]string{g.pick("DEL", "UNLINK"), k})
		g.add([]string{"XADD", k, "99999999999999-5", "f", "v"})
		g.add([]string{"XADD", k, "99999999999999-6", "f", "v"})
	} else {
		g.add(idmp)
		g.add([]string{g.pick("DEL", "UNLINK"), k})
		g.add([]string{"XADD", k, "*", "f", "v"})
	}
	g.add(idmp)
	g.add([]string{"XINFO", "STREAM", k})
}

// multi is a MULTI block: 1-4 commands, then EXEC (or DISCARD); one
// sometimes has an arity error (EXECABORT).
func (g *gen) multi() {
	g.inMulti = true
	defer func() { g.inMulti = false }()
	g.add([]string{"MULTI"})
	for range 1 + g.r.IntN(4) {
		if g.chance(10) {
			g.add(g.badArity())
			continue
		}
		g.add(g.command())
	}
	if g.chance(7) {
		g.add([]string{"DISCARD"})
	} else {
		g.add([]string{"EXEC"})
	}
}
