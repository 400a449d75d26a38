#!/usr/bin/env bash
# Install the servers the integration tests start themselves (redis-server), when missing.
set -euo pipefail
if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing redis-server (Debian package) for the cache tests"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  else
    echo "redis-server is missing: install it (e.g. sudo apt-get install redis-server)" >&2
    exit 1
  fi
fi
