#!/usr/bin/env bash
# Installs the two servers the tests run on:
#
#   - Debian's redis-server and redis-tools (Redis 7.0: no native IDMP, so
#     idmpctl emulates it), when missing;
#   - Redis 8.6.3 (native IDMP), built from Debian experimental's source
#     package (its binary package needs a newer libc than Debian 12 has) and
#     cached in $REDIS86_DIR (default ~/.cache/idmpctl/redis-8.6.3): bin/
#     holds redis-server, redis-cli, redis-check-aof, redis-benchmark (TLS
#     built in), tests/ holds Redis's own test tree (tests/unit/type/stream.tcl);
#   - Debian's lua-check (luacheck), which lints the Lua scripts, when missing.
#
# A second run finds both and does nothing. IDMPCTL_SKIP_REDIS86=1 skips the
# 8.6 build (make test then fails its native pass, saying so).
set -euo pipefail

REDIS86_VERSION=8.6.3
REDIS86_DEB_VERSION=5:8.6.3-1
REDIS86_DIR=${REDIS86_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/idmpctl/redis-$REDIS86_VERSION}

root() { [ "$(id -u)" = 0 ]; }

install_debian_redis() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null && return 0
  if ! root; then
    echo "redis-server is missing: install it (sudo apt-get install redis-server redis-tools) and run again" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq redis-server redis-tools >/dev/null
  # The package starts a system service; idmpctl's tests and demo start their own.
  service redis-server stop >/dev/null 2>&1 || true
}

have_redis86() {
  [ -x "$REDIS86_DIR/bin/redis-server" ] && [ -f "$REDIS86_DIR/tests/unit/type/stream.tcl" ] &&
    "$REDIS86_DIR/bin/redis-server" --version 2>/dev/null | grep -q "v=$REDIS86_VERSION "
}

build_redis86() {
  have_redis86 && return 0
  if ! root; then
    echo "Redis $REDIS86_VERSION is not in $REDIS86_DIR and this is not root: run this script as root once," >&2
    echo "or build Redis $REDIS86_VERSION yourself and put its src/ binaries in $REDIS86_DIR/bin and its tests/ in $REDIS86_DIR/tests" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  echo "building Redis $REDIS86_VERSION from Debian's source package into $REDIS86_DIR (about a minute)" >&2
  local list=/etc/apt/sources.list.d/idmpctl-experimental-src.list
  grep -rqs experimental /etc/apt/sources.list /etc/apt/sources.list.d/ ||
    echo 'deb-src http://deb.debian.org/debian experimental main' > "$list"
  apt-get update -qq
  apt-get install -y -qq build-essential pkg-config libssl-dev tcl >/dev/null
  local work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  (cd "$work" && apt-get source -qq --download-only "redis=$REDIS86_DEB_VERSION" >/dev/null 2>&1) || {
    echo "apt-get source redis=$REDIS86_DEB_VERSION failed (is experimental's deb-src reachable?)" >&2
    exit 1
  }
  tar -xzf "$work/redis_$REDIS86_VERSION.orig.tar.gz" -C "$work"
  local src="$work/redis-$REDIS86_VERSION"
  make -C "$src" -j"$(nproc)" BUILD_TLS=yes MALLOC=libc >"$work/build.log" 2>&1 || {
    tail -40 "$work/build.log" >&2
    echo "building Redis $REDIS86_VERSION failed" >&2
    exit 1
  }
  rm -rf "$REDIS86_DIR.tmp"
  mkdir -p "$REDIS86_DIR.tmp/bin"
  for b in redis-server redis-cli redis-check-aof redis-check-rdb redis-benchmark; do
    cp "$src/src/$b" "$REDIS86_DIR.tmp/bin/"
  done
  cp -r "$src/tests" "$REDIS86_DIR.tmp/tests"
  rm -rf "$REDIS86_DIR"
  mv "$REDIS86_DIR.tmp" "$REDIS86_DIR"
}

# tclsh runs Redis's own IDMP tests (TestRedisOwnIDMPSuite) against the
# tree's tests/unit/type/stream.tcl.
install_tcl() {
  command -v tclsh >/dev/null && return 0
  if ! root; then
    echo "tclsh is missing: install it (sudo apt-get install tcl) to run Redis's own IDMP tests" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq tcl >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq tcl >/dev/null; }
}

# luacheck lints the Lua scripts in make test (TestLuacheck in internal/ops).
install_luacheck() {
  command -v luacheck >/dev/null && return 0
  if ! root; then
    echo "luacheck is missing: install it (sudo apt-get install lua-check) to lint the Lua scripts" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq lua-check >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq lua-check >/dev/null; }
}

install_debian_redis
install_luacheck
if [ "${IDMPCTL_SKIP_REDIS86:-}" != 1 ]; then
  build_redis86
  install_tcl
  "$REDIS86_DIR/bin/redis-server" --version
fi
