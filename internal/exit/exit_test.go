package exit

import (
	"errors"
	"strings"
	"testing"
)

// Wrapping an error again with the name it already starts with (the
// command wraps what its ops package wrapped with the same name) does not
// say it twice: "purge: purge: write the backup" read as a slip.
func TestWrapSaysWhatOnce(t *testing.T) {
	inner := &Error{Code: Config, What: "write the backup", Err: errors.New("no space left on device")}
	for _, c := range []struct {
		err  error
		want string
	}{
		{Wrap(Wrap(inner, "purge"), "purge"), "purge: write the backup: no space left on device"},
		{Wrap(Wrap(errors.New("boom"), "purge"), "purge"), "purge: boom"},
		{Wrap(Wrap(inner, "purge"), "purge --match"), "purge --match: purge: write the backup: no space left on device"},
		{Wrap(Wrap(inner, "purgex"), "purge"), "purge: purgex: write the backup: no space left on device"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// Issue 24 item 7: a reply that is not Redis's protocol at all is a
// configuration error (78), with the hint that says what to check.
func TestNotRESP(t *testing.T) {
	for _, msg := range []string{
		`redis: invalid reply: "<!DOCTYPE HTML>\n"`,
		`redis: can't parse reply="HTTP/1.1 400 Bad Request" reading string`,
		`redis protocol error: line "SSH-2.0-OpenSSH_9.2\n" not ended by CRLF`,
	} {
		err := errors.New(msg)
		if !NotRESP(err) || Classify(err) != Config || Hint(err) != NotRedisHint {
			t.Errorf("%s: NotRESP %v, code %d, hint %q", msg, NotRESP(err), Classify(err), Hint(err))
		}
	}
	if err := errors.New("ERR unknown command 'FOO'"); NotRESP(err) {
		t.Error("an error reply taken for a non-Redis server")
	}
}

// Issue 30 item 4: an ACL denial in each server's words (Redis 7.0, 7.2+,
// Valkey; a command, a key, inside a script) reads in ours, before it.
func TestDenial(t *testing.T) {
	for msg, want := range map[string]string{
		`migrate "s": NOPERM User mon has no permissions to run the 'time' command`:                                                                 "this user may not run TIME",
		`NOPERM this user has no permissions to run the 'xinfo|stream' command`:                                                                     "this user may not run XINFO STREAM",
		`xadd "s": ERR ACL failure in script: User w has no permissions to run the 'hmget' command script: 1f, on @user_script:144.`:                "this user may not run HMGET",
		`NOPERM No permissions to access a key`:                                                                                                     "this user may not access a key this command needs (its key patterns, ~..., leave it out)",
		`NOPERM this user has no permissions to access one of the keys used as arguments`:                                                           "this user may not access a key this command needs (its key patterns, ~..., leave it out)",
		`ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: 1f, on @user_script:1.`: "this user may not access a key this command needs (its key patterns, ~..., leave it out)",
		`ERR The user executing the script can't run this command or subcommand script: 1f, on @user_script:1.`:                                     "this user may not run a command that idmpctl's script runs (the server does not say which: ACL LOG does)",
		// idmpctl's own scripts say it already.
		`NOPERM this user has no permission to run the RPUSH command on key {s}:idmp:order:p, which emulated IDMP needs: nothing was written`: "",
	} {
		words, at, ok := Denial(msg)
		if !ok || words != want || (want == "") != (at < 0) || at >= 0 && !strings.HasPrefix(msg[at:], "NOPERM ") && !strings.HasPrefix(msg[at:], "ERR ") {
			t.Errorf("%s: %q at %d (%v), want %q", msg, words, at, ok, want)
		}
	}
	if _, _, ok := Denial("WRONGPASS invalid username-password pair or user is disabled."); ok {
		t.Error("WRONGPASS read as a denial")
	}
}

// A replica refuses WAIT and WAITAOF in plain ERR words, not READONLY: it
// is the same configuration error (78) with the same hint. Before: 70.
func TestOnReplica(t *testing.T) {
	for _, msg := range []string{
		"READONLY You can't write against a read only replica.",
		"--wait-replicas: WAIT: ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
		"--wait-aof: WAITAOF: ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.",
	} {
		err := errors.New(msg)
		if Classify(err) != Config || !strings.HasPrefix(Hint(err), "this server is a replica") {
			t.Errorf("%s: code %d, hint %q", msg, Classify(err), Hint(err))
		}
	}
}
