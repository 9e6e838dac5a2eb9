#!/usr/bin/env bash
# Process start-up figures (issue: scripts call idmpctl once per message):
# hyperfine -N medians of idmpctl against redis-cli on the same throwaway
# redis-server, in one run. Needs hyperfine (Debian package; installed when
# missing and root).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { [ "$(id -u)" = 0 ] && apt-get install -y -qq hyperfine >/dev/null; } || {
  echo "startup.sh: hyperfine is missing (apt-get install hyperfine)" >&2; exit 0; }
[ -x ./idmpctl ] || make -s build
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" --logfile "$tmp/log" --daemonize no &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.05; done
url="redis://127.0.0.1:$port/0"
runs=${RUNS:-300}
hyperfine -N --warmup 30 --runs "$runs" --export-json "$tmp/h.json" \
  "./idmpctl calc-maxsize --rate 1000/s --mark-delay 80ms" \
  "redis-cli -p $port PING" \
  "./idmpctl inspect --server --url $url" \
  "redis-cli -p $port INFO server" \
  "./idmpctl xadd s --pid p --iid same --url $url f v" \
  "redis-cli -p $port XADD s2 * f v" >/dev/null
python3 - "$tmp/h.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
med = [x["median"] * 1000 for x in r]
names = ["idmpctl calc-maxsize", "redis-cli PING", "idmpctl inspect --server", "redis-cli INFO server",
         "idmpctl xadd (IDMP, emulated)", "redis-cli XADD"]
for n, m in zip(names, med):
    print(f"startup: {n:32s} median {m:6.2f} ms")
for a, b in ((0, 1), (2, 3), (4, 5)):
    print(f"startup: {names[a]} / {names[b]} = {med[a] / med[b]:.2f}x")
PY
