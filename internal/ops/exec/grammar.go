package exec

import (
	"strconv"
	"strings"

	"github.com/idmpctl/idmpctl/internal/idmp"
	"github.com/idmpctl/idmpctl/internal/ops/stream"
)

// Op is what exec does with a command.
type Op uint8

// Ops. OpPass sends the command as it is; the others are the IDMP surface
// that emulated mode serves itself.
const (
	OpPass      Op = iota
	OpError        // the grammar refused it: Err is the reply
	OpXAdd         // XADD with IDMP or IDMPAUTO
	OpXCfgSet      // XCFGSET
	OpXInfo        // XINFO STREAM key [FULL [COUNT n]]
	OpConfigGet    // CONFIG GET pattern...
	OpConfigSet    // CONFIG SET with stream-idmp-* parameters
	OpMove         // RENAME, RENAMENX, COPY, MOVE
)

// Command is one parsed command.
type Command struct {
	Args []string
	Name string // upper case: "XADD", "CONFIG", ...
	Op   Op
	Err  string // OpError: the error reply, in Redis's words

	Add    stream.AddRequest // OpXAdd (KEEPREF, DELREF or ACKED in its Deletion)
	Stream string            // OpXCfgSet, OpXInfo: the key
	Cfg    idmp.Config       // OpXCfgSet: 0 keeps a value
	// CfgErr is XCFGSET's argument error (OpXCfgSet): Redis looks the key
	// up first, so ERR no such key and WRONGTYPE come before it.
	CfgErr string

	ConfigPatterns []string    // OpConfigGet
	ConfigSet      idmp.Config // OpConfigSet: 0 for a parameter not given
	Move           MoveRequest // OpMove

	Record RecordRequest // OpXIdmpRecord (catchup.go)
}

// MoveRequest is a RENAME, RENAMENX, COPY or MOVE (Dst is Src) of a key
// that may be a stream with emulated IDMP state.
type MoveRequest struct {
	Src, Dst string
	Replace  bool   // COPY ... REPLACE
	DB       string // COPY's DB n, MOVE's db
}

// Config parameters of the server-level defaults.
const (
	ParamDuration = idmp.ParamDuration
	ParamMaxSize  = idmp.ParamMaxSize
)

// Texts of Redis 8.6.3's replies (src/t_stream.c, src/config.c, src/db.c).
const (
	errSyntax       = "ERR syntax error"
	errNotInteger   = "ERR value is not an integer or out of range"
	errInvalidID    = "ERR Invalid stream ID specified as stream command argument"
	errMultipleIDMP = "ERR syntax error, IDMP/IDMPAUTO specified multiple times"
	errExplicitID   = "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"
	errAtLeastOne   = "ERR At least one parameter must be specified"
	errNoSuchKey    = "ERR no such key"
	errWrongType    = "WRONGTYPE Operation against a key holding the wrong kind of value"
)

func arity(name string) string {
	return "ERR wrong number of arguments for '" + strings.ToLower(name) + "' command"
}

// parse reads c.Args (Name set, Op OpPass) in emulated mode: the IDMP
// surface with Redis 8.6's grammar and errors, in Redis's order; anything
// else passes.
func (c *Command) parse() {
	args := c.Args
	switch c.Name {
	case "XADD":
		c.fail(parseXAdd(c))
	case "XCFGSET":
		parseXCfgSet(c)
	case "XINFO":
		if len(args) >= 3 && strings.EqualFold(args[1], "STREAM") && xinfoStreamArgsOK(args) {
			c.Op, c.Stream = OpXInfo, args[2]
		}
		if len(args) == 3 && strings.EqualFold(args[1], "GROUPS") {
			c.Op, c.Stream = OpXInfoGroups, args[2]
		}
	case "CONFIG":
		c.fail(parseConfig(c))
	case "RENAME", "RENAMENX":
		if len(args) == 3 {
			c.Op, c.Move = OpMove, MoveRequest{Src: args[1], Dst: args[2]}
		}
	case "COPY":
		parseCopy(c)
	case "XIDMPRECORD":
		parseXIdmpRecord(c)
	case "DUMP":
		if len(args) == 2 {
			c.Op, c.Stream = OpDump, args[1]
		}
	case "RESTORE":
		if len(args) >= 4 {
			c.Op, c.Stream = OpRestore, args[1]
		}
	case "DEL", "UNLINK":
		if len(args) >= 2 {
			c.Op = OpDel
		}
	case "MOVE":
		if len(args) == 3 {
			c.Op, c.Move = OpMove, MoveRequest{Src: args[1], Dst: args[1], DB: args[2]}
		}
	}
}

// fail refuses the command with msg ("": the command stands).
func (c *Command) fail(msg string) {
	if msg != "" {
		c.Op, c.Err = OpError, msg
	}
}

// parseXAdd follows Redis 8.6's streamParseAddOrTrimArgsOrReply and
// xaddCommand: options in any order up to the ID, each checked as it is
// read, then the IDMP and LIMIT rules, then the fields' arity. An XADD
// without IDMP or IDMPAUTO that parses passes to the server as it is.
func parseXAdd(c *Command) string {
	a := c.Args
	if len(a) < 5 {
		return arity("xadd")
	}
	r := &c.Add
	r.Stream = a[1]
	idmpSeen, idGiven, limitGiven := false, false, false
	var limit int64
	trim := ""
	i := 2
	for ; i < len(a); i++ {
		more := len(a) - 1 - i
		opt := a[i]
		switch {
		case opt == "*":
		case strings.EqualFold(opt, "MAXLEN") && more > 0, strings.EqualFold(opt, "MINID") && more > 0:
			if trim != "" {
				return "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
			}
			trim = strings.ToUpper(opt)
			r.Approx = false
			if next := a[i+1]; more >= 2 && (next == "~" || next == "=") {
				r.Approx = next == "~"
				i++
			}
			if trim == "MAXLEN" {
				n, ok := idmp.ParseInt(a[i+1])
				if !ok {
					return errNotInteger
				}
				if n < 0 {
					return "ERR The MAXLEN argument must be >= 0."
				}
				r.MaxLen, r.MinID = n, ""
				if n == 0 {
					// MAXLEN 0 keeps no entry, the new one included: so
					// does MINID of the highest ID (AddRequest's MaxLen 0
					// means no trimming).
					r.MinID = maxStreamID
				}
			} else {
				if !validStreamID(a[i+1], false) {
					return errInvalidID
				}
				r.MinID, r.MaxLen = a[i+1], 0
			}
			i++
			continue
		case strings.EqualFold(opt, "LIMIT") && more > 0:
			n, ok := idmp.ParseInt(a[i+1])
			if !ok {
				return errNotInteger
			}
			if n < 0 {
				return "ERR The LIMIT argument must be >= 0."
			}
			r.Limit, limit, limitGiven = n, n, true
			if n == 0 {
				r.Limit = -1 // AddRequest's LIMIT 0
			}
			i++
			continue
		case strings.EqualFold(opt, "NOMKSTREAM"):
			r.NoMkStream = true
			continue
		case r.Deletion == "" && (strings.EqualFold(opt, "KEEPREF") || strings.EqualFold(opt, "DELREF") || strings.EqualFold(opt, "ACKED")):
			// A second one is read as the ID (Redis: an invalid ID).
			r.Deletion = strings.ToUpper(opt)
			continue
		case strings.EqualFold(opt, "IDMPAUTO") && more > 0:
			if idmpSeen {
				return errMultipleIDMP
			}
			if a[i+1] == "" {
				return "ERR syntax error, IDMPAUTO requires a non-empty producer ID"
			}
			idmpSeen, r.Auto, r.PID = true, true, a[i+1]
			i++
			continue
		case strings.EqualFold(opt, "IDMP") && more >= 2:
			if idmpSeen {
				return errMultipleIDMP
			}
			if a[i+1] == "" {
				return "ERR syntax error, IDMP requires a non-empty producer ID"
			}
			if a[i+2] == "" {
				return "ERR syntax error, IDMP requires a non-empty idempotent ID"
			}
			idmpSeen, r.PID, r.IID = true, a[i+1], a[i+2]
			i += 2
			continue
		default:
			if !validStreamID(opt, true) {
				return errInvalidID
			}
			idGiven = true
		}
		break
	}
	if idmpSeen && idGiven {
		return errExplicitID
	}
	if limit != 0 && trim == "" {
		return "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
	}
	if limitGiven && !r.Approx {
		return "ERR syntax error, LIMIT cannot be used without the special ~ option"
	}
	fields := len(a) - (i + 1)
	if fields < 2 || fields%2 == 1 {
		return arity("xadd")
	}
	if !idmpSeen {
		return "" // a plain XADD: the server's own
	}
	if fields > idmp.MaxEmulatedFieldArgs {
		// Emulated, it would stop the script call of its whole run.
		return "ERR " + stream.TooManyFields(fields).Error()
	}
	r.ID, r.Fields, c.Op = "*", a[i+1:], OpXAdd
	return ""
}

// maxStreamID is the highest stream ID.
const maxStreamID = "18446744073709551615-18446744073709551615"

// validStreamID is Redis's streamParseStrictIDOrReply: MS or MS-SEQ of
// unsigned 64-bit integers as string2ull reads them (strict: "-" and "+"
// are no IDs), and with auto, MS-* too.
func validStreamID(s string, auto bool) bool {
	if len(s) > 127 || s == "-" || s == "+" {
		return false
	}
	ms, seq, dash := strings.Cut(s, "-")
	if !string2ull(ms) {
		return false
	}
	if !dash {
		return true
	}
	return auto && seq == "*" || string2ull(seq)
}

// string2ull is Redis's: string2ll when that reads a non-negative number,
// else strtoull's whole-string read (leading spaces, a sign, any zeros).
func string2ull(s string) bool {
	if n, ok := idmp.ParseInt(s); ok {
		return n >= 0
	}
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	if t != "" && (t[0] == '+' || t[0] == '-') {
		t = t[1:]
	}
	_, err := strconv.ParseUint(t, 10, 64) // base 10: digits only, no sign, no "_"
	return err == nil
}

// parseXCfgSet follows Redis 8.6.3's xcfgsetCommand: only the arity is
// the command table's; an argument error (CfgErr) is replied after the key
// lookup (ERR no such key, WRONGTYPE: the session does it).
func parseXCfgSet(c *Command) {
	if len(c.Args) < 2 {
		c.fail(arity("xcfgset"))
		return
	}
	c.Op, c.Stream = OpXCfgSet, c.Args[1]
	if c.CfgErr = xcfgsetArgs(c.Args[2:], &c.Cfg); c.CfgErr != "" {
		c.Cfg = idmp.Config{}
	}
}

// xcfgsetArgs reads XCFGSET's keywords in turn into cfg (twice, then not an
// integer, then out of range, before the next): the error in Redis's words, or "".
func xcfgsetArgs(a []string, cfg *idmp.Config) string {
	for i := 0; i < len(a); i++ {
		more := len(a) - 1 - i
		var limit int64
		var name, unit string
		var dst *int64
		switch {
		case strings.EqualFold(a[i], "IDMP-DURATION") && more > 0:
			limit, name, unit, dst = idmp.MaxDuration, "IDMP-DURATION", "seconds", &cfg.Duration
		case strings.EqualFold(a[i], "IDMP-MAXSIZE") && more > 0:
			limit, name, unit, dst = idmp.MaxMaxSize, "IDMP-MAXSIZE", "entries", &cfg.MaxSize
		default:
			return errSyntax
		}
		if *dst != 0 {
			return "ERR " + name + " specified multiple times"
		}
		n, ok := idmp.ParseInt(a[i+1])
		if !ok {
			return errNotInteger
		}
		if n < 1 || n > limit {
			return "ERR " + name + " must be between 1 and " + strconv.FormatInt(limit, 10) + " " + unit
		}
		*dst = n
		i++
	}
	if cfg.Duration == 0 && cfg.MaxSize == 0 {
		return errAtLeastOne
	}
	return ""
}

// xinfoStreamArgsOK is XINFO STREAM key [FULL [COUNT n]]: any other shape
// passes to the server for its own error.
func xinfoStreamArgsOK(a []string) bool {
	switch len(a) {
	case 3:
		return true
	case 4:
		return strings.EqualFold(a[3], "FULL")
	case 6:
		return strings.EqualFold(a[3], "FULL") && strings.EqualFold(a[4], "COUNT")
	}
	return false
}

// parseConfig picks CONFIG GET (every call: a pattern may match the
// stream-idmp-* parameters) and CONFIG SET of stream-idmp-* parameters.
func parseConfig(c *Command) string {
	a := c.Args
	switch {
	case len(a) >= 3 && strings.EqualFold(a[1], "GET"):
		c.Op, c.ConfigPatterns = OpConfigGet, a[2:]
		return ""
	case len(a) < 4 || len(a)%2 != 0 || !strings.EqualFold(a[1], "SET"):
		return "" // not ours, or the server's arity error
	}
	ours := 0
	for i := 2; i < len(a); i += 2 {
		if name := strings.ToLower(a[i]); name == ParamDuration || name == ParamMaxSize {
			ours++
		}
	}
	if ours == 0 {
		return ""
	}
	if ours < len(a)/2-1 {
		return "ERR CONFIG SET of " + ParamDuration + " or " + ParamMaxSize +
			" goes alone in emulated IDMP (idmpctl keeps them, the server the others): set the others in a command of their own"
	}
	// Redis's configSetCommand: every name first (a name given twice,
	// as typed), then each value in turn (the parameter's own name).
	seen := map[string]bool{}
	for i := 2; i < len(a); i += 2 {
		name := strings.ToLower(a[i])
		if seen[name] {
			return "ERR CONFIG SET failed (possibly related to argument '" + a[i] + "') - duplicate parameter"
		}
		seen[name] = true
	}
	for i := 2; i < len(a); i += 2 {
		name := strings.ToLower(a[i])
		limit, dst := int64(idmp.MaxDuration), &c.ConfigSet.Duration
		if name == ParamMaxSize {
			limit, dst = idmp.MaxMaxSize, &c.ConfigSet.MaxSize
		}
		n, ok := idmp.ParseInt(a[i+1])
		if !ok {
			return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - argument couldn't be parsed into an integer"
		}
		if n < 1 || n > limit {
			return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - argument must be between 1 and " +
				strconv.FormatInt(limit, 10) + " inclusive"
		}
		*dst = n
	}
	c.Op = OpConfigSet
	return ""
}

// parseCopy reads COPY source destination [DB n] [REPLACE]; any other
// shape passes to the server for its own error.
func parseCopy(c *Command) {
	a := c.Args
	if len(a) < 3 {
		return
	}
	m := MoveRequest{Src: a[1], Dst: a[2]}
	for i := 3; i < len(a); i++ {
		switch {
		case strings.EqualFold(a[i], "REPLACE"):
			m.Replace = true
		case strings.EqualFold(a[i], "DB") && i+1 < len(a):
			m.DB = a[i+1]
			i++
		default:
			return
		}
	}
	c.Op, c.Move = OpMove, m
}
