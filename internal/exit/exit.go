// Package exit holds idmpctl's exit-code contract (README.md's table, which
// "idmpctl help exit-codes" prints) and the typed error that carries a code
// from where a failure is understood to where the process exits.
package exit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// Exit codes. They are a contract: documented in the README and in
// "idmpctl help exit-codes".
const (
	OK          = 0
	Done        = 1   // claim acquire: already completed, skip the work
	Usage       = 64  // bad flag, argument or value
	Data        = 65  // malformed batch line, fingerprint mismatch, WRONGTYPE, an error reply (exec)
	NotFound    = 66  // stream or key does not exist
	Unavailable = 69  // cannot reach Redis, it timed out, it is out of memory, or too few replicas acknowledged (--wait-replicas)
	Internal    = 70  // internal error or unexpected reply
	Busy        = 75  // claimed by a live owner, retry later
	Lost        = 76  // the claim's token is no longer current
	Permission  = 77  // NOAUTH, WRONGPASS, NOPERM
	Config      = 78  // bad URL, unreadable TLS file, a replica, scripting disabled, --cluster against a server that is no cluster, a --backup file that cannot be written, a port that is not Redis
	Interrupted = 130 // SIGINT (128 + 2): stopped by the user
	Terminated  = 143 // SIGTERM (128 + 15)
)

// Table is the exit-code table as "idmpctl help exit-codes" and idmpctl(1)
// print it (the README has the same codes).
const Table = `Exit codes:
   0  success (a duplicate in xadd is success)
   1  claim acquire: already completed, skip the work
  64  usage: bad flag, argument or value
  65  data: malformed batch line, fingerprint mismatch, WRONGTYPE, an error
      reply (exec)
  66  not found: stream or key does not exist
  69  unavailable: cannot reach Redis, it timed out, it is out of memory, or
      too few replicas acknowledged (--wait-replicas)
  70  internal error or unexpected reply
  75  busy: claimed by a live owner (or a batch run by another run), retry later
  76  lost: the claim's token is no longer current
  77  permission: NOAUTH, WRONGPASS, NOPERM
  78  configuration: bad URL, unreadable TLS file, a replica, scripting
      disabled, --cluster against a server that is no cluster, a --backup
      file that cannot be written, a port that answers but is not Redis
 126  claim run: the command could not start: not executable (FAILED
      recorded; a retry fails alike)
 127  claim run: the command could not start: not found (FAILED recorded; a
      retry fails alike)
 130  interrupted by SIGINT (work already committed stays committed; a batch
      resumes where it stopped)
 143  interrupted by SIGTERM (work already committed stays committed; a batch
      resumes where it stopped)`

// Error is a failure with its exit code. What names what failed, Err says
// why (server texts verbatim), Hint is an optional second line for the user.
type Error struct {
	Code   int
	What   string
	Err    error
	Hint   string
	Silent bool // the story was told already (claim acquire's "done", a command's own exit)
	Root   bool // not about what the command did (the server unreachable): Wrap keeps What
}

func (e *Error) Error() string {
	switch {
	case e.What == "":
		return e.Err.Error()
	case e.Err == nil:
		return e.What
	default:
		return e.What + ": " + e.Err.Error()
	}
}

func (e *Error) Unwrap() error { return e.Err }

// Status is a silent exit with code: nothing more to print.
func Status(code int) *Error {
	return &Error{Code: code, Err: fmt.Errorf("exit status %d", code), Silent: true}
}

// New returns an *Error with a formatted reason.
func New(code int, what string, format string, args ...any) *Error {
	return &Error{Code: code, What: what, Err: fmt.Errorf(format, args...)}
}

// Wrap attaches what failed to err, classifying err's exit code when err
// carries none. A nil err stays nil.
func Wrap(err error, what string) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Root {
			return e
		}
		return &Error{Code: e.Code, What: joinWhat(what, e.What), Err: e.Err, Hint: e.Hint}
	}
	return &Error{Code: Classify(err), What: what, Err: err, Hint: Hint(err)}
}

func joinWhat(outer, inner string) string {
	switch {
	case inner == "":
		return outer
	case outer == "", inner == outer, strings.HasPrefix(inner, outer+": "):
		return inner // a command wrapping what its ops package named alike
	}
	return outer + ": " + inner
}

// Connect is a failure to reach the server at url (redacted): Root, so the
// message is "connect URL: why" whatever the command was doing.
func Connect(err error, url string) *Error {
	return &Error{Code: Classify(err), What: "connect " + url, Err: err, Hint: Hint(err), Root: true}
}

// WithHint returns err with a hint line attached.
func WithHint(err error, hint string) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.Hint = hint
		return &c
	}
	return &Error{Code: Classify(err), Err: err, Hint: hint}
}

// Usagef is a usage error (64).
func Usagef(format string, args ...any) *Error {
	return &Error{Code: Usage, Err: fmt.Errorf(format, args...)}
}

// Code returns the exit code for err: its own when it is an *Error,
// otherwise the classification of a Redis or network failure.
func Code(err error) int { return Classify(err) }

// Classify is Code: it maps an error from the Redis client or the network.
func Classify(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	msg := err.Error()
	switch {
	case hasServerPrefix(msg, "NOAUTH", "WRONGPASS", "NOPERM"), isScriptACL(msg):
		return Permission
	case hasServerPrefix(msg, "WRONGTYPE"), strings.Contains(msg, "Protocol error: invalid bulk length"):
		return Data
	case strings.Contains(msg, "DB index is out of range"):
		return Usage // the URL's database (redis://host/N): a value the user gave
	case strings.Contains(msg, "cluster support disabled"), // --cluster against a server that is no cluster
		isTLSVerify(err), onReplica(msg), NotRESP(err):
		return Config
	case hasServerPrefix(msg, "OOM"), Migrating(msg):
		return Unavailable
	case unknownCommand.MatchString(msg):
		return Config // renamed away (rename-command) or disabled: so are EVAL and EVALSHA
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed), isNetError(err),
		strings.Contains(msg, "connection pool timeout"), ClosedByServer(err), strings.Contains(msg, "i/o timeout"),
		hasServerPrefix(msg, "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN"):
		return Unavailable
	}
	return Internal
}

// Migrating reports a reply of a cluster node whose slot is moving (or
// moved): MOVED, ASK, TRYAGAIN, or a script's access to a key the node no
// longer holds. Nothing was written: the same command can go again.
func Migrating(msg string) bool {
	return hasServerPrefix(msg, "MOVED", "ASK", "TRYAGAIN") ||
		strings.Contains(msg, "Script attempted to access a non local key in a cluster node")
}

// ScriptRefused reports an error that refuses a script call itself:
// EVALSHA, EVAL or SCRIPT denied by ACL, or renamed away.
func ScriptRefused(msg string) bool {
	m := strings.ToLower(msg)
	names := []string{"'evalsha'", "'eval'", "'script|load'", "'script'"}
	named := func(c string) bool { return strings.Contains(m, c) }
	return hasServerPrefix(msg, "NOPERM") && slices.ContainsFunc(names, named) || ScriptingDisabled(msg)
}

// ScriptingDisabled reports a server on which EVAL, EVALSHA or SCRIPT is
// renamed or disabled (rename-command): emulated IDMP cannot run there.
func ScriptingDisabled(msg string) bool { return Renamed(msg, "evalsha", "eval", "script") }

// Renamed reports the server's "unknown command" for one of cmds (lower
// case): renamed away (rename-command) or disabled.
func Renamed(msg string, cmds ...string) bool {
	c, ok := Unknown(msg)
	return ok && slices.Contains(cmds, strings.ToLower(c))
}

// unknownCommand is the server's reply to a command it does not know, by
// that name ("ERR unknown command 'x', with args ..."; idmpctl's scripts
// say it so of what redis.acl_check_cmd found unknown), or a script's call
// of one ("Unknown Redis command called from script"; Valkey's has no
// "Redis"), which does not name it.
var unknownCommand = regexp.MustCompile("(?i)unknown command ['`]([^'`]*)['`]|Unknown (?:Redis )?command called from script")

// Unknown returns the command the server does not know (renamed away, or
// disabled); "" when a script's call did not say which. ok: msg says so.
func Unknown(msg string) (cmd string, ok bool) {
	m := unknownCommand.FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// onReplica reports a replica's refusal of a write (READONLY), or of WAIT
// or WAITAOF, which a replica refuses in plain ERR words.
func onReplica(msg string) bool {
	return hasServerPrefix(msg, "READONLY") || strings.Contains(msg, "cannot be used with replica instances")
}

func hasServerPrefix(msg string, prefixes ...string) bool {
	for _, p := range prefixes {
		// go-redis wraps some handshake errors ("failed to authenticate: WRONGPASS ...").
		if strings.HasPrefix(msg, p) || strings.Contains(msg, ": "+p+" ") {
			return true
		}
	}
	return false
}

// isScriptACL reports an ACL denial inside a Lua script, which the server
// reports as ERR, not NOPERM: "The user executing the script can't run this
// command or subcommand" (Redis 6.2, 7.0) or "ACL failure in script: ..."
// (Redis 7.2+, Valkey).
func isScriptACL(msg string) bool {
	return strings.Contains(msg, "The user executing the script can't") ||
		strings.Contains(msg, "ACL failure in script")
}

// DeniedHint is the hint of an ACL denial, for the CLI to replace with the
// role of docs/roles.md that runs the command.
const DeniedHint = "the ACL user may not run what this command needs: grant it (ACL SETUSER) or use another user; ACL LOG on the server names what was denied"

var (
	deniedCommand = regexp.MustCompile(`has no permissions to run the '([^']+)' command`)
	deniedKey     = regexp.MustCompile(`access (?:a key|one of the keys|at least one of the keys)`)
)

// Denial reads an ACL denial (NOPERM, or a script's ACL failure) and says
// in our words what the user may not run or access ("...run the
// 'xinfo|stream' command": "this user may not run XINFO STREAM"). at is
// where the server's text starts in msg, or -1 when it names nothing or is
// idmpctl's own, which says it already. ok: msg is a denial.
func Denial(msg string) (words string, at int, ok bool) {
	if !hasServerPrefix(msg, "NOPERM") && !isScriptACL(msg) {
		return "", -1, false
	}
	if m := deniedCommand.FindStringSubmatch(msg); m != nil {
		words = "this user may not run " + strings.ToUpper(strings.ReplaceAll(m[1], "|", " "))
	} else if deniedKey.MatchString(msg) {
		words = "this user may not access a key this command needs (its key patterns, ~..., leave it out)"
	} else if strings.Contains(msg, "script can't run this command") {
		words = "this user may not run a command that idmpctl's script runs (the server does not say which: ACL LOG does)"
	}
	at = -1
	for _, p := range []string{"NOPERM ", "ERR The user executing the script", "ERR ACL failure in script"} {
		if i := strings.Index(msg, p); words != "" && i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	return words, at, true
}

// NotRESP reports a reply that is not Redis's protocol at all (go-redis's,
// or idmpctl's own reader's complaint): whatever listens on the port is
// not Redis, a configuration error (78) that a retry does not change.
func NotRESP(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "redis: invalid reply") || strings.Contains(msg, "redis: can't parse") ||
		strings.Contains(msg, "redis protocol error")
}

// NotRedisHint is the hint of NotRESP.
const NotRedisHint = "something answers on that port, but not in Redis's protocol (an HTTP server, another service): check the host and port (--url, -h, -p, IDMPCTL_URL)"

// ClosedByServer reports a connection that ended under a command (the
// server restarted or was stopped, CLIENT KILL, its idle timeout): Go's
// "EOF", "unexpected EOF" or "connection reset by peer".
func ClosedByServer(err error) bool {
	msg := err.Error()
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		msg == "EOF" || strings.HasSuffix(msg, ": EOF") || strings.HasSuffix(msg, "unexpected EOF") ||
		strings.HasSuffix(msg, "connection reset by peer")
}

// TimedOut reports whether err is a wait that ran out (a deadline, a
// socket's timeout) rather than a refusal or a reset.
func TimedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		strings.Contains(err.Error(), "i/o timeout")
}

func isNetError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

func isTLSVerify(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "x509: ") || strings.Contains(msg, "tls: failed to verify") ||
		strings.Contains(msg, "remote error: tls:")
}

// UnreachableHint is the hint of a server that could not be reached or did
// not answer, when nothing more precise is known.
const UnreachableHint = "is the server running and reachable? set --url or IDMPCTL_URL"

// Hint is the hint idmpctl gives for a server or network error ("" none).
func Hint(err error) string {
	msg := err.Error()
	switch {
	case NotRESP(err):
		return NotRedisHint
	case strings.Contains(msg, "DB index is out of range"):
		return "the URL's database (redis://host:port/N) is past the server's 'databases' setting: use a lower number, 0 by default"
	case strings.Contains(msg, "cluster support disabled"):
		return "the server is not a cluster node: drop --cluster (idmpctl detects a cluster by itself)"
	case hasServerPrefix(msg, "OOM"):
		return "the server is out of memory (used memory above maxmemory, maxmemory-policy noeviction) and refuses writes: free memory or raise maxmemory, then run the same command again (nothing more was written)"
	case onReplica(msg):
		return "this server is a replica, which takes no writes: point --url at its primary"
	case ScriptingDisabled(msg):
		return "the server has EVAL/EVALSHA/SCRIPT renamed or disabled (rename-command): emulated IDMP runs server-side Lua, so it is unavailable there; enable them, or use a server with native IDMP (Redis 8.6+)"
	case strings.Contains(msg, "Protocol error: invalid bulk length"):
		return "an argument (a field, value or ID) is longer than the server's proto-max-bulk-len: nothing of that command was written"
	case Migrating(msg):
		return "the stream's cluster slot is moving to another node: run the same command again once the migration is done (xadd retries while --timeout allows)"
	}
	if cmd, ok := Unknown(msg); ok {
		what := "a command idmpctl's script runs"
		if cmd != "" {
			what = strings.ToUpper(cmd)
		}
		return "the server does not know " + what + " by that name: it is renamed away (rename-command) or disabled there, or the server is too old for it; give the server back the command"
	}
	switch Classify(err) {
	case Unavailable:
		return UnreachableHint
	case Permission:
		if hasServerPrefix(msg, "NOPERM") || isScriptACL(msg) {
			return DeniedHint
		}
		return "give a password with IDMPCTL_PASSWORD (or REDISCLI_AUTH), and an ACL user in the URL (redis://user@host)"
	case Config:
		// A remote alert is the server refusing our certificate: not --tls-ca.
		switch {
		case strings.Contains(msg, "remote error: tls: certificate required"):
			return "the server requires a client certificate (tls-auth-clients): give --tls-cert and --tls-key"
		case strings.Contains(msg, "remote error: tls:"):
			return "the server refused the TLS handshake: check --tls-cert and --tls-key (signed by a CA the server trusts) and the server's TLS settings"
		case isTLSVerify(err):
			return "check --tls-ca (the CA that signed the server's certificate); --tls-insecure skips verification"
		}
	}
	return ""
}
