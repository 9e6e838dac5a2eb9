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
