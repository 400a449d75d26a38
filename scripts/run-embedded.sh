#!/usr/bin/env bash
# Start the cloud reasoner on loopback, then the daemon in the foreground; Ctrl-C stops both.
set -euo pipefail
BIN=${BIN:-.venv/bin}
CLOUD_ENDPOINT=${CLOUD_ENDPOINT:-tcp://127.0.0.1:5555}
"$BIN/edge-cloud" serve --bind "$CLOUD_ENDPOINT" --backend embedded &
cloud_pid=$!
trap 'kill "$cloud_pid" 2>/dev/null || true; wait "$cloud_pid" 2>/dev/null || true' EXIT INT TERM
echo "edge-cloud (pid $cloud_pid) on $CLOUD_ENDPOINT; starting edge-runtime on http://127.0.0.1:8080"
echo "try: $BIN/edge-runtime ask --url http://127.0.0.1:8080 --json 'what time is it'"
"$BIN/edge-runtime" serve --set cloud.endpoint="$CLOUD_ENDPOINT" "$@"
