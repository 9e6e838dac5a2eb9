package cmd

import "runtime/debug"

// bulkGC tunes the collector for bulk work: a keyspace scan (inspect
// --match, purge --match) or a batch (xadd --batch). Each allocates fast
// (every key's replies and record, every line's fields and arguments) and
// holds little (a few batches or windows), so collecting at 4x the live heap instead
// of 2x saves much of the collector's work; a soft limit of 40 MiB keeps the
// heap inside purge's budget (peak RSS under 64 MB) should the values be
// large. GOGC or GOMEMLIMIT in the environment win. The returned func
// restores the settings.
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
