package exec

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/resp"
)

// ReadOnlyRefused marks (in Reply.Int) the error reply of a command refused
// in read-only mode (Options.ReadOnly), never sent: the caller exits 64.
const ReadOnlyRefused = -2

// Under --read-only exec runs what the server marks read-only (COMMAND
// INFO's "readonly" flag) and refuses the rest before sending it, except:
// the IDMP surface is judged by what it does (idmpSurface); commands that
// change no data (readOnlySafe) run; a command the server does not know is
// sent (it refuses it); when COMMAND INFO is denied (+@read holds no
// COMMAND), knownReadOnly stands in and the rest is refused: the mode never
// guesses in favour of a write.

// readOnlySafe are the commands (or "COMMAND|subcommand") that change no
// data although the server's table does not mark them readonly: the
// connection's own state, the transaction's frame, and the introspection
// an operator browsing production reads.
var readOnlySafe = []string{
	"PING", "ECHO", "QUIT", "RESET", "SELECT", "AUTH", "HELLO",
	"MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH",
	"INFO", "TIME", "ROLE", "LASTSAVE", "COMMAND",
	"CONFIG|GET", "CLIENT|LIST", "CLIENT|INFO", "CLIENT|GETNAME", "CLIENT|ID",
	"SLOWLOG|GET", "SLOWLOG|LEN", "LATENCY|LATEST", "LATENCY|HISTORY", "LATENCY|DOCTOR",
	"MEMORY|STATS", "MEMORY|DOCTOR", "ACL|WHOAMI", "ACL|CAT", "MODULE|LIST",
	"FUNCTION|LIST", "FUNCTION|STATS", "SCRIPT|EXISTS", "CLUSTER|INFO", "CLUSTER|NODES",
	"CLUSTER|SLOTS", "CLUSTER|SHARDS", "CLUSTER|MYID", "CLUSTER|KEYSLOT",
}

// knownReadOnly are commands every Redis since 6.2 marks readonly: what
// read-only mode runs when the server will not say (COMMAND INFO denied).
var knownReadOnly = []string{
	"GET", "MGET", "GETRANGE", "STRLEN", "EXISTS", "TYPE", "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME",
	"DUMP", "SCAN", "KEYS", "RANDOMKEY", "DBSIZE", "SORT_RO",
	"HGET", "HMGET", "HGETALL", "HKEYS", "HVALS", "HLEN", "HEXISTS", "HSTRLEN", "HSCAN", "HRANDFIELD",
	"LRANGE", "LLEN", "LINDEX", "LPOS",
	"SMEMBERS", "SISMEMBER", "SMISMEMBER", "SCARD", "SSCAN", "SRANDMEMBER", "SINTER", "SUNION", "SDIFF", "SINTERCARD",
	"ZRANGE", "ZREVRANGE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZSCORE",
	"ZMSCORE", "ZCARD", "ZCOUNT", "ZLEXCOUNT", "ZRANK", "ZREVRANK", "ZSCAN", "ZRANDMEMBER",
	"XLEN", "XRANGE", "XREVRANGE", "XREAD", "XPENDING",
	"BITCOUNT", "BITPOS", "GETBIT", "PFCOUNT", "GEOPOS", "GEODIST", "GEOHASH", "GEOSEARCH",
	"EVAL_RO", "EVALSHA_RO", "FCALL_RO",
}

// idmpSurface is what the emulated IDMP surface does, by command: true when
// it writes.
var idmpSurface = map[string]bool{
	"XADD": true, "XCFGSET": true, "RENAME": true, "RENAMENX": true, "COPY": true, "MOVE": true,
	"XINFO": false,
}

// readOnlyRefusal is why args may not run in read-only mode ("" when it
// may). It asks the server (COMMAND INFO) once per command name.
func (s *Session) readOnlyRefusal(ctx context.Context, args []string) string {
	name := strings.ToUpper(args[0])
	sub := ""
	if len(args) > 1 {
		sub = strings.ToUpper(args[1])
	}
	switch writes, ok := idmpSurface[name]; {
	case ok && writes:
		return name + " writes"
	case ok:
		return ""
	case name == "CONFIG" && sub == "SET":
		return "CONFIG SET changes the server's configuration"
	}
	if slices.Contains(readOnlySafe, name) || sub != "" && slices.Contains(readOnlySafe, name+"|"+sub) {
		return ""
	}
	info, err := s.commandInfo(ctx, name, sub)
	switch {
	case err != nil && slices.Contains(knownReadOnly, name):
		return ""
	case err != nil:
		return fmt.Sprintf("COMMAND INFO could not say whether %s writes (%v), and it is not on idmpctl's own list of read-only commands", name, err)
	case info == nil:
		return "" // the server does not know it: it refuses it, writing nothing
	case slices.Contains(info.flags, "readonly"):
		return ""
	}
	what := name
	if info.sub {
		what += " " + sub
	}
	why := fmt.Sprintf("the server does not mark %s read-only (COMMAND INFO flags: %s)", what, strings.Join(info.flags, ", "))
	if slices.Contains(info.flags, "write") {
		why = fmt.Sprintf("%s writes (COMMAND INFO flags: %s)", what, strings.Join(info.flags, ", "))
	}
	switch name {
	case "EVAL", "EVALSHA", "FCALL":
		why += "; EVAL_RO, EVALSHA_RO and FCALL_RO run scripts read-only"
	}
	return why
}

// commandEntry is what COMMAND INFO says of a command.
type commandEntry struct {
	flags []string
	sub   bool // the entry is the subcommand's (Redis 7+), not the command's
}

// commandInfo is COMMAND INFO's entry for name, or for name|sub where the
// server has subcommand entries (Redis 7+); nil when the server has none.
// Asked once per command and subcommand.
func (s *Session) commandInfo(ctx context.Context, name, sub string) (*commandEntry, error) {
	key := name
	if sub != "" {
		key += "|" + sub
	}
	if e, ok := s.roInfo[key]; ok {
		return e, nil
	}
	if s.roInfoErr != nil {
		return nil, s.roInfoErr // denied once: not asked again
	}
	if s.opt.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opt.Timeout)
		defer cancel()
	}
	q := []any{"COMMAND", "INFO", strings.ToLower(name)}
	if sub != "" {
		q = append(q, strings.ToLower(name+"|"+sub))
	}
	v, err := s.conn.Client().Do(ctx, q...).Slice()
	if err != nil {
		if exit.Code(err) == exit.Permission {
			s.roInfoErr = err
		}
		return nil, err
	}
	var found *commandEntry
	for i, item := range v { // the subcommand's entry, when there is one, wins
		entry, ok := item.([]any)
		if !ok || len(entry) < 3 {
			continue
		}
		e := &commandEntry{sub: i == 1}
		raw, _ := entry[2].([]any)
		for _, f := range raw {
			if fs, ok := f.(string); ok {
				e.flags = append(e.flags, fs)
			}
		}
		found = e
	}
	if s.roInfo == nil {
		s.roInfo = map[string]*commandEntry{}
	}
	s.roInfo[key] = found
	return found, nil
}

// readOnlyReply is the error reply of a command refused in read-only mode.
func readOnlyReply(why string) resp.Reply {
	r := resp.ErrorOf("ERR refused in read-only mode (--read-only or IDMPCTL_READ_ONLY): " + why)
	r.Int = ReadOnlyRefused
	return r
}

// refuseReadOnly answers a command refused in read-only mode, in its turn
// (inside MULTI, so that EXEC aborts: fixedReply).
func (s *Session) refuseReadOnly(why string) error {
	if err := s.flushRun(); err != nil {
		return err
	}
	s.fixedReply(&pending{queued: s.inMulti}, readOnlyReply(why), true)
	return nil
}
