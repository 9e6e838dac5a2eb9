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
#
# "install-redis.sh valkey" installs valkey-server from bookworm-backports
# instead (.ci/run), or fails saying why.
#
# The machine's apt sources are never changed: experimental's deb-src line
# and the backports line are written to lists of the build's own in
# $APT_DIR (default ~/.cache/idmpctl/apt), on the mirror the machine's own
# Debian source names, and apt reads them with index files of their own
# there (private_apt). Sourced (source install-redis.sh), it defines its
# functions and installs nothing.
set -euo pipefail

REDIS86_VERSION=8.6.3
REDIS86_DEB_VERSION=5:8.6.3-1
REDIS86_DIR=${REDIS86_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/idmpctl/redis-$REDIS86_VERSION}
APT_DIR=${APT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/idmpctl/apt}

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
  apt-get install -y -qq build-essential pkg-config libssl-dev tcl >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y -qq build-essential pkg-config libssl-dev tcl >/dev/null; }
  local work
  work=$(mktemp -d)
  trap 'rm -rf "$work"; trap - RETURN' RETURN
  private_list redis86 "$(codename)" deb-src experimental >&2 || exit 1
  { private_apt redis86 apt-get update -qq &&
    (cd "$work" && private_apt redis86 apt-get source -qq --download-only "redis=$REDIS86_DEB_VERSION" >/dev/null 2>&1); } || {
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

# codename is this system's release (bookworm), from /etc/os-release.
# shellcheck source=/dev/null
codename() { (. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}"); }

# debian_mirror CODENAME prints the URI of the machine's own Debian archive:
# that of the first source apt reads (sources.list, sources.list.d/*.list
# and *.sources, as apt itself parses them) for the release CODENAME.
debian_mirror() {
  # shellcheck disable=SC2016 # $(FIELD) is apt's format, not the shell's
  apt-get indextargets --no-release-info --format '$(TARGET_OF) $(RELEASE) $(REPO_URI)' |
    awk -v r="$1" '$1 == "deb" && $2 == r { print $3; exit }'
}

# private_list NAME CODENAME TYPE SUITE... writes $APT_DIR/NAME.list, a
# "TYPE MIRROR SUITE main" line per SUITE on the machine's own Debian
# mirror, or fails saying there is none.
private_list() {
  local name=$1 mirror suite
  mirror=$(debian_mirror "$2")
  if [ -z "$mirror" ]; then
    echo "no Debian source for ${2:-this release} in this machine's apt configuration to take a mirror from"
    return 1
  fi
  mkdir -p "$APT_DIR/$name.lists/partial"
  for suite in "${@:4}"; do echo "$3 $mirror $suite main"; done >"$APT_DIR/$name.list"
}

# private_apt NAME apt-get|apt-cache ARGS... runs apt on $APT_DIR/NAME.list
# alone, with its index files in $APT_DIR/NAME.lists and no binary caches
# (10 minutes at most): the machine's sources, lists and caches are neither
# read nor changed. What it installs goes into the system's dpkg database,
# as any install. apt's download user (_apt) may not enter a home
# directory, so it downloads as the caller (as it would, with a warning).
private_apt() {
  local name=$1 tool=$2
  timeout 600 "$tool" -o Dir::Etc::sourcelist="$APT_DIR/$name.list" -o Dir::Etc::sourceparts=- \
    -o Dir::State::Lists="$APT_DIR/$name.lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= \
    -o APT::Sandbox::User="$(id -un)" "${@:3}"
}

# install_valkey installs valkey-server from bookworm-backports (Debian 12
# has no Valkey otherwise), on a private list of bookworm and its
# backports (the dependencies come from bookworm), or prints why not and
# fails.
install_valkey() {
  command -v valkey-server >/dev/null && return 0
  root || { echo "not root"; return 1; }
  command -v apt-get >/dev/null || { echo "no apt-get"; return 1; }
  local release
  release=$(codename)
  [ "$release" = bookworm ] || { echo "not Debian bookworm (${release:-unknown})"; return 1; }
  private_list valkey "$release" deb "$release" "$release-backports" || return 1
  export DEBIAN_FRONTEND=noninteractive
  private_apt valkey apt-get update -qq || { echo "apt-get update failed"; return 1; }
  private_apt valkey apt-get install -y -qq -t "$release-backports" valkey-server >/dev/null ||
    { echo "apt-get install failed"; return 1; }
  # The package may start a system service; the tests start their own servers.
  service valkey-server stop >/dev/null 2>&1 || true
  command -v valkey-server >/dev/null || { echo "valkey-server still missing"; return 1; }
}

main() {
  if [ "${1:-}" = valkey ]; then
    install_valkey
    return
  fi
  install_debian_redis
  install_luacheck
  if [ "${IDMPCTL_SKIP_REDIS86:-}" != 1 ]; then
    build_redis86
    install_tcl
    "$REDIS86_DIR/bin/redis-server" --version
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  main "$@"
fi
