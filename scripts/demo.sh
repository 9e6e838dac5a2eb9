#!/usr/bin/env bash
# make demo: a walkthrough of idmpctl against the Redis at $IDMPCTL_URL
# ($DEMO_URL, the older name, first) when one answers there, or else
# against a throwaway redis-server on a free loopback port, started and
# stopped here.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=./idmpctl
export NO_COLOR=${NO_COLOR:-}
tmp=$(mktemp -d)
pid=""
cleanup() {
  # On a server of the user's, the demo's own keys go (its prefix only).
  if [ -n "${DEMO_URL:-}" ] && [ -n "${demo:-}" ]; then
    for pat in "$demo:*" "{$demo:*"; do
      redis-cli -u "$DEMO_URL" --scan --pattern "$pat" 2>/dev/null |
        while IFS= read -r k; do redis-cli -u "$DEMO_URL" UNLINK "$k" >/dev/null 2>&1; done
    done
  fi
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

DEMO_URL=${DEMO_URL:-${IDMPCTL_URL:-}}
if [ -n "$DEMO_URL" ] && ! redis-cli -u "$DEMO_URL" PING 2>/dev/null | grep -q PONG; then
  echo "demo: no Redis answers at $DEMO_URL: using a throwaway redis-server instead" >&2
  DEMO_URL=""
fi
if [ -n "$DEMO_URL" ]; then
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

step() {
  printf '\n\033[1m$'; printf ' %q' "$@"; printf '\033[0m\n'
  "$@" || printf '\n(exit %d)\n' "$?"
}
say() { printf '\n# %s\n' "$*"; }

say "The server: version, mode, native IDMP or emulated, round-trip time"
step $BIN inspect --server -o table

say "Capacity planning: 1,000 msg/s, 80 ms mark-delay, 1,000 s recovery"
step $BIN calc-maxsize --rate 1000/s --mark-delay 80ms --recovery 1000s -o table
step $BIN calc-maxsize --rate 1000/s --mark-delay 80ms --recovery 1000s
step $BIN calc-maxsize --rate 2.5M/s --mark-delay 80ms --recovery 48h

demo=demo$$   # key prefix, so a shared DEMO_URL server is not disturbed

say "Idempotent stream adds: the same (pid, iid) twice is one entry; the reply is the same ID"
step $BIN xadd $demo:orders --pid api-1 --iid order-17 amount 100
step $BIN xadd $demo:orders --pid api-1 --iid order-17 amount 100 -o json
step $BIN xadd $demo:orders --pid api-1 --auto --json '{"amount":"250","currency":"EUR"}' -o json

say "Batch mode: NDJSON in, one line out per line (a repeat inside the batch dedupes)"
printf '%s\n' '{"iid":"order-18","fields":{"amount":"5"}}' '{"iid":"order-19","fields":[["item","a"],["item","b"]]}' \
  '{"iid":"order-18","fields":{"amount":"5"}}' > "$tmp/orders.ndjson"
step $BIN xadd $demo:orders --pid api-1 --batch "$tmp/orders.ndjson"

say "A stream's IDMP settings, counters (XINFO names) and health"
step $BIN inspect $demo:orders -o table

say "Size the settings, then apply them (a change clears tracked iids, so it needs --yes)"
step $BIN calc-maxsize --rate 2k/s --mark-delay 80ms --recovery 1000s --apply $demo:orders --dry-run
step $BIN cfgset $demo:orders --duration 1000 --maxsize 200 --yes -o table

say "Idempotency keys: claim, complete, and a redelivery is told to skip (exit 1)"
printf '\n\033[1m$ TOKEN=$(%s claim acquire %s --lease 30s --payload amount=100)\033[0m\n' "$BIN" "$demo:pay:1"
TOKEN=$($BIN claim acquire $demo:pay:1 --lease 30s --payload 'amount=100')
echo "$TOKEN"
step $BIN claim renew $demo:pay:1 --token "$TOKEN"
step $BIN claim complete $demo:pay:1 --token "$TOKEN" --result 'charged 100'
step $BIN claim acquire $demo:pay:1 --payload 'amount=100'

say "claim run: a shell command at most once per key; a redelivery replays its output"
step $BIN claim run $demo:job:1 -- sh -c 'echo "sending invoice (attempt $IDMPCTL_ATTEMPT)"'
step $BIN claim run $demo:job:1 -- sh -c 'echo "this never runs"'
step $BIN claim run $demo:job:2 -- sh -c 'echo "flaky"; exit 3'
step $BIN claim run $demo:job:2 -- sh -c 'echo "retried: attempt $IDMPCTL_ATTEMPT"'

say "consume: each entry of a consumer group runs its command at most once; one that keeps failing goes to a dead-letter stream"
for n in 1 2 3; do $BIN xadd $demo:invoices --pid shop --iid inv-$n customer c$n >/dev/null; done
step $BIN consume $demo:invoices --group billing --create --max-attempts 2 --retry-delay 1s --dead-letter $demo:invoices-dead --until-empty -- sh -c 'if grep -q "\"c2\""; then echo "c2: card declined" >&2; exit 3; fi; echo "invoiced $IDMPCTL_ENTRY_ID"'
step $BIN consume $demo:invoices --group billing --until-empty -- sh -c 'echo "this never runs"'
step $BIN inspect $demo:invoices -o table

say "Records written by other libraries are recognised too"
redis_cli() { if [ -n "${DEMO_URL:-}" ]; then redis-cli -u "$DEMO_URL" "$@"; else redis-cli -p "$port" "$@"; fi; }
stale_ms=$(( $(date +%s) * 1000 - 60000 ))   # its worker's deadline passed a minute ago
redis_cli SET "$demo:pt:1" "{\"id\":\"x\",\"expiration\":4102444800,\"in_progress_expiration\":$stale_ms,\"status\":\"INPROGRESS\"}" >/dev/null
redis_cli SET "$demo:marker:1" COMPLETED >/dev/null
step $BIN inspect --match "$demo:*" -o table
step $BIN inspect "$demo:pt:1"

say "Purge safely: dry run first, then only what matches (re-checked on the server), with an undo"
step $BIN purge --match "$demo:*" --stale --dry-run
step $BIN purge --match "$demo:*" --stale --yes --backup "$tmp/purged.ndjson"
step $BIN restore "$tmp/purged.ndjson"
step $BIN purge --match "$demo:*" --stale --yes
step $BIN purge --stream $demo:orders --yes

say "Redis 8.6's own syntax on any server (native on 8.6, emulated here)"
step $BIN exec XADD $demo:events IDMP producer-1 iid-1 '*' amount 100
step $BIN exec XADD $demo:events IDMP producer-1 iid-1 '*' amount 100
step $BIN exec XADD $demo:events IDMP producer-1 iid-1 0-1 amount 100
printf 'XCFGSET %s IDMP-DURATION 600\nXINFO STREAM %s\n' "$demo:events" "$demo:events" > "$tmp/cmds.txt"
printf '\n\033[1m$ %s exec -o json < cmds.txt   # %s\033[0m\n' "$BIN" "$(tr '\n' ';' < "$tmp/cmds.txt")"
$BIN exec -o json < "$tmp/cmds.txt" || printf '\n(exit %d)\n' "$?"

say "Idempotency keys themselves: TTL from the retry window, memory by the usual formula"
step $BIN calc-ttl --rate 100/s --max-processing 30m --max-retry-delay 23h --buffer 30m --key-size 40 --value-size 80

say "Errors carry exit codes a script can branch on"
step $BIN calc-maxsize --rate 1000/s --mark-delay 80
step $BIN inspect --server --url redis://127.0.0.1:1/0
echo
echo "demo done (server: $IDMPCTL_URL)"
