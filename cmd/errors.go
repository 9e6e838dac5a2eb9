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
// command said it was doing, and its hint: the precise one alone, or in
// place of the generic one after what the command adds (a specific hint
// stays).
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

// answered finds the first bytes a reply that is not RESP held, quoted, in
// go-redis's error ("invalid reply: %q", "can't parse %q", "can't parse
// reply=%q reading string") or our reader's ("line %q not ended by CRLF",
// "unexpected %q").
var answered = regexp.MustCompile(`(?:reply: |reply=|parse |line |unexpected )("(?:[^"\\]|\\.)*")`)

func printError(f *Factory, err error) {
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

// netWords is a network error in our words, for the final error and for
// a warning that goes on (a retry): Go's "read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout" names
// no flag and says less. Other errors keep their text.
func netWords(err error, timeout time.Duration) string {
	switch {
	case exit.ClosedByServer(err):
		return "the server closed the connection"
	case exit.TimedOut(err):
		return "no reply within --timeout " + render.Duration(timeout)
	}
	return err.Error()
}
