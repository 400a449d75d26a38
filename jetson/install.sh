#!/usr/bin/env bash
# Install edge-runtime as a systemd service on a Jetson Orin Nano (JetPack 6) or any Linux box.
#
#   sudo jetson/install.sh              install or update, then start the service
#   jetson/install.sh --dry-run         print the steps, change nothing (no root needed)
#
# Idempotent: an existing user, venv, config or env file is kept; the package and the unit
# files are updated; re-running after `git pull` is the update path.
set -euo pipefail

PREFIX=/opt/edge-runtime
CONF_DIR=/etc/edge-runtime
UNIT_DIR=/etc/systemd/system
CACHE_DIR=/var/cache/edge-runtime
SERVICE_USER=edge-runtime
EXTRAS="build,tts,asr-whisper"
# NVIDIA's Jetson AI Lab index (JetPack 6, CUDA 12.6): onnxruntime-gpu with CUDA + TensorRT.
ORT_INDEX="https://pypi.jetson-ai-lab.io/jp6/cu126"
PROFILE=""
DRY_RUN=0
WITH_CLOUD=0
SKIP_MODELS=0
NO_START=0
SRC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
    cat <<EOF
Usage: $0 [options]
  --dry-run           print what would be done; change nothing
  --profile NAME      device profile for a new config (default: orin-nano-8gb on a Jetson, else x86-cpu)
  --extras LIST       pip extras to install (default: $EXTRAS)
  --ort-index URL     pip index with Jetson onnxruntime-gpu wheels (default: $ORT_INDEX)
  --with-cloud        also install edge-cloud.service (the gateway; for the server side)
  --skip-models       do not run 'edge-runtime models pull' and 'models build'
  --no-start          enable the service but do not start it now
  -h, --help          this text
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) DRY_RUN=1 ;;
        --profile) PROFILE="${2:?--profile needs a name}"; shift ;;
        --extras) EXTRAS="${2?--extras needs a list}"; shift ;;
        --ort-index) ORT_INDEX="${2:?--ort-index needs a URL}"; shift ;;
        --with-cloud) WITH_CLOUD=1 ;;
        --skip-models) SKIP_MODELS=1 ;;
        --no-start) NO_START=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

# run CMD...: execute, or print it under --dry-run.
run() {
    if [ "$DRY_RUN" = 1 ]; then
        printf '+'; printf ' %q' "$@"; printf '\n'
    else
        "$@"
    fi
}
step() { printf '== %s\n' "$*"; }
skip() { printf '   (skip: %s)\n' "$*"; }

# write_new DEST MODE GROUP: copy stdin to DEST unless DEST exists (never overwrite settings).
write_new() {
    local dest="$1" mode="$2" group="$3" content
    content="$(cat)"
    if [ -e "$dest" ]; then
        skip "$dest exists, kept"
    elif [ "$DRY_RUN" = 1 ]; then
        printf '+ write %s (mode %s, group %s):\n%s\n' "$dest" "$mode" "$group" "$content" | sed '2,$s/^/    /'
    else
        install -m "$mode" -o root -g "$group" /dev/null "$dest"
        printf '%s\n' "$content" > "$dest"
    fi
}

is_jetson() { [ -e /etc/nv_tegra_release ] || grep -qs 'tegra' /proc/device-tree/compatible; }

if [ -z "$PROFILE" ]; then
    if is_jetson; then PROFILE=orin-nano-8gb; else PROFILE=x86-cpu; fi
fi
VENV="$PREFIX/venv"
APP_SRC="$PREFIX/src"
TAR_EXCLUDES=(--exclude=./.git --exclude=./.venv --exclude='*.egg-info' --exclude=__pycache__ \
              --exclude=.pytest_cache)
PY="$VENV/bin/python"

step "preflight (source $SRC_DIR, profile $PROFILE$( [ "$DRY_RUN" = 1 ] && echo ', dry run'))"
if [ "$DRY_RUN" != 1 ] && [ "$(id -u)" != 0 ]; then
    echo "install.sh: run as root (sudo), or pass --dry-run to see the steps" >&2; exit 1
fi
command -v python3 >/dev/null || { echo "install.sh: python3 is missing (apt-get install python3 python3-venv)" >&2; exit 1; }
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || { echo "install.sh: Python >= 3.10 is required (JetPack 6 ships 3.10)" >&2; exit 1; }
if [ "$DRY_RUN" != 1 ]; then
    command -v systemctl >/dev/null || { echo "install.sh: systemd is required" >&2; exit 1; }
fi

step "service user $SERVICE_USER"
if getent passwd "$SERVICE_USER" >/dev/null; then
    skip "user exists"
else
    run useradd --system --user-group --no-create-home --home-dir "$CACHE_DIR" \
        --shell /usr/sbin/nologin "$SERVICE_USER"
fi
for group in video render audio; do
    if getent group "$group" >/dev/null; then
        if id -nG "$SERVICE_USER" 2>/dev/null | tr ' ' '\n' | grep -qx "$group"; then
            skip "$SERVICE_USER already in $group"
        else
            run usermod -aG "$group" "$SERVICE_USER"
        fi
    fi
done

step "directories"
run install -d -m 0755 "$PREFIX"
run install -d -m 0750 -o root -g "$SERVICE_USER" "$CONF_DIR"
run install -d -m 0750 -o "$SERVICE_USER" -g "$SERVICE_USER" "$CACHE_DIR"

step "virtual environment $VENV"
if [ -x "$PY" ]; then
    skip "venv exists"
else
    run python3 -m venv "$VENV"
fi
run "$PY" -m pip install --quiet --upgrade pip
# The service runs from its own copy of the source (a checkout under /home is hidden from it by
# ProtectHome=yes), installed editable so the models/ manifest next to the package is found.
step "source copy in $APP_SRC"
if [ "$SRC_DIR" = "$APP_SRC" ]; then
    skip "installing from $APP_SRC itself"
else
    run rm -rf "$APP_SRC.new"
    run install -d -m 0755 "$APP_SRC.new"
    if [ "$DRY_RUN" = 1 ]; then
        printf '+ tar -C %q %s -cf - . | tar -C %q -xf -\n' "$SRC_DIR" "${TAR_EXCLUDES[*]}" "$APP_SRC.new"
    else
        tar -C "$SRC_DIR" "${TAR_EXCLUDES[@]}" -cf - . | tar -C "$APP_SRC.new" -xf -
    fi
    run rm -rf "$APP_SRC"
    run mv "$APP_SRC.new" "$APP_SRC"
fi
if [ -n "$EXTRAS" ]; then PKG="${APP_SRC}[${EXTRAS}]"; else PKG="$APP_SRC"; fi
run "$PY" -m pip install --upgrade --editable "$PKG"

if is_jetson; then
    step "onnxruntime-gpu for Jetson (CUDA + TensorRT) from $ORT_INDEX"
    # PyPI's aarch64 onnxruntime is CPU-only and shares the 'onnxruntime' module with
    # onnxruntime-gpu: remove it, then (re)install the GPU build over the same files.
    run "$PY" -m pip uninstall --yes onnxruntime
    run "$PY" -m pip install --no-deps --force-reinstall --index-url "$ORT_INDEX" onnxruntime-gpu
    run "$PY" -c "import onnxruntime as ort; p = ort.get_available_providers(); print(p); \
assert 'CUDAExecutionProvider' in p, 'onnxruntime-gpu has no CUDA provider'"
else
    skip "not a Jetson: CPU onnxruntime from PyPI"
fi

step "configuration in $CONF_DIR"
if [ -f "$SRC_DIR/jetson/config.$PROFILE.toml" ]; then
    write_new "$CONF_DIR/config.toml" 0640 "$SERVICE_USER" < "$SRC_DIR/jetson/config.$PROFILE.toml"
else
    write_new "$CONF_DIR/config.toml" 0640 "$SERVICE_USER" <<EOF
# edge-runtime configuration (written by install.sh); see the README for every key.
[device]
profile = "$PROFILE"

[paths]
home = "$CACHE_DIR"

[server]
host = "127.0.0.1"
port = 8080
EOF
fi
write_new "$CONF_DIR/edge-runtime.env" 0640 "$SERVICE_USER" <<'EOF'
# EDGE_RUNTIME_<SECTION>__<KEY>=value overrides the config file, e.g.:
# EDGE_RUNTIME_SCHEDULER__BUDGET_MS=150
# EDGE_RUNTIME_SERVER__TOKEN=change-me     (required when server.host is not loopback)
# EDGE_RUNTIME_CLOUD__ENDPOINT=tcp://gateway.example:5555
EOF

step "systemd units in $UNIT_DIR"
run install -m 0644 "$SRC_DIR/jetson/edge-runtime.service" "$UNIT_DIR/edge-runtime.service"
if [ "$WITH_CLOUD" = 1 ]; then
    run install -m 0644 "$SRC_DIR/jetson/edge-cloud.service" "$UNIT_DIR/edge-cloud.service"
fi

if [ "$SKIP_MODELS" = 1 ]; then
    step "models"; skip "--skip-models"
else
    step "models (pulled and built once into $CACHE_DIR; nothing downloads at run time)"
    for action in pull build; do
        run runuser -u "$SERVICE_USER" -- env XDG_CACHE_HOME=/var/cache \
            EDGE_RUNTIME_CONFIG="$CONF_DIR/config.toml" "$VENV/bin/edge-runtime" models "$action"
    done
fi

step "enable and start"
run systemctl daemon-reload
services=(edge-runtime)
[ "$WITH_CLOUD" = 1 ] && services+=(edge-cloud)
if [ "$NO_START" = 1 ]; then
    run systemctl enable "${services[@]}"
else
    for svc in "${services[@]}"; do
        if systemctl is-active --quiet "$svc" 2>/dev/null; then
            # Already running: restart so the new package and unit take effect.
            run systemctl enable "$svc"
            run systemctl restart "$svc"
        else
            run systemctl enable --now "$svc"
        fi
    done
fi

step "done: 'systemctl status edge-runtime' shows readiness; 'journalctl -u edge-runtime -f' the log"
