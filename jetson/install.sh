#!/usr/bin/env bash
# Install edge-runtime as a systemd service on a Jetson Orin Nano (JetPack 6) or any Linux box.
#
#   sudo jetson/install.sh              install or update, then start the service
#   jetson/install.sh --dry-run         print the steps, change nothing (no root needed)
#
# Idempotent: an existing user, complete venv, config or env file is kept; the package, the
# unit files and their drop-ins are updated; re-running after `git pull` is the update path.
set -euo pipefail

PREFIX=/opt/edge-runtime
# Where the GPU device nodes are looked for; the tests (tests/unit/test_systemd_units.py)
# point it at a scratch folder.
DEV_DIR="${EDGE_RUNTIME_DEV_DIR:-/dev}"
CONF_DIR=/etc/edge-runtime
UNIT_DIR=/etc/systemd/system
CACHE_DIR=/var/cache/edge-runtime
SERVICE_USER=edge-runtime
EXTRAS="build,tts,asr-whisper"
# NVIDIA's Jetson AI Lab index (JetPack 6, CUDA 12.6): onnxruntime-gpu with CUDA + TensorRT.
ORT_INDEX="https://pypi.jetson-ai-lab.io/jp6/cu126"
PROFILE=""
GPU=auto
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
  --gpu auto|yes|no   swap in onnxruntime-gpu from that index (auto: on a Jetson)
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
        --gpu) GPU="${2:?--gpu needs auto, yes or no}"; shift ;;
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
case "$GPU" in
    auto) if is_jetson; then GPU=yes; else GPU=no; fi ;;
    yes|no) ;;
    *) echo "install.sh: --gpu must be auto, yes or no" >&2; exit 2 ;;
esac
VENV="$PREFIX/venv"
APP_SRC="$PREFIX/src"
TAR_EXCLUDES=(--exclude=./.git --exclude=./.venv --exclude='*.egg-info' --exclude=__pycache__ \
              --exclude=.pytest_cache)
DROPIN_DIR="$UNIT_DIR/edge-runtime.service.d"

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
# Only groups that exist here (render is missing on some images); the unit names none itself,
# so a missing group cannot fail its start (216/GROUP): the service gets these memberships.
for group in video render audio; do
    if ! getent group "$group" >/dev/null; then
        skip "no $group group on this machine"
    else
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

# One script builds the venv here and in the container image: completion markers (a venv an
# earlier run left half-built is rebuilt), and with --gpu yes the atomic onnxruntime-gpu swap
# under jetson/constraints-jetson.txt (numpy<2; see jetson/README.md).
step "virtual environment $VENV (package, dependencies$( [ "$GPU" = yes ] && echo ", onnxruntime-gpu from $ORT_INDEX"))"
run bash "$APP_SRC/jetson/pyenv.sh" --venv "$VENV" --project "$APP_SRC" --extras "$EXTRAS" \
    --gpu "$GPU" --ort-index "$ORT_INDEX"

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

[cloud]
# Off until a gateway runs (edge-cloud on a server); an enabled link with none behind it keeps
# /healthz "degraded". Then: enabled = true and endpoint = "tcp://HOST:5555".
enabled = false
EOF
fi
write_new "$CONF_DIR/edge-runtime.env" 0640 "$SERVICE_USER" <<'EOF'
# EDGE_RUNTIME_<SECTION>__<KEY>=value overrides the config file, e.g.:
# EDGE_RUNTIME_SCHEDULER__BUDGET_MS=150
# EDGE_RUNTIME_SERVER__TOKEN=change-me     (required when server.host is not loopback)
# EDGE_RUNTIME_CLOUD__ENABLED=true                 (once a gateway runs, see the README)
# EDGE_RUNTIME_CLOUD__ENDPOINT=tcp://gateway.example:5555
EOF

step "systemd units in $UNIT_DIR"
run install -m 0644 "$SRC_DIR/jetson/edge-runtime.service" "$UNIT_DIR/edge-runtime.service"
# The unit's DevicePolicy=closed lets through the sound card; the GPU nodes of this machine
# (Jetson: /dev/nvmap, /dev/nvhost-*, /dev/nvgpu/*; a discrete GPU: /dev/nvidia*) are listed
# here, as found now: naming absent nodes in the unit would log a warning at every start.
gpu_nodes=()
for node in "$DEV_DIR"/nvmap "$DEV_DIR"/nvhost-* "$DEV_DIR"/nvgpu/*/* "$DEV_DIR"/host1x-fence \
            "$DEV_DIR"/nvidia*; do
    if [ -c "$node" ]; then gpu_nodes+=("$node"); fi
done
devices="# Written by jetson/install.sh (re-run it after a JetPack upgrade): the GPU device nodes
# found at install time. Local changes: \`systemctl edit edge-runtime\` (override.conf).
[Service]"
for node in ${gpu_nodes[@]+"${gpu_nodes[@]}"}; do
    devices+=$'\n'"DeviceAllow=$node rw"
done
if [ ${#gpu_nodes[@]} = 0 ]; then skip "no GPU device nodes in $DEV_DIR: the service gets none"; fi
run install -d -m 0755 "$DROPIN_DIR"
if [ "$DRY_RUN" = 1 ]; then
    printf '+ write %s:\n%s\n' "$DROPIN_DIR/50-devices.conf" "$devices" | sed '2,$s/^/    /'
else
    printf '%s\n' "$devices" > "$DROPIN_DIR/50-devices.conf"
    chmod 0644 "$DROPIN_DIR/50-devices.conf"
fi
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
