# idmpctl: make demo (a walkthrough on a throwaway server), make test (CI).
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/idmpctl/idmpctl/cmd.version=$(VERSION)

.PHONY: build demo test test-short bench completions vet fmt redis-server clean

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o idmpctl .

# A walkthrough of every command against $DEMO_URL, or a throwaway
# redis-server on a free loopback port (installed with apt-get if missing).
demo: build
	@bash scripts/demo.sh

# The whole suite: vet, gofmt, then every test with -race, each test
# starting its own redis-server(s).
test: redis-server
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo 'gofmt: run gofmt -w'; exit 1; }
	$(GO) test -race -count=1 -timeout 20m ./...

test-short:
	$(GO) test -count=1 ./...

# Benchmarks report the figures the issues ask for (b.ReportMetric).
bench: redis-server
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 ./... | tee bench.out
	@bash scripts/startup.sh

completions:
	$(GO) run . completion bash > completions/idmpctl.bash
	$(GO) run . completion zsh > completions/_idmpctl
	$(GO) run . completion fish > completions/idmpctl.fish
	$(GO) run . completion powershell > completions/idmpctl.ps1

# Debian's redis-server when missing (tests start their own processes).
redis-server:
	@command -v redis-server >/dev/null || bash scripts/install-redis.sh

clean:
	rm -f idmpctl bench.out
