package main

import "testing"

// Tests of stream behaviour under faults run in each IDMP mode the server
// under test has: emulated everywhere (--mode emulated, which also works
// on Redis 8.6), and native on Redis 8.6 (make test's second pass).

// streamModes are the --mode values a fault test runs in on the server
// under test.
func streamModes(t testing.TB) []string {
	t.Helper()
	if nativeServer(t) {
		return []string{"emulated", "native"}
	}
	return []string{"emulated"}
}

// eachMode runs f as a subtest per mode of streamModes.
func eachMode(t *testing.T, f func(t *testing.T, mode string)) {
	t.Helper()
	for _, mode := range streamModes(t) {
		t.Run(mode, func(t *testing.T) { f(t, mode) })
	}
}

// modeFlag is the --mode flag of a stream command in that mode.
func modeFlag(mode string) []string { return []string{"--mode", mode} }
