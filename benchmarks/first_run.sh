#!/usr/bin/env bash
# Time a first `make run` as a new user gets it: a fresh clone, an empty pip cache, no models,
# until the daemon answers its first request (Debian packages excluded: they must be present).
#   benchmarks/first_run.sh [REPO]     (REPO defaults to this checkout's HEAD)
set -euo pipefail
repo=${1:-$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)}
work=$(mktemp -d /tmp/first-run.XXXXXX)
git clone -q "$repo" "$work/src"
export PIP_CACHE_DIR="$work/pip-cache" EDGE_RUNTIME_PATHS__HOME="$work/home"
port=${PORT:-18080}
start=$(date +%s.%N)
( cd "$work/src" && EDGE_RUNTIME_SERVER__PORT=$port CLOUD_ENDPOINT=tcp://127.0.0.1:$((port + 1)) \
    make run >"$work/make-run.log" 2>&1 ) &
runner=$!
trap 'pkill -f "$work/src/.venv" 2>/dev/null || true; kill $runner 2>/dev/null || true' EXIT
until curl -sf -m 30 -H 'content-type: application/json' -d '{"text":"what time is it"}' \
        "http://127.0.0.1:$port/v1/ask" >"$work/answer.json" 2>/dev/null; do
  kill -0 $runner 2>/dev/null || { echo "make run exited; see $work/make-run.log" >&2; tail -20 "$work/make-run.log" >&2; exit 1; }
  sleep 1
done
end=$(date +%s.%N)
echo "first answer after $(echo "$end - $start" | bc) s: $(cat "$work/answer.json")"
echo "venv size: $(du -sh "$work/src/.venv" | cut -f1); log: $work/make-run.log"
