package exec

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// The emulated IDMP surface: each command's script calls and how their
// replies become the command's reply.

// queueTimeError is an error Redis gives when a command is queued in MULTI
// (its command table's arity), rather than when EXEC runs it.
func queueTimeError(c Command) bool {
	switch c.Name {
	case "XADD":
		return len(c.Args) < 5
	case "XCFGSET":
		return len(c.Args) < 2
	case "XIDMPRECORD":
		return len(c.Args) != 5
	}
	return false
}

// local answers a command with an error found before sending it.
func (s *Session) local(p *pending, err error) error {
	s.fixedReply(p, resp.ErrorOf("ERR "+err.Error()), false)
	return nil
}

// fixedReply answers p with r, decided without the server. With standIn,
// inside MULTI a stand-in the server also refuses is queued in its place,
// as Redis refuses a command while queueing: EXEC then aborts (EXECABORT)
// rather than run part of the transaction, and the stand-in's reply is r.
func (s *Session) fixedReply(p *pending, r resp.Reply, standIn bool) {
	p.fixed = &r
	if standIn && p.queued {
		s.send(p, cmd([]string{"XADD"}))
		return
	}
	s.send(p)
}

// xadd sends an add, or adds it to the run; only what it sends alone has
// a pending of its own.
func (s *Session) xadd(c *Command) error {
	if s.native && len(c.Add.Fields) > idmp.MaxEmulatedFieldArgs {
		// More fields than XADD from Lua takes (about 8,000): sent unguarded
		// (docs/upgrade.md); no emulated add can have written such an entry.
		s.send(&pending{queued: s.inMulti}, cmd(c.Args))
		return nil
	}
	if s.inMulti || c.Add.Deletion != "" {
		// Inside MULTI each command is queued on its own; so goes an add
		// with KEEPREF, DELREF or ACKED: a server without them refuses it in
		// the script, which would stop the run and refuse every add after it.
		if err := s.flushRun(); err != nil {
			return err
		}
		return s.sendRun(&pending{queued: s.inMulti}, []stream.AddRequest{c.Add})
	}
	// Consecutive adds to one stream with the same options go in one call
	// (the same replies, in order; a repeat within the run dedupes: R11),
	// sent when another command comes, when it is full, or when input pauses.
	if len(s.run) > 0 && (len(s.run) == stream.MaxRun || s.runBytes > maxRunBytes || !stream.SameRun(s.run[0], c.Add)) {
		if err := s.flushRun(); err != nil {
			return err
		}
	}
	s.run = append(s.run, c.Add)
	for _, a := range c.Args {
		s.runBytes += len(a)
	}
	return nil
}

// maxRunBytes bounds a run's arguments, far below the server's query
// buffer limits.
const maxRunBytes = 4 << 20

// flushRun sends the adds waiting in the run.
func (s *Session) flushRun() error {
	if len(s.run) == 0 {
		return nil
	}
	run := s.run
	s.run, s.runBytes = nil, 0
	err := s.sendRun(&pending{}, run)
	s.run = run[:0] // the call is written: its array serves the next run
	return err
}

// sendRun sends one add script call for reqs, whose reply becomes one
// reply per request.
func (s *Session) sendRun(p *pending, reqs []stream.AddRequest) error {
	n := len(reqs) // the array serves the next run once the call is written
	p.outs = n
	call, parse, err := s.streams.AddCall(reqs)
	if err != nil {
		r := resp.ErrorOf("ERR " + err.Error())
		p.split = func([]resp.Reply) []resp.Reply { return slices.Repeat([]resp.Reply{r}, n) }
		s.send(p)
		return nil
	}
	p.split = func(rs []resp.Reply) []resp.Reply {
		r := rs[0]
		if r.IsError() {
			if exit.ScriptRefused(r.Str) {
				r = scriptsNeeded(s.native, r.Str)
			}
			return slices.Repeat([]resp.Reply{r}, n)
		}
		// The reader emits a run's replies before it reads the next run's:
		// their array serves the next.
		out := s.runReplies[:0]
		ids, noStream, err := parse(r.Value())
		for _, id := range ids {
			out = append(out, resp.BulkOf(id))
		}
		// The request that stopped the run and those after it (of the same
		// stream and options): the stream is missing (nil, as NOMKSTREAM
		// replies), or XADD failed.
		rest := resp.NilReply()
		if !noStream && err != nil {
			rest = resp.ErrorOf(strings.TrimSpace(err.Error()))
		}
		for len(out) < n {
			out = append(out, rest)
		}
		s.runReplies = out
		return out
	}
	s.send(p, script(call))
	return nil
}

// xcfgsetRefused answers an XCFGSET whose arguments Redis refuses, in
// Redis's order: the key's TYPE first (no such key, WRONGTYPE), then the
// argument error. Nothing is written.
func (s *Session) xcfgsetRefused(p *pending, c Command) {
	p.combine = func(rs []resp.Reply) resp.Reply {
		r := rs[0]
		switch {
		case r.IsError():
			return r
		case r.Str == "none":
			return resp.ErrorOf(errNoSuchKey)
		case r.Str != "stream":
			return resp.ErrorOf(errWrongType)
		}
		return resp.ErrorOf(c.CfgErr)
	}
	s.send(p, cmd([]string{"TYPE", c.Stream}))
}

// idmpFields are XINFO STREAM's six IDMP fields, in Redis 8.6's order.
var idmpFields = []string{"idmp-duration", "idmp-maxsize", "pids-tracked", "iids-tracked", "iids-added", "iids-duplicates"}

func (s *Session) xinfo(p *pending, c Command) error {
	call, err := s.streams.InfoCall(c.Stream)
	if err != nil {
		return s.local(p, err)
	}
	p.combine = func(rs []resp.Reply) resp.Reply {
		xi, ir := rs[0], rs[1]
		if xi.IsError() {
			return xi
		}
		if ir.IsError() {
			return ir
		}
		info, _, err := stream.ParseInfoCallReply(ir.Value(), c.Stream)
		if err != nil {
			return resp.ErrorOf("ERR " + err.Error())
		}
		vals := []int64{info.IDMPDuration, info.IDMPMaxSize, info.PIDsTracked, info.IIDsTracked, info.IIDsAdded, info.IIDsDuplicates}
		extra := make([]resp.Reply, 0, 12)
		for i, f := range idmpFields {
			extra = append(extra, resp.BulkOf(f), resp.IntOf(vals[i]))
		}
		return hideTokens(insertFields(xi, extra), info.TokenGroups)
	}
	s.send(p, cmd(c.Args), script(call))
	return nil
}

// hideTokens leaves the liveness tokens of emulated state (idmpctl's
// consumer groups, lua/stream_common.lua) out of XINFO STREAM's reply: its
// groups count (n of them), or FULL's list of groups.
func hideTokens(xi resp.Reply, n int64) resp.Reply {
	for i := 0; i+1 < len(xi.Elems); i += 2 {
		if xi.Elems[i].Str != "groups" {
			continue
		}
		switch v := xi.Elems[i+1]; {
		case v.Kind == resp.Int:
			xi.Elems[i+1].Int = max(0, v.Int-n)
		case v.Aggregate():
			xi.Elems[i+1] = withoutTokens(v)
		}
	}
	return xi
}

// withoutTokens is a list of consumer groups (XINFO GROUPS, or XINFO
// STREAM FULL's groups) without the liveness tokens of emulated state.
func withoutTokens(r resp.Reply) resp.Reply {
	if !r.Aggregate() {
		return r
	}
	out := r
	out.Elems = make([]resp.Reply, 0, len(r.Elems))
	for _, g := range r.Elems {
		token := false
		for i := 0; i+1 < len(g.Elems); i += 2 {
			if g.Elems[i].Str == "name" && stream.IsTokenGroup(g.Elems[i+1].Str) {
				token = true
			}
		}
		if !token {
			out.Elems = append(out.Elems, g)
		}
	}
	return out
}

// insertFields puts the IDMP fields where Redis 8.6 has them: after
// recorded-first-entry-id (Redis 7.0+), else before groups (or entries).
// A native server's own IDMP fields (--mode emulated on 8.6) make way.
func insertFields(xi resp.Reply, extra []resp.Reply) resp.Reply {
	kept := make([]resp.Reply, 0, len(xi.Elems)+len(extra))
	for i := 0; i+1 < len(xi.Elems); i += 2 {
		if !slices.Contains(idmpFields, xi.Elems[i].Str) {
			kept = append(kept, xi.Elems[i], xi.Elems[i+1])
		}
	}
	at := -1
	for i := 0; i+1 < len(kept); i += 2 {
		k := kept[i].Str
		if k == "recorded-first-entry-id" {
			at = i + 2
			break
		}
		if at < 0 && (k == "groups" || k == "entries") {
			at = i
		}
	}
	if at < 0 {
		at = len(kept)
	}
	out := xi
	out.Elems = make([]resp.Reply, 0, len(kept)+len(extra))
	out.Elems = append(out.Elems, kept[:at]...)
	out.Elems = append(out.Elems, extra...)
	out.Elems = append(out.Elems, kept[at:]...)
	return out
}

// configGet adds the stream-idmp-* parameters a pattern matches to the
// server's own CONFIG GET reply.
func (s *Session) configGet(p *pending, c Command) {
	matched := configMatches(c.ConfigPatterns)
	if len(matched) == 0 {
		s.send(p, cmd(c.Args))
		return
	}
	// The key is read on the session's connection (in a transaction, after
	// the writes queued before); where the server refuses (MOVED), the
	// session's values stand.
	known := *s.streams.Defaults
	value := func(d idmp.Defaults, n string) resp.Reply {
		if n == ParamMaxSize {
			return resp.BulkOf(strconv.FormatInt(d.MaxSize, 10))
		}
		return resp.BulkOf(strconv.FormatInt(d.Duration, 10))
	}
	if oursOnly(c.ConfigPatterns) {
		// Nothing of the server's can match: its CONFIG GET, which managed
		// Redis often refuses, is not asked. HGETALL's reply has CONFIG
		// GET's shape: an array, a map in RESP3.
		p.combine = func(rs []resp.Reply) resp.Reply {
			r, d := rs[0], known
			out := resp.Reply{Kind: r.Kind}
			if r.IsError() {
				out.Kind = resp.Array
				if s.opt.RESP3 {
					out.Kind = resp.Map
				}
			} else {
				field := func(f string) string {
					for i := 0; i+1 < len(r.Elems); i += 2 {
						if r.Elems[i].Str == f {
							return r.Elems[i+1].Str
						}
					}
					return ""
				}
				d = idmp.ParseDefaults(field(ParamDuration), field(ParamMaxSize))
			}
			for _, m := range matched {
				out.Elems = append(out.Elems, resp.BulkOf(m.as), value(d, m.param))
			}
			return out
		}
		s.send(p, cmd([]string{"HGETALL", idmp.DefaultsKey}))
		return
	}
	p.combine = func(rs []resp.Reply) resp.Reply {
		r := rs[0]
		if r.IsError() || !r.Aggregate() {
			return r
		}
		d := known
		if h := rs[1]; !h.IsError() {
			d = idmp.ParseDefaults("", "") // absent or unreadable: Redis's defaults
			if len(h.Elems) == 2 {
				d = idmp.ParseDefaults(h.Elems[0].Str, h.Elems[1].Str)
			}
		}
		// A server with native IDMP (--mode emulated there) lists the
		// parameters too: the emulation's values take their places.
		out := r
		out.Elems = append([]resp.Reply(nil), r.Elems...)
		for _, m := range matched {
			at := -1
			for i := 0; i+1 < len(out.Elems); i += 2 {
				if strings.EqualFold(out.Elems[i].Str, m.param) {
					at = i
					break
				}
			}
			if at >= 0 {
				out.Elems[at+1] = value(d, m.param)
				continue
			}
			out.Elems = append(out.Elems, resp.BulkOf(m.as), value(d, m.param))
		}
		return out
	}
	s.send(p, cmd(c.Args), cmd([]string{"HMGET", idmp.DefaultsKey, ParamDuration, ParamMaxSize}))
}

// configMatch is a stream-idmp-* parameter that CONFIG GET lists, under
// the name it shows.
type configMatch struct{ param, as string }

// configMatches is Redis 8.6.3's configGetCommand for the stream-idmp-*
// parameters: a pattern without *, ? or [ names one (any case) and shows
// it as typed; a glob shows its own name. The first pattern to match decides.
func configMatches(patterns []string) []configMatch {
	var out []configMatch
	for _, pat := range patterns {
		glob := strings.ContainsAny(pat, "[*?")
		for _, param := range []string{ParamDuration, ParamMaxSize} {
			if slices.ContainsFunc(out, func(m configMatch) bool { return m.param == param }) {
				continue
			}
			switch {
			case !glob && strings.EqualFold(pat, param):
				out = append(out, configMatch{param, pat})
			case glob && GlobMatch(pat, param, true):
				out = append(out, configMatch{param, param})
			}
		}
	}
	return out
}

// oursOnly reports CONFIG GET patterns that each start with "stream-idmp"
// before any wildcard: they can match nothing else.
func oursOnly(patterns []string) bool {
	for _, p := range patterns {
		lit := p
		if i := strings.IndexAny(p, `*?[\`); i >= 0 {
			lit = p[:i]
		}
		if !strings.HasPrefix(strings.ToLower(lit), "stream-idmp") {
			return false
		}
	}
	return true
}

// configSet writes the server-level defaults (validated by the grammar).
// Outside a transaction the streams of the database keep the defaults
// they were created with first (markStreams).
func (s *Session) configSet(p *pending, c Command) error {
	d, args := *s.streams.Defaults, []string{"HSET", idmp.DefaultsKey}
	if v := c.ConfigSet.Duration; v > 0 {
		d.Duration, args = v, append(args, ParamDuration, strconv.FormatInt(v, 10))
	}
	if v := c.ConfigSet.MaxSize; v > 0 {
		d.MaxSize, args = v, append(args, ParamMaxSize, strconv.FormatInt(v, 10))
	}
	if !p.queued {
		msg, err := s.markStreams(*s.streams.Defaults, d)
		if err != nil {
			return err
		}
		if msg != "" {
			s.fixedReply(p, resp.ErrorOf(msg), false)
			return nil
		}
	}
	written := false // the reader's, read after sync
	p.combine = func(rs []resp.Reply) resp.Reply {
		if rs[0].IsError() {
			return rs[0]
		}
		written = true
		return resp.StatusOf("OK")
	}
	s.send(p, cmd(args))
	if p.queued {
		// The commands queued after it see the new defaults; after EXEC or
		// DISCARD they are read again.
		s.streams.SetDefaults(d)
		s.defaultsInTx = true
		return nil
	}
	// The commands after it take the new defaults only if the server took
	// them (ACL, OOM, MOVED refuse): a rare command, worth its round trip.
	if err := s.sync(); err != nil {
		return err
	}
	if written {
		s.streams.SetDefaults(d)
	}
	return nil
}

// sync sends what is written and waits for every reply before it.
func (s *Session) sync() error {
	if err := s.Flush(); err != nil {
		return err
	}
	done := make(chan struct{})
	s.pending <- &pending{barrier: done}
	select {
	case <-done:
	case <-s.readDone:
	}
	return s.err()
}

// resolve opens the streams in the session's mode, once: auto is native
// when the session's HELLO said the server has IDMP. Native, the server's
// IDMP defaults are read once: the add calls (the upgrade guard) carry them.
func (s *Session) resolve(ctx context.Context) error {
	if s.streams != nil {
		return nil
	}
	if err := s.sync(); err != nil {
		return err
	}
	streams, err := stream.Open(ctx, s.conn, s.opt.Mode)
	if err == nil {
		err = streams.Settle(ctx)
	}
	if err != nil {
		return err
	}
	s.streams, s.native = streams, streams.Mode() != stream.ModeEmulated
	if s.native {
		return streams.Ready(ctx)
	}
	return nil
}

// scriptsNeeded answers an add whose script the server refused (no
// EVALSHA for this user, or scripting renamed away) in idmpctl's words,
// not the script call's (its SHA and state keys): natively the upgrade
// guard is the script, and idmpctl xadd needs none; emulated IDMP is one.
// NOPERM, or the server's own "unknown command" words, say to
// exit.Classify what it is: a permission (77) or its configuration (78).
func scriptsNeeded(native bool, refused string) resp.Reply {
	what, other := "idmpctl exec emulates XADD IDMP/IDMPAUTO with a script on this server (it has no native IDMP), and ", ""
	if native {
		what, other = "idmpctl exec sends XADD IDMP/IDMPAUTO through a script that keeps it from adding an iid that emulated IDMP state still knows (docs/upgrade.md), and ", "use idmpctl xadd, or "
	}
	if exit.ScriptingDisabled(refused) {
		refused = strings.TrimPrefix(refused, "ERR ") // its arguments are gone (redisconn's ownError)
		return resp.ErrorOf("ERR " + what + "the server has scripting renamed away (" + refused + "): " + other + "enable EVALSHA and EVAL")
	}
	return resp.ErrorOf("NOPERM " + what + "this user may not run scripts: " + other + "grant EVALSHA and EVAL")
}
