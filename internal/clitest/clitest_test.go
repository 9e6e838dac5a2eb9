package clitest

import (
	"slices"
	"testing"
)

func TestScrub(t *testing.T) {
	for _, c := range []struct {
		name    string
		in, out []string
	}{
		{"drops every Unset variable",
			[]string{"PATH=/bin", "IDMPCTL_URL=redis://elsewhere", "REDIS_URL=redis://x", "IDMPCTL_PASSWORD=pw",
				"REDISCLI_AUTH=", "NO_COLOR=1", "CLICOLOR_FORCE=1", "IDMPCTL_FORCE_TTY=1", "COLUMNS=80", "HOME=/root"},
			[]string{"PATH=/bin", "HOME=/root", "GORACE=atexit_sleep_ms=0"}},
		{"keeps the host's GORACE options, ours last",
			[]string{"GORACE=halt_on_error=1", "TERM=dumb"},
			[]string{"TERM=dumb", "GORACE=halt_on_error=1 atexit_sleep_ms=0"}},
		{"names match exactly (a bare NAME too)",
			[]string{"IDMPCTL_URL_X=1", "NO_COLOR"},
			[]string{"IDMPCTL_URL_X=1", "GORACE=atexit_sleep_ms=0"}},
	} {
		if got := Scrub(c.in); !slices.Equal(got, c.out) {
			t.Errorf("%s: Scrub(%q) = %q, want %q", c.name, c.in, got, c.out)
		}
	}
}
