#!/usr/bin/env bash
# Installs Debian's redis-server (and redis-tools) when it is missing.
set -euo pipefail
command -v redis-server >/dev/null && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "redis-server is missing: install it (sudo apt-get install redis-server) and run again" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq redis-server >/dev/null
# The package starts a system service; idmpctl's tests and demo start their own.
service redis-server stop >/dev/null 2>&1 || true
