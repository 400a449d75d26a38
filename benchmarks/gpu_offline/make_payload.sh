#!/usr/bin/env bash
# The GPU check for an NVIDIA machine without a network whose transfers are capped (this
# workplace's device tool: 64 MiB a call, the working tree included): onnxruntime-gpu for
# its Python (CUDA provider pruned to one architecture), the project's packages its image
# lacks, Silero VAD and SmolLM2's GGUF, in one xz tar split into parts of PART bytes, each
# in .devN/ (git-ignored: add `/.dev*/` to .git/info/exclude); .dev<last>/ also holds
# run.sh (run_on_device.sh) and the sha256. Carry .dev0 ... .devN one call each (each
# command: `mkdir -p /tmp/p && cp .devK/part* /tmp/p/`), then `bash .devN/run.sh`.
#
#   bash benchmarks/gpu_offline/make_payload.sh      # PY=3.12 SM=90 PART=49000000
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-3.12}; SM=${SM:-90}; PART=${PART:-49000000}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
PLAT=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
PIP=(python -m pip --disable-pip-version-check -q)
mkdir -p "$W/payload/site" "$W/payload/home/edge-runtime/models"
"${PIP[@]}" download --no-deps --only-binary=:all: --python-version "$PY" --implementation cp \
  "${PLAT[@]}" -d "$W/whl" onnxruntime-gpu
(cd "$W/payload/site" && unzip -q "$W"/whl/onnxruntime_gpu-*.whl)
so="$W/payload/site/onnxruntime/capi/libonnxruntime_providers_cuda.so"
python benchmarks/gpu_offline/prune_fatbin.py "$so" "$so.pruned" --sm "$SM" && mv "$so.pruned" "$so"
"${PIP[@]}" install --target "$W/payload/site" --no-deps --only-binary=:all: \
  --python-version "$PY" --implementation cp "${PLAT[@]}" gguf pyzmq rapidfuzz diskcache
M=${XDG_CACHE_HOME:-$HOME/.cache}/edge-runtime/models
for m in silero-vad smollm2-135m-instruct; do
  mkdir -p "$W/payload/home/edge-runtime/models/$m"
  cp -a "$M/$m/files" "$W/payload/home/edge-runtime/models/$m/"
done
(cd "$W" && tar -c payload | xz -6 -T0 > payload.tar.xz)
rm -rf .dev[0-9]*
(cd "$W" && split -b "$PART" -d -a 1 payload.tar.xz part)
n=0
for f in "$W"/part*; do mkdir -p ".dev$n" && mv "$f" ".dev$n/"; n=$((n + 1)); done
last=".dev$((n - 1))"
sha256sum "$W/payload.tar.xz" | cut -c1-64 > "$last/sha"
cp benchmarks/gpu_offline/run_on_device.sh "$last/run.sh"
echo "$n parts in .dev0 ... $last; last: bash $last/run.sh" >&2
