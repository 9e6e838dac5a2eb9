package cmd

// Errors: the one place that prints a command's error, in idmpctl's
// words rather than Go's or the network's (exit codes: internal/exit).

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/idmpctl/idmpctl/internal/exit"
	"github.com/idmpctl/idmpctl/internal/render"
)

// inOurWords is a network failure's message in our words, after what the
// command was doing, and its hint: precise in place of the generic one.
func inOurWords(e *exit.Error, hint, words, precise string) (string, string) {
	msg := words
	if e != nil && e.What != "" {
		msg = e.What + ": " + words
	}
	if hint == "" {
		return msg, precise
	}
	return msg, strings.Replace(hint, exit.UnreachableHint, precise, 1)
}

// answered finds the quoted bytes of a reply that is not RESP in go-redis's
// errors ("invalid reply: %q", "can't parse reply=%q ...") or our reader's
// ("line %q not ended by CRLF", "unexpected %q").
var answered = regexp.MustCompile(`(?:reply: |reply=|parse |line |unexpected )("(?:[^"\\]|\\.)*")`)

// verbRoles is the "runs" column of docs/roles.md: the roles whose rule
// lets each verb run (TestRoles holds the hints to that page).
var verbRoles = map[string]string{"inspect": "monitor or operator", "calc-ttl": "monitor or operator",
	"xadd": "producer", "claim": "worker", "cfgset": "operator", "purge": "operator", "restore": "operator", "migrate": "operator"}

// deniedHint is hint naming the role that runs verb instead of generic words.
func deniedHint(verb, hint string) string {
	ours := "exec runs as the role of what it sends (docs/roles.md): the producer for XADD, the operator for XCFGSET; or grant this user what it lacks (ACL SETUSER)"
	if r, ok := verbRoles[verb]; ok {
		ours = verb + " runs as the " + r + " role (docs/roles.md): use a user with its rule, or grant this one what it lacks (ACL SETUSER)"
	} else if verb != "exec" {
		ours = exit.DeniedHint
	}
	if hint == "" {
		return ours
	}
	return strings.Replace(hint, exit.DeniedHint, ours, 1)
}

// printError prints err for a run of verb (verbOf).
func printError(f *Factory, verb string, err error) {
	var e *exit.Error
	if errors.As(err, &e) && e.Silent {
		return
	}
	msg := err.Error()
	hint := ""
	if e != nil {
		hint = e.Hint
	}
	switch {
	case errors.Is(err, context.Canceled):
		msg = "interrupted"
	case exit.Code(err) == exit.Permission && strings.Contains(msg, "WRONGPASS"):
		if src := f.passwordSource(); src != "" {
			hint = "the password from " + src + " was refused: check it, and the ACL user in the URL (redis://user@host)"
		} else {
			hint = "the URL names an ACL user but no password was given: put it in IDMPCTL_PASSWORD or REDISCLI_AUTH (idmpctl logs in as that user, never as the default user instead)"
		}
	case exit.Code(err) == exit.Permission:
		// An ACL denial: what the user may not run, before the server's words.
		if words, at, ok := exit.Denial(msg); ok {
			if at >= 0 {
				msg = msg[:at] + words + ": " + msg[at:]
			}
			hint = deniedHint(verb, hint)
		}
	case exit.Code(err) == exit.Unavailable && exit.ClosedByServer(err):
		// Go's "EOF" or "connection reset by peer" say less than this.
		msg, hint = inOurWords(e, hint, netWords(err, f.Global.Timeout),
			"the server restarted, was stopped, or dropped this client (CLIENT KILL, its timeout setting, maxclients): run the command again once it answers")
	case exit.NotRESP(err):
		// go-redis's `redis: invalid reply: "<!DOCTYPE HTML>\n"` in our words.
		msg = "not a Redis server"
		if f.conn != nil {
			msg = f.conn.Display + " is not a Redis server"
		}
		if m := answered.FindStringSubmatch(err.Error()); m != nil {
			msg += ": it answered " + m[1]
		}
		if e != nil && e.What != "" && !e.Root {
			msg = e.What + ": " + msg
		}
		hint = exit.NotRedisHint
	case exit.Code(err) == exit.Unavailable && exit.TimedOut(err):
		// The network's words ("read tcp ...: i/o timeout") say less than
		// ours, and name no flag.
		msg, hint = inOurWords(e, hint, netWords(err, f.Global.Timeout),
			"the server did not answer in time: it is down, overloaded, blocked by a slow command, or unreachable; --timeout D waits longer")
	}
	bad := func(s string) string { return s }
	if f.Printer != nil {
		bad = f.Printer.Bad
	}
	fmt.Fprintf(f.Err, "%s %s\n", bad("idmpctl:"), strings.TrimSpace(msg))
	if hint != "" {
		fmt.Fprintf(f.Err, "hint: %s\n", hint)
	}
}

// netWords is a network error in our words, for errors and retries' warnings:
// Go's "read tcp ...: i/o timeout" names no flag and says less.
func netWords(err error, timeout time.Duration) string {
	switch {
	case exit.ClosedByServer(err):
		return "the server closed the connection"
	case exit.TimedOut(err):
		return "no reply within --timeout " + render.Duration(timeout)
	}
	return err.Error()
}
