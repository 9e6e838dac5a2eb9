package cmd

import "runtime/debug"

// bulkGC tunes the collector for bulk work (scans, batches), which
// allocates fast and holds little: collecting at 4x the live heap instead
// of 2x saves much of the collector's work, and a soft limit of 40 MiB keeps
// purge's peak RSS under 64 MB. GOGC or GOMEMLIMIT in the environment win.
func bulkGC(getenv func(string) string) (restore func()) {
	return bulkGCLimit(getenv, 40<<20)
}

// bulkGCLimit is bulkGC with a soft limit of its own (bytes).
func bulkGCLimit(getenv func(string) string, soft int64) (restore func()) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	pct := debug.SetGCPercent(400)
	limit := debug.SetMemoryLimit(soft)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}
