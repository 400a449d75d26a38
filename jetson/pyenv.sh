#!/usr/bin/env bash
# The daemon's Python environment: a venv, the package's dependencies, and on a Jetson
# NVIDIA's onnxruntime-gpu instead of PyPI's CPU-only onnxruntime. Used by install.sh and
# the Dockerfile (one mechanism for both).
#
#   jetson/pyenv.sh --venv DIR --project DIR [--extras LIST] [--gpu yes|no] [--ort-index URL]
#                   [--stage all|deps|project] [--python PYTHON3]
#
# --stage deps installs everything but the package itself (resolved from pyproject.toml
# alone, so a container layer keeps them across source changes); --stage project installs the
# package (editable, --no-deps); all (the default) does both.
#
# Complete or not at all: $VENV/.edge-runtime-deps is written once the dependencies are in,
# $VENV/.edge-runtime-complete once the package is; both are removed before anything changes.
# A venv with neither (an install that stopped part-way) is rebuilt from scratch.
#
# --gpu yes (JetPack 6): NVIDIA's onnxruntime-gpu wheels are built against numpy 1.x, so the
# dependencies resolve under constraints-jetson.txt (numpy<2). They are installed from the
# resolved list with --no-deps and without onnxruntime, so no package can pull PyPI's CPU
# onnxruntime over the GPU build. The swap is atomic: the GPU wheel (and the CPU wheel, for a
# roll-back) are downloaded first, and only then is the CPU build removed; a failed download
# or a GPU build without the CUDA provider keeps (or restores) the CPU build and says so.
# The venv's pip.conf then applies constraints-jetson.txt to every later `pip install`.
set -euo pipefail

VENV=""
PROJECT=""
EXTRAS=""
GPU=no
ORT_INDEX="https://pypi.jetson-ai-lab.io/jp6/cu126"
STAGE=all
PYTHON3=python3
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CONSTRAINTS="$HERE/constraints-jetson.txt"

while [ $# -gt 0 ]; do
    case "$1" in
        --venv) VENV="${2:?--venv needs a directory}"; shift ;;
        --project) PROJECT="${2:?--project needs a directory}"; shift ;;
        --extras) EXTRAS="${2?--extras needs a list}"; shift ;;
        --gpu) GPU="${2:?--gpu needs yes or no}"; shift ;;
        --ort-index) ORT_INDEX="${2:?--ort-index needs a URL}"; shift ;;
        --stage) STAGE="${2:?--stage needs all, deps or project}"; shift ;;
        --python) PYTHON3="${2:?--python needs an interpreter}"; shift ;;
        *) echo "pyenv.sh: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done
if [ -z "$VENV" ] || [ -z "$PROJECT" ]; then
    echo "pyenv.sh: --venv and --project are required" >&2; exit 2
fi
case "$GPU" in yes|no) ;; *) echo "pyenv.sh: --gpu must be yes or no" >&2; exit 2 ;; esac
case "$STAGE" in all|deps|project) ;; *) echo "pyenv.sh: --stage must be all, deps or project" >&2; exit 2 ;; esac

PY="$VENV/bin/python"
DEPS_DONE="$VENV/.edge-runtime-deps"
COMPLETE="$VENV/.edge-runtime-complete"
if [ -n "$EXTRAS" ]; then PKG="${PROJECT}[${EXTRAS}]"; else PKG="$PROJECT"; fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

say() { printf '   %s\n' "$*"; }
warn() { printf 'pyenv.sh: WARNING: %s\n' "$*" >&2; }
die() { printf 'pyenv.sh: %s\n' "$*" >&2; exit 1; }
vpip() { "$PY" -m pip "$@"; }
cuda_ok() {
    "$PY" -c 'import sys, onnxruntime as o; p = o.get_available_providers(); print("   providers:", p); sys.exit("CUDAExecutionProvider" not in p)'
}

make_venv() {
    if [ -f "$COMPLETE" ] || [ -f "$DEPS_DONE" ]; then
        say "venv $VENV complete, kept (updated in place)"
    elif [ -e "$VENV" ]; then
        warn "$VENV has no completion marker (an earlier install stopped part-way): rebuilding it"
        "$PYTHON3" -m venv --clear "$VENV"
    else
        "$PYTHON3" -m venv "$VENV"
    fi
    # Not complete until this run says so; the old guard would also block the resolve below.
    rm -f "$COMPLETE" "$DEPS_DONE" "$VENV/pip.conf"
    vpip install --quiet --upgrade pip
}

# resolve: the package's full dependency closure (name==version lines) into $WORK/deps.txt.
resolve() {
    local cons=()
    if [ "$GPU" = yes ]; then
        grep -v '^onnxruntime' "$CONSTRAINTS" > "$WORK/resolve-constraints.txt"
        cons=(-c "$WORK/resolve-constraints.txt")
    fi
    vpip install --quiet --dry-run --ignore-installed --report "$WORK/plan.json" \
        ${cons[@]+"${cons[@]}"} "$PKG"
    "$PY" - "$WORK/plan.json" > "$WORK/deps.txt" <<'PYEOF'
import json, sys
for item in json.load(open(sys.argv[1]))["install"]:
    if item.get("is_direct"):        # the package itself: --stage project installs it
        continue
    meta = item["metadata"]
    print(f"{meta['name']}=={meta['version']}")
PYEOF
}

drop_gpu_ort() {   # both own the `onnxruntime` module: never leave the two installed
    if vpip show --quiet onnxruntime-gpu >/dev/null 2>&1; then
        vpip uninstall --quiet --yes onnxruntime-gpu onnxruntime
    fi
}

install_cpu_ort() {   # install_cpu_ort WHEEL_OR_REQUIREMENT
    vpip install --quiet --no-deps "$1" || die "could not install the CPU onnxruntime ($1) either"
}

deps_gpu() {
    local cpu_req gpu_wheel="" cpu_wheel=""
    cpu_req="$(grep -i '^onnxruntime==' "$WORK/deps.txt" || true)"
    [ -n "$cpu_req" ] || cpu_req=onnxruntime
    grep -vi '^onnxruntime==' "$WORK/deps.txt" > "$WORK/deps-no-ort.txt"
    # 1. fetch both wheels before anything in the venv changes
    if vpip download --quiet --no-deps --index-url "$ORT_INDEX" --dest "$WORK/gpu" onnxruntime-gpu; then
        gpu_wheel="$(find "$WORK/gpu" -name 'onnxruntime_gpu-*.whl' | head -n 1)"
    fi
    if vpip download --quiet --no-deps --dest "$WORK/cpu" "$cpu_req"; then
        cpu_wheel="$(find "$WORK/cpu" -name 'onnxruntime-*.whl' | head -n 1)"
    fi
    # 2. everything else, never resolving onnxruntime again
    vpip install --quiet --no-deps -r "$WORK/deps-no-ort.txt"
    # 3. the swap
    if [ -n "$gpu_wheel" ]; then
        vpip uninstall --quiet --yes onnxruntime
        vpip install --quiet --no-deps --force-reinstall "$gpu_wheel"
        vpip install --quiet -c "$WORK/resolve-constraints.txt" "$gpu_wheel"   # its own deps
        if cuda_ok; then
            say "onnxruntime-gpu from $ORT_INDEX: $(basename "$gpu_wheel")"
            GPU_OK=1
            return
        fi
        warn "$(basename "$gpu_wheel") has no CUDA provider here; restoring the CPU onnxruntime"
        vpip uninstall --quiet --yes onnxruntime-gpu
        install_cpu_ort "${cpu_wheel:-$cpu_req}"
    elif vpip show --quiet onnxruntime-gpu >/dev/null 2>&1 && cuda_ok; then
        warn "cannot fetch onnxruntime-gpu from $ORT_INDEX; the installed onnxruntime-gpu is kept (not updated)"
        GPU_OK=1
        return
    else
        warn "cannot fetch onnxruntime-gpu from $ORT_INDEX (index down or moved? pass --ort-index)"
        drop_gpu_ort      # an installed one without CUDA (or broken) would shadow the CPU build
        vpip show --quiet onnxruntime >/dev/null 2>&1 || install_cpu_ort "${cpu_wheel:-$cpu_req}"
    fi
    warn "the daemon runs on the CPU onnxruntime (/healthz says degraded): re-run the install when the index is reachable"
}

guard() {   # later `pip install`s in this venv keep numpy<2 and cannot replace the GPU build
    install -m 0644 "$CONSTRAINTS" "$VENV/constraints-jetson.txt"
    cat > "$VENV/pip.conf" <<CONF
# Written by jetson/pyenv.sh: this venv runs NVIDIA's onnxruntime-gpu. See the constraints
# file: numpy stays < 2 and PyPI's CPU onnxruntime is refused (install with --no-deps, or
# re-run jetson/install.sh).
[global]
constraint = $VENV/constraints-jetson.txt
CONF
    say "later pip installs in $VENV follow $VENV/constraints-jetson.txt (pip.conf)"
}

GPU_OK=0
if [ "$STAGE" != project ]; then
    make_venv
    resolve
    if [ "$GPU" = yes ]; then
        deps_gpu
    else
        drop_gpu_ort
        vpip install --quiet --no-deps -r "$WORK/deps.txt"
    fi
    if [ "$GPU_OK" = 1 ]; then guard; fi
    date -u +%FT%TZ > "$DEPS_DONE"
else
    [ -f "$DEPS_DONE" ] || die "$VENV has no dependencies yet: run --stage deps first"
    rm -f "$COMPLETE"
fi
if [ "$STAGE" != deps ]; then
    vpip install --quiet --no-deps --editable "$PROJECT"
    date -u +%FT%TZ > "$COMPLETE"     # last: the venv is complete only now
    say "venv $VENV complete"
fi
