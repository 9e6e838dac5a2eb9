# idmpctl: make demo (a walkthrough on a throwaway server), make test (CI).
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/idmpctl/idmpctl/cmd.version=$(VERSION)

.PHONY: build demo test test-native luacheck test-soak test-soak-native test-valkey test-short fuzz bench bench-speed completions man man-gz vet fmt redis-server clean

# The build users get: static (no cgo: the pure-Go resolver, no dynamic
# loader at every start) and stripped. go install users get the same with
# CGO_ENABLED=0 go install -trimpath -ldflags='-s -w' (README).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o idmpctl .

# A walkthrough of every command against $IDMPCTL_URL (or $DEMO_URL) when
# a Redis answers there, else a throwaway redis-server on a free loopback
# port (installed with apt-get if missing).
demo: build
	@bash scripts/demo.sh

# Redis 8.6.3 (native IDMP), built and cached by scripts/install-redis.sh.
REDIS86_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/idmpctl/redis-8.6.3
export REDIS86_DIR
NATIVE_ENV = IDMPCTL_TEST_REDIS_SERVER=$(REDIS86_DIR)/bin/redis-server IDMPCTL_TEST_REDIS_CLI=$(REDIS86_DIR)/bin/redis-cli PATH="$(REDIS86_DIR)/bin:$$PATH"

# The whole suite, twice: vet, gofmt, then every test with -race on
# Debian's Redis 7.0 (idmpctl emulates IDMP), each test starting its own
# redis-server(s), and the native-only tests a Redis 8.6.3 beside it (they
# fail rather than skip without it: IDMPCTL_REQUIRE_NATIVE); then every
# test again on Redis 8.6.3 (test-native: native IDMP, and the emulation
# on a server that has IDMP). atexit_sleep_ms=0: a -race binary otherwise
# sleeps 1s on exit, and the tests run idmpctl (the test binary) hundreds
# of times. Every Lua script is linted by luacheck (.luacheckrc) as the
# server gets it, assembled from its parts (TestLuacheck in internal/ops),
# which fails rather than skips here when luacheck is missing.
# TESTFLAGS go to both passes' go test (make test TESTFLAGS=-json counts
# the tests run and skipped in each).
TESTFLAGS ?=
test: redis-server
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo 'gofmt: run gofmt -w'; exit 1; }
	IDMPCTL_REQUIRE_NATIVE=1 IDMPCTL_REQUIRE_LUACHECK=1 GORACE="atexit_sleep_ms=0 $$GORACE" $(GO) test -race -count=1 -timeout 20m $(TESTFLAGS) ./...
	@$(MAKE) --no-print-directory test-native

# The suite on Redis 8.6.3 (native IDMP), its companions (redis-cli for
# clusters, redis-check-aof) from the same build. Without -race: measured
# on this 2-core machine, the 8.6 pass took 2m53s plain and 3m55s with
# -race, and the native paths are raced in the first pass already (the
# native-only tests and the native conformance rules run there, on 8.6.3).
test-native: redis-server
	IDMPCTL_REQUIRE_NATIVE=1 IDMPCTL_REQUIRE_LUACHECK=1 $(NATIVE_ENV) $(GO) test -count=1 -timeout 20m $(TESTFLAGS) ./...

# The Lua linter alone (make test runs it too).
luacheck: redis-server
	IDMPCTL_REQUIRE_LUACHECK=1 $(GO) test -count=1 -run '^TestLuacheck$$' ./internal/ops

# The fault tests with the long random-kill soak: 200 rounds of 16 claim
# runs instead of make test's 25 (IDMPCTL_FAULT_SEED replays another seed),
# and a cluster slot moved during a 200,000-line batch (20,000 in make test);
# then the agreement of native 8.6.3 and the emulation over AGREE_SEEDS
# seeds instead of make test's 40 (IDMPCTL_AGREE_SEED replays one). The
# default 600 keeps CI, which also runs the suite on 8.6.3 now, near its
# old time (about 90 s; 2,000 seeds took 312 s in CI and found 0
# divergences: make test-soak AGREE_SEEDS=2000).
AGREE_SEEDS ?= 600
test-soak: redis-server
	GORACE="atexit_sleep_ms=0 $$GORACE" IDMPCTL_SOAK=1 $(GO) test -race -count=1 -run 'TestFault|TestClusterSlotMove' -timeout 30m ./e2e
	IDMPCTL_REQUIRE_NATIVE=1 IDMPCTL_AGREE_SEEDS=$(AGREE_SEEDS) $(GO) test -count=1 -run '^TestAgreement$$' -timeout 30m ./internal/ops/exec

# The same soak on Redis 8.6.3: native and emulated IDMP (not in CI's time).
test-soak-native: redis-server
	IDMPCTL_SOAK=1 $(NATIVE_ENV) $(GO) test -count=1 -run 'TestFault|TestClusterSlotMove' -timeout 30m ./e2e

# The suite again with valkey-server as the test server (emulated IDMP,
# Valkey's INFO and texts; redis-cli still forms the cluster). No -race, to
# stay quick. .ci/run installs valkey-server from bookworm-backports
# (scripts/install-redis.sh valkey).
test-valkey:
	@command -v valkey-server >/dev/null || { echo 'test-valkey: valkey-server not found (bash scripts/install-redis.sh valkey, as root)'; exit 1; }
	IDMPCTL_TEST_REDIS_SERVER=valkey-server $(GO) test -count=1 -timeout 20m ./...

test-short:
	$(GO) test -count=1 ./...

# Each fuzz target for FUZZTIME (make test runs only their seeds). A short
# minimisation: the default 60s per new input starves the add target, whose
# every run is several round trips to its redis-server.
FUZZTIME ?= 2m
fuzz: redis-server
	$(GO) test ./internal/ops/stream -run '^$$' -fuzz '^FuzzEmulatedAdd$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./internal/ops/stream -run '^$$' -fuzz '^FuzzXXH3$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./internal/ops/claim -run '^$$' -fuzz '^FuzzParseReply$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./internal/backup -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./internal/ops/exec -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./internal/resp -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s

# The hot paths (BenchmarkHot in e2e/bench_hot_test.go: single xadd,
# exec from stdin, xadd --batch, native on Redis 8.6.3 and emulated on 7.0,
# claim acquire, claim run; wall time, the server's CPU and the ratios to
# redis-cli), this tree's build and BENCH_BASE's interleaved in one run,
# then a table of both with every figure more than 10% worse flagged
# (scripts/bench-compare.sh, which says what the default base, the previous
# main, is). make bench BENCH_BASE=<rev> compares with another revision;
# IDMPCTL_BENCH_QUICK=1 runs small sizes. The lines go to bench.out.
BENCH_BASE ?=
bench: redis-server
	@bash scripts/bench-compare.sh $(BENCH_BASE)

# The figures of docs/speed.md: first the speed table (BenchmarkCLI: the
# release build against redis-cli, redis-benchmark -P 64, redis-cli --pipe
# and redis-cli < file (exec's row), medians of one run, printed as
# markdown; with the batch by each of its paths beside redis-cli --pipe of
# the same XADD ... IDMP lines on Redis 8.6.3, for IDMPCTL_BENCH_BATCH_LINES
# lines (default 200000,1000000) in IDMPCTL_BENCH_BATCH_ROUNDS rounds
# (default 5)); BenchmarkConsume (consume beside the hand-written loop of
# docs/claim-run.md); then every package's benchmarks (b.ReportMetric), the purge
# and scan ones over IDMPCTL_BENCH_KEYS records; then the CLI's own
# inspect/purge figures over BENCH_CLI_KEYS (default 1,000,000) records on
# a throwaway server (scripts/bench-cli.sh). All go to bench-speed.out.
IDMPCTL_BENCH_KEYS ?= 1000000
bench-speed: redis-server
	@command -v redis-benchmark >/dev/null || { echo 'bench-speed: redis-benchmark not found (apt-get install redis-tools)'; exit 1; }
	@bash -o pipefail -c "$(GO) test -run '^\$$' -bench '^Benchmark(CLI|Consume)$$' -benchtime 1x -count 1 ./e2e | tee bench-speed.out"
	@IDMPCTL_BENCH_KEYS=$(IDMPCTL_BENCH_KEYS) bash -o pipefail -c "$(GO) test -run '^\$$' -bench . -benchtime 1x -count 1 ./internal/... | tee -a bench-speed.out"
	@bash -o pipefail -c 'bash scripts/bench-cli.sh | tee -a bench-speed.out'

completions:
	$(GO) run . completion bash > completions/idmpctl.bash
	$(GO) run . completion zsh > completions/_idmpctl
	$(GO) run . completion fish > completions/idmpctl.fish
	$(GO) run . completion powershell > completions/idmpctl.ps1

# man/: idmpctl(1) and a page per command, from the command tree
# (internal/tools/genman, a separate program: cobra/doc stays out of the
# idmpctl binary). A test fails when man/ is stale.
man:
	$(GO) run ./internal/tools/genman -dir man

# Gzipped copies of man/ for the .deb and .rpm (goreleaser's before hooks):
# -n keeps them byte-identical from run to run.
man-gz: man
	rm -rf build/man && mkdir -p build/man
	for f in man/*.1; do gzip -9nc "$$f" > "build/man/$${f##*/}.gz"; done

# Debian's redis-server, the cached Redis 8.6.3 build, tclsh (for Redis's
# own IDMP tests) and luacheck (Debian's lua-check, for the scripts), when
# missing (tests start their own processes).
redis-server:
	@{ command -v redis-server >/dev/null && test -x "$(REDIS86_DIR)/bin/redis-server" && command -v tclsh >/dev/null && command -v luacheck >/dev/null; } || bash scripts/install-redis.sh

clean:
	rm -f idmpctl bench.out bench-speed.out
	rm -rf build
