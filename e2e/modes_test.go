package e2e

import "testing"

// eachMode runs f as a subtest per IDMP mode, with the --mode value: the
// emulation on every server (--mode emulated works on Redis 8.6 too), and
// native where the server under test has it (make test's second pass; on
// another server the native subtest says it did not run). For tests of
// stream behaviour other than batches, which take a batchMode
// (eachBatchMode).
func eachMode(t *testing.T, f func(t *testing.T, mode string)) {
	t.Helper()
	eachBatchMode(t, func(t *testing.T, m batchMode) { f(t, m.name) })
}
