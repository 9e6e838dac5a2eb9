#!/usr/bin/env bash
# The CLI's own figures for the keyspace scans (part of `make bench`): fill
# a throwaway redis-server on a free loopback port with N claim records
# (default 1,000,000; BENCH_CLI_KEYS), then time with /usr/bin/time -v
#
#   idmpctl inspect --match 'k:*' -o raw > /dev/null
#   idmpctl purge --match 'k:*' --yes -o raw > /dev/null
#
# and report elapsed, keys/s and peak RSS of each. Figures, not a test: it
# fails only when a step fails, never on speed. Every step is bounded
# (timeout), and the server and the work directory go away on exit.
set -euo pipefail

keys=${BENCH_CLI_KEYS:-1000000}
step_timeout=${BENCH_CLI_TIMEOUT:-600}
root=$(cd "$(dirname "$0")/.." && pwd)

command -v redis-server >/dev/null || bash "$root/scripts/install-redis.sh"
if [ ! -x /usr/bin/time ]; then
	echo "bench-cli: installing GNU time (/usr/bin/time)" >&2
	if [ "$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi
	$sudo apt-get install -y -qq time >/dev/null || { $sudo apt-get update -qq && $sudo apt-get install -y -qq time >/dev/null; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/idmpctl-bench-cli.XXXXXX")
server_pid=
cleanup() {
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill "$server_pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "bench-cli: building idmpctl" >&2
(cd "$root" && go build -trimpath -o "$work/idmpctl" .)

# A free loopback port: nothing answers on it; retried if the server cannot
# bind it after all.
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

for _ in 1 2 3 4 5; do
	port=$(free_port)
	redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
		--dir "$work" --logfile "$work/redis.log" --daemonize no &
	server_pid=$!
	for _ in $(seq 100); do
		if redis-cli -p "$port" ping >/dev/null 2>&1; then break; fi
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.05
	done
	if redis-cli -p "$port" ping >/dev/null 2>&1; then break; fi
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=
done
[ -n "$server_pid" ] || { echo "bench-cli: redis-server did not start" >&2; exit 1; }
cli() { timeout "$step_timeout" redis-cli -p "$port" "$@"; }

# The records docs/claim.md describes, COMPLETED, with a TTL: 100,000 a script
# call (a Lua loop needs no client-side protocol generation).
fill='local now = redis.call("TIME")[1] * 1000
for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do
  local k = "k:" .. i
  redis.call("HSET", k, "status", "COMPLETED", "owner", "bench:1", "token", "1", "attempts", "1",
    "lease_until", string.format("%d", now + 60000), "created", string.format("%d", now),
    "updated", string.format("%d", now + 30000))
  redis.call("PEXPIRE", k, 86400000)
end
return 1'
echo "bench-cli: filling $keys records on 127.0.0.1:$port" >&2
for ((start = 0; start < keys; start += 100000)); do
	end=$((start + 100000 - 1))
	[ "$end" -lt "$keys" ] || end=$((keys - 1))
	cli EVAL "$fill" 0 "$start" "$end" >/dev/null
done
filled=$(cli DBSIZE)
[ "$filled" -eq "$keys" ] || { echo "bench-cli: filled $filled keys, want $keys" >&2; exit 1; }

export IDMPCTL_URL="redis://127.0.0.1:$port/0"
unset IDMPCTL_PASSWORD REDISCLI_AUTH REDIS_URL

# server_cpu: the server's CPU seconds so far (user + system).
server_cpu() {
	cli INFO cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.2f", s }'
}

# run NAME CMD...: times one command, its stdout to /dev/null, and prints a
# line of figures: wall time, keys/s, peak RSS and CPU of idmpctl, and the
# server's CPU over the same time (which of the two bounds the run).
run() {
	local name=$1
	shift
	local tv="$work/$name.time" err="$work/$name.err" cpu0 cpu1
	cpu0=$(server_cpu)
	if ! timeout "$step_timeout" /usr/bin/time -v -o "$tv" "$@" >/dev/null 2>"$err"; then
		echo "bench-cli: $name failed:" >&2
		cat "$err" "$tv" >&2 || true
		exit 1
	fi
	cpu1=$(server_cpu)
	local elapsed rss secs user sys
	elapsed=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tv")
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tv")
	user=$(sed -n 's/.*User time (seconds): //p' "$tv")
	sys=$(sed -n 's/.*System time (seconds): //p' "$tv")
	secs=$(awk -v t="$elapsed" 'BEGIN { n = split(t, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }')
	awk -v name="$name" -v keys="$keys" -v s="$secs" -v rss="$rss" -v cpu="$(awk -v u="$user" -v y="$sys" 'BEGIN { print u + y }')" \
		-v scpu="$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { print b - a }')" -v summary="$(tail -n 1 "$err")" 'BEGIN {
		printf "%-8s %9d keys  %7.2f s  %9.0f keys/s  peak RSS %6.1f MB  idmpctl CPU %6.2f s  redis-server CPU %6.2f s   (%s)\n",
			name, keys, s, (s > 0 ? keys / s : 0), rss / 1024, cpu, scpu, summary
	}'
}

echo "bench-cli: $(redis-server --version | cut -d' ' -f1-3), $(nproc) CPUs" >&2
run inspect "$work/idmpctl" inspect --match 'k:*' -o raw
run purge "$work/idmpctl" purge --match 'k:*' --yes -o raw
left=$(cli DBSIZE)
[ "$left" -eq 0 ] || { echo "bench-cli: $left keys left after the purge" >&2; exit 1; }
