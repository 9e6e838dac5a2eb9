// Package exit holds idmpctl's exit-code contract (the spec's table) and the
// typed error that carries a code from where a failure is understood to
// where the process exits.
package exit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
)

// Exit codes. They are a contract: documented in the README and in --help.
const (
	OK          = 0
	Done        = 1  // claim acquire: already completed, skip the work
	Usage       = 64 // bad flag, argument or value
	Data        = 65 // malformed batch line, fingerprint mismatch, WRONGTYPE, an error reply (exec)
	NotFound    = 66 // stream or key does not exist
	Unavailable = 69 // cannot reach Redis, it timed out, or too few replicas acknowledged (--wait-replicas)
	Internal    = 70 // internal error or unexpected reply
	Busy        = 75 // claimed by a live owner, retry later
	Lost        = 76 // the claim's token is no longer current
	Permission  = 77 // NOAUTH, WRONGPASS, NOPERM
	Config      = 78 // bad URL, unreadable TLS file
)

// Table is the exit-code table as printed by --help and the README.
const Table = `Exit codes:
   0  success (a duplicate in xadd is success)
   1  claim acquire: already completed, skip the work
  64  usage: bad flag, argument or value
  65  data: malformed batch line, fingerprint mismatch, WRONGTYPE, an error reply (exec)
  66  not found: stream or key does not exist
  69  unavailable: cannot reach Redis, it timed out, or too few replicas acknowledged (--wait-replicas)
  70  internal error or unexpected reply
  75  busy: claimed by a live owner, retry later
  76  lost: the claim's token is no longer current
  77  permission: NOAUTH, WRONGPASS, NOPERM
  78  configuration: bad URL, unreadable TLS file`

// Error is a failure with its exit code. What names what failed, Err says
// why (server texts verbatim), Hint is an optional second line for the user.
type Error struct {
	Code int
	What string
	Err  error
	Hint string
	// Silent errors carry an exit code whose story was already told on
	// stdout/stderr (claim acquire's "done", a command's own exit status).
	Silent bool
	// Root errors are not about what the command was doing (the server
	// could not be reached): Wrap keeps their What as it is.
	Root bool
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
	return &Error{Code: Classify(err), What: what, Err: err, Hint: hintFor(err)}
}

func joinWhat(outer, inner string) string {
	switch {
	case inner == "":
		return outer
	case outer == "":
		return inner
	}
	return outer + ": " + inner
}

// Connect is a failure to reach the server at url (redacted): Root, so the
// message is "connect URL: why" whatever the command was doing.
func Connect(err error, url string) *Error {
	return &Error{Code: Classify(err), What: "connect " + url, Err: err, Hint: hintFor(err), Root: true}
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
func Code(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Classify(err)
}

// Classify maps an error from the Redis client or the network to a code.
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
	case hasServerPrefix(msg, "WRONGTYPE"):
		return Data
	case isTLSVerify(err):
		return Config
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed), isNetError(err),
		strings.Contains(msg, "connection pool timeout"), msg == "EOF",
		strings.HasSuffix(msg, ": EOF"), strings.Contains(msg, "i/o timeout"),
		hasServerPrefix(msg, "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN"):
		return Unavailable
	}
	return Internal
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

func hintFor(err error) string {
	switch Classify(err) {
	case Unavailable:
		return "is the server running and reachable? set --url or IDMPCTL_URL; --timeout bounds each command"
	case Permission:
		if msg := err.Error(); hasServerPrefix(msg, "NOPERM") || isScriptACL(msg) {
			return "the ACL user may not run what this command needs: grant it (ACL SETUSER) or use another user; ACL LOG on the server names what was denied"
		}
		return "give a password with IDMPCTL_PASSWORD (or REDISCLI_AUTH), and an ACL user in the URL (redis://user@host)"
	case Config:
		// A remote alert is the server refusing us (tls-auth-clients), not
		// us refusing its certificate: --tls-ca is not the fix.
		msg := err.Error()
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
