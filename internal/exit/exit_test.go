package exit

import (
	"errors"
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
