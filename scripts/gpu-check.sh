#!/usr/bin/env bash
# The GPU check: on any NVIDIA machine (x86 + CUDA 12, or a Jetson with JetPack 6), set up
# its own venv, install the GPU stack, build every engine and print one table (model, path,
# build s, latency p50, agreement with the CPU) plus the LLM graph's per-node placement.
#
#   bash scripts/gpu-check.sh            # from the repo root; extra args go to the config
#   GPU_CHECK_VENV=DIR                   # the venv (default .gpu-check-venv, reused)
#   GPU_CHECK_ORT_INDEX=URL              # onnxruntime-gpu's index on Jetson
#   GPU_CHECK_PYTHON=python3             # an interpreter that already holds the GPU stack and
#                                        # this project's needs (an offline machine): used as
#                                        # is, no venv made, nothing installed
#
# No GPU: one line, exit 77 ("skipped"), nothing installed. The check itself is bounded to
# 300 s (engines already built and packages already installed make a rerun quick).
set -euo pipefail
cd "$(dirname "$0")/.."

markers=${GPU_CHECK_MARKERS:-"/dev/nvidia0 /dev/nvgpu /etc/nv_tegra_release"}
found=""
for m in $markers; do [ -e "$m" ] && found="$m" && break; done
if [ -z "$found" ]; then
  echo "gpu-check: no NVIDIA GPU here (none of $markers); nothing to check"
  exit 77
fi

say() { echo "gpu-check: $*" >&2; }
if [ -n "${GPU_CHECK_PYTHON:-}" ]; then
  say "using $GPU_CHECK_PYTHON as it is (GPU_CHECK_PYTHON); installing nothing"
  exec timeout 300 "$GPU_CHECK_PYTHON" -m edge_runtime.cli doctor --gpu "$@"
fi

VENV=${GPU_CHECK_VENV:-.gpu-check-venv}
PY="$VENV/bin/python"
PIP=(timeout 600 "$PY" -m pip install --disable-pip-version-check -q)

if [ ! -f "$VENV/.complete" ]; then
  say "setting up $VENV (once)"
  rm -rf "$VENV"
  # system site packages: JetPack's tensorrt (python3-libnvinfer) lives there
  python3 -m venv --system-site-packages "$VENV"
  "${PIP[@]}" --upgrade pip
  "${PIP[@]}" -e .
  # two onnxruntime wheels cannot share a venv: the project's CPU one makes way for the GPU one
  "$PY" -m pip uninstall -y -q onnxruntime
  if [ -e /etc/nv_tegra_release ]; then
    # NVIDIA's JetPack 6 wheel is built against numpy 1.x
    "${PIP[@]}" "numpy<2" --index-url "${GPU_CHECK_ORT_INDEX:-https://pypi.jetson-ai-lab.io/jp6/cu126}" \
      --extra-index-url https://pypi.org/simple onnxruntime-gpu
  else
    "${PIP[@]}" onnxruntime-gpu
  fi
  "$PY" -c "import tensorrt" 2>/dev/null || "${PIP[@]}" tensorrt
  "${PIP[@]}" pycuda || { say "pycuda did not build; using cuda-python"; "${PIP[@]}" cuda-python; }
  touch "$VENV/.complete"
fi

exec timeout 300 "$PY" -m edge_runtime.cli doctor --gpu "$@"
