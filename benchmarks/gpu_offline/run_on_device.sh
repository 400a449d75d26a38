# On the offline NVIDIA machine (copied by make_payload.sh into the last .devN/ as run.sh):
# put the parts together, check and unpack them, build SmolLM2 (fp32 and fp16) from its
# GGUF there, run the GPU check with the image's python3 as it is, then `models check` of
# the fp16 variant on CUDA. Output in $OUT (the device tool's folder) when set.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT" /tmp/p
t0=$(date +%s)
cp .dev*/part* /tmp/p/ 2>/dev/null
sha=$(ls .dev*/sha | head -1)
[ "$(cat /tmp/p/part* | sha256sum | cut -c1-64)" = "$(cat "$sha")" ] && echo "payload sha ok" \
  || { echo "payload parts incomplete"; exit 3; }
cat /tmp/p/part* | python3 -c "import sys, tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall('/tmp')" \
  || { echo "payload did not unpack"; exit 3; }
export PYTHONPATH=/tmp/payload/site:$PWD XDG_CACHE_HOME=/tmp/payload/home PYTHONUNBUFFERED=1
SP=$(python3 -c "import site; print(site.getsitepackages()[0])")
LIBS=$(find "$SP/nvidia" -name 'lib*.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
export LD_LIBRARY_PATH="$LIBS:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import onnxruntime as o; print('onnxruntime', o.__version__, o.get_available_providers())"
for p in fp32 fp16; do
  python3 -m edge_runtime.cli models build smollm2-135m-instruct --precision $p 2>&1 | tail -1
done
echo "built at $(( $(date +%s) - t0 )) s"
GPU_CHECK_PYTHON=python3 bash scripts/gpu-check.sh 2>&1 | tee "$OUT/gpu-check.txt"
echo "gpu check rc ${PIPESTATUS[0]} at $(( $(date +%s) - t0 )) s"
P=benchmarks/data/fidelity_passages.txt
for args in "" "--text $P"; do
  timeout 120 python3 -m edge_runtime.cli models check smollm2-135m-instruct --precision fp16 \
    --provider cuda $args --json 2>>"$OUT/checks.err" | tee -a "$OUT/checks.jsonl"
done
echo "all done in $(( $(date +%s) - t0 )) s"
