package records

import (
	"strings"
	"testing"
)

// TestPurgeLive: the live rule of purge, by status, lease, deadline and
// flags.
func TestPurgeLive(t *testing.T) {
	const now = 1_000_000
	for _, tc := range []struct {
		name    string
		r       Record
		f       PurgeFlags
		blocked bool
		says    string
	}{
		{"live lease", Record{Status: Processing, LeaseUntilMs: now + 90_000, NowMs: now}, PurgeFlags{}, true, "1m30s of its lease"},
		{"live lease, --stale", Record{Status: Processing, LeaseUntilMs: now + 1, NowMs: now}, PurgeFlags{Stale: true}, true, "--force"},
		{"live lease, --older-than", Record{Status: Processing, LeaseUntilMs: now + 1, NowMs: now}, PurgeFlags{OlderThan: true}, true, "--force"},
		{"live lease, --force", Record{Status: Processing, LeaseUntilMs: now + 1, NowMs: now}, PurgeFlags{Force: true}, false, ""},
		{"live deadline", Record{Status: Processing, DeadlineMs: now + 5, NowMs: now}, PurgeFlags{}, true, "5ms"},
		{"passed lease", Record{Status: Processing, LeaseUntilMs: now, NowMs: now}, PurgeFlags{}, false, ""},
		{"live lease, passed deadline", Record{Status: Processing, LeaseUntilMs: now + 9, DeadlineMs: now - 1, NowMs: now}, PurgeFlags{}, false, ""},
		{"no deadline", Record{Status: Processing, NowMs: now}, PurgeFlags{}, true, "--older-than or --force"},
		{"no deadline, --older-than", Record{Status: Processing, NowMs: now}, PurgeFlags{OlderThan: true}, false, ""},
		{"no clock", Record{Status: Processing, LeaseUntilMs: now}, PurgeFlags{OlderThan: true}, true, "could not be judged"},
		{"completed with a lease ahead", Record{Status: Completed, LeaseUntilMs: now + 9, NowMs: now}, PurgeFlags{}, false, ""},
	} {
		reason, blocked := tc.r.PurgeLive(tc.f)
		if blocked != tc.blocked || !strings.Contains(reason, tc.says) {
			t.Errorf("%s: %q, %v; want blocked %v saying %q", tc.name, reason, blocked, tc.blocked, tc.says)
		}
	}
	// LiveUntilMs is what the re-check keeps on the server's clock: the end
	// of a live lease or deadline (the earlier of the two), else 0.
	for r, want := range map[*Record]int64{
		{Status: Processing, LeaseUntilMs: now + 9, DeadlineMs: now + 5, NowMs: now}: now + 5,
		{Status: Processing, LeaseUntilMs: now, NowMs: now}:                          0,
		{Status: Processing, NowMs: now}:                                             0,
		{Status: Failed, LeaseUntilMs: now + 9, NowMs: now}:                          0,
	} {
		if got := r.LiveUntilMs(); got != want {
			t.Errorf("%+v: LiveUntilMs %d, want %d", *r, got, want)
		}
	}
}
