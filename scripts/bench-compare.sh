#!/usr/bin/env bash
# make bench: idmpctl's hot paths (BenchmarkHot, e2e/bench_hot_test.go)
# measured for two builds in one run, interleaved on the same servers: this
# work tree's (uncommitted changes included) and a base revision's. Then a
# table of every figure, base against new, with each one more than
# BENCH_THRESHOLD percent (default 10) worse flagged, and the list of those
# at the end. Figures, not a test: it fails only when a step fails.
#
#   scripts/bench-compare.sh [BASE]       (make bench BENCH_BASE=BASE)
#   scripts/bench-compare.sh --table FILE (the table of an earlier run)
#
# BASE defaults to the previous main: on main's tip, its first parent (for
# a merge into main that is main before the merge, for a plain commit the
# one before it); on any other branch, main's tip, which the branch would
# replace. BENCH_BASE=HEAD compares uncommitted changes with the last
# commit (or, on a clean tree, two identical builds: the noise), and
# BENCH_BASE=$(git merge-base HEAD main) a branch's own changes alone.
#
# The base is built from `git archive` (no work tree, no network: the
# modules come from Go's cache). BenchmarkHot's knobs pass through
# (IDMPCTL_BENCH_QUICK=1 for small sizes, ...); BENCH_ROWS picks rows
# (a -bench pattern, e.g. 'BenchmarkHot/exec-'); the raw lines go to
# BENCH_OUT (default bench.out), readable by benchstat (-col /bin).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
threshold=${BENCH_THRESHOLD:-10}
out=${BENCH_OUT:-bench.out}

# The table: two lines a row, its wall-clock figure (ms/call, or a rate:
# adds/s, lines/s) and the server's CPU (cpu-us/...), each for the anchor,
# the base and the new build (with their ratios to the anchor), then the
# change, the median of the new build's ratios to the base's pair by pair
# (base-x; from the two medians for lines without it), and the noise of
# that change (noise-%: how far apart identical builds could land in this
# run, see e2e/bench_hot_test.go). A rate is worse when it falls, a time or
# CPU when it rises. A change is WORSE when it is worse by more than the
# threshold and than its noise; a noise over the threshold marks the line
# noisy (the machine was too busy for it), and the noisy changes that came
# out worse than the threshold but within their noise are listed apart.
table() {
	awk -v t="$threshold" -v base="$1" '
/^Benchmark.*\/bin=/ {
	row = $1; sub(/-[0-9]+$/, "", row); sub(/^Benchmark[^\/]*\//, "", row)
	side = row; sub(/.*\/bin=/, "", side); sub(/\/bin=.*/, "", row)
	if (!(row in seen)) { seen[row] = 1; rows[++n] = row }
	for (i = 3; i < NF; i += 2) {
		u = $(i + 1); k = u ~ /cpu/ ? "cpu" : "wall"
		if (u ~ /base-x$/) paired[row, k] = $i
		else if (u ~ /noise-%$/) noise[row, k] = $i
		else if (u ~ /^x-/) x[row, k, side] = $i
		else { val[row, k, side] = $i; unit[row, k] = u }
	}
}
function num(v) { return v == "" ? "-" : (v >= 1000 ? sprintf("%.0f", v) : sprintf("%.4g", v)) }
function with(v, r) { return num(v) (r == "" ? "" : sprintf(" (%.2fx)", r)) }
END {
	if (n == 0) { print "bench: no figures"; exit 1 }
	printf "\nbase: %s; new: this work tree; (Nx): the ratio to redis-cli\n\n", base
	printf "%-15s %-12s %10s %18s %18s %8s %6s\n", "row", "figure", "redis-cli", "base", "new", "change", "noise"
	for (r = 1; r <= n; r++) for (j = 1; j <= 2; j++) {
		row = rows[r]; k = j == 1 ? "wall" : "cpu"; b = val[row, k, "base"]; c = val[row, k, "new"]
		change = (row, k) in paired ? paired[row, k] - 1 : (b == "" || c == "" || b == 0) ? "" : c / b - 1
		worse = (unit[row, k] ~ /\/s$/ ? -change : change) * 100
		z = noise[row, k]; flag = ""
		if (change != "" && worse > t && worse > z) {
			flag = "  WORSE"
			regress = regress sprintf("\n  %s %s: %s -> %s (%.1f%% worse)", row, unit[row, k], num(b), num(c), worse)
		} else if (change != "" && z > t) {
			flag = "  (noisy)"; noisy++
			if (worse > t) maybe = maybe sprintf("\n  %s %s: %s -> %s (%.1f%% worse, noise %.0f%%)", row, unit[row, k], num(b), num(c), worse, z)
		}
		printf "%-15s %-12s %10s %18s %18s %8s %6s%s\n", row, unit[row, k], num(val[row, k, "redis-cli"]),
			with(b, x[row, k, "base"]), with(c, x[row, k, "new"]), change == "" ? "-" : sprintf("%+.1f%%", change * 100),
			z == "" ? "-" : sprintf("%.0f%%", z), flag
	}
	if (noisy) printf "\n%d noisy: the machine was too busy to tell %s%% apart there; run again when it is quieter\n", noisy, t
	if (maybe != "") printf "of them, worse by more than %s%% but within their noise (not judged):%s\n", t, maybe
	if (regress != "") printf "\nREGRESSIONS (>%s%% worse):%s\n", t, regress
	else printf "\nno figure is more than %s%% worse\n", t
}' "$2"
}

if [ "${1:-}" = --table ]; then
	table "base" "$2"
	exit
fi

base=${1:-}
if [ -z "$base" ]; then
	main=$(git rev-parse -q --verify main || true)
	if [ -z "$main" ] || [ "$main" = "$(git rev-parse HEAD)" ]; then base=HEAD^1; else base=main; fi
fi
rev=$(git rev-parse --verify -q "$base^{commit}") || { echo "bench: no revision $base" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/idmpctl-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
build() { CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$1" .; }
echo "bench: new: this work tree ($(git describe --always --dirty)); base: $base ($(git log -1 --format='%h %s' "$rev"))" >&2
build "$work/new"
mkdir "$work/src"
git archive "$rev" | tar -x -C "$work/src"
(cd "$work/src" && build "$work/base")

# How busy the machine was: the share of the run in which some task waited
# for a CPU (Linux's pressure stall information), when the kernel has it.
cpu_wait() { awk '/^some/ { sub("total=", "", $5); print $5 }' /proc/pressure/cpu 2>/dev/null || true; }
wait0=$(cpu_wait) start=$(date +%s%N)
IDMPCTL_BENCH_BIN=$work/new IDMPCTL_BENCH_BASE_BIN=$work/base IDMPCTL_REQUIRE_NATIVE=1 \
	go test -run '^$' -bench "${BENCH_ROWS:-^BenchmarkHot\$}" -benchtime 1x -count 1 -timeout 60m ./e2e | tee "$out"
wait1=$(cpu_wait) end=$(date +%s%N)

table "$base ($(git rev-parse --short "$rev"))" "$out"
if [ -n "$wait0" ] && [ -n "$wait1" ]; then
	echo "(some task waited for a CPU $(((wait1 - wait0) * 100000 / (end - start)))% of the run: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
fi
