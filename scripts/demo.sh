#!/usr/bin/env bash
# make demo: a walkthrough of idmpctl against $DEMO_URL, or against a
# throwaway redis-server on a free loopback port, started and stopped here.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=./idmpctl
export NO_COLOR=${NO_COLOR:-}
tmp=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

if [ -n "${DEMO_URL:-}" ]; then
  export IDMPCTL_URL=$DEMO_URL
else
  command -v redis-server >/dev/null || bash scripts/install-redis.sh
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000)))
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
    --logfile "$tmp/redis.log" --daemonize no &
  pid=$!
  export IDMPCTL_URL="redis://127.0.0.1:$port/0"
  for _ in $(seq 100); do
    redis-cli -p "$port" PING >/dev/null 2>&1 && break
    sleep 0.05
  done
fi

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@" || echo "(exit $?)"; }
say() { printf '\n# %s\n' "$*"; }

say "The server: version, mode, native IDMP or emulated, round-trip time"
step $BIN inspect --server -o table

say "Capacity planning: 1,000 msg/s, 80 ms mark-delay, 1,000 s recovery"
step $BIN calc-maxsize --rate 1000/s --mark-delay 80ms --recovery 1000s -o table
step $BIN calc-maxsize --rate 1000/s --mark-delay 80ms --recovery 1000s
step $BIN calc-maxsize --rate 2.5M/s --mark-delay 80ms --recovery 48h

if [ -f scripts/demo-more.sh ]; then
  # shellcheck source=/dev/null
  source scripts/demo-more.sh
fi

say "Errors carry exit codes a script can branch on"
step $BIN calc-maxsize --rate 1000/s --mark-delay 80
step $BIN inspect --server --url redis://127.0.0.1:1/0
echo
echo "demo done (server: $IDMPCTL_URL)"
