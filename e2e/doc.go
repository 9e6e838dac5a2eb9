// Package e2e holds idmpctl's system tests: the golden scripts of
// ../testdata (TestScript, TestClusterScript) and the Go tests that run the
// idmpctl binary against real redis-server processes, clusters, replicas
// and terminals (faults, partitions, durability, security, scenarios).
//
// TestMain (main_test.go) makes the test binary act as idmpctl: testscript
// registers cmd.Main under that name and puts the binary on PATH, so the
// scripts and internal/clitest run it as a separate process. README.md says
// what each file covers; ../testdata/script/README.md documents the
// scripts' custom commands and conditions.
//
// The package has no code outside its tests.
package e2e
