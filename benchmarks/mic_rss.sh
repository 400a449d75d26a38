#!/bin/bash
# RSS of `edge-runtime serve` with voice.microphone off vs on, same config otherwise
# (wake word okay_nabu, cloud off), the microphone being a private PulseAudio null sink.
# Each run: wait for /healthz, one POST /v1/audio; with the loop on, "Okay Nabu. What time
# is it?" is also played into the virtual microphone. Then VmRSS/VmHWM of the daemon.
# Needs: pulseaudio pulseaudio-utils libportaudio2 curl; the voice models pulled.
#   benchmarks/mic_rss.sh            (from the checkout; PYTHON, PORT, EDGE_HOME to override)
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD
PY=${PYTHON:-python}
PORT=${PORT:-18391}
EDGE_HOME=${EDGE_HOME:-$HOME/.cache/edge-runtime}
W=$(mktemp -d)
trap 'kill $PA 2>/dev/null; rm -rf "$W"' EXIT
$PY - "$W" <<'PY'
import sys
import numpy as np
from tests.voice_fixtures import command_wav
from edge_runtime.audio.format import read_wav_file, write_wav
d = sys.argv[1]
a = read_wav_file(command_wav("Okay Nabu.", d))
b = read_wav_file(command_wav("what time is it", d))
write_wav(f"{d}/cmd.wav", b, 16000)
write_wav(f"{d}/wake_cmd.wav", np.concatenate([a, b, np.zeros(16000, np.float32)]), 16000)
PY
mkdir -p "$W/run"; chmod 700 "$W/run"
export HOME=$W XDG_RUNTIME_DIR=$W/run      # a private PulseAudio (cookie in HOME)
pulseaudio -n --daemonize=no --exit-idle-time=-1 -L module-native-protocol-unix \
  -L "module-null-sink sink_name=vspk rate=16000 channels=1" >/dev/null 2>&1 &
PA=$!
for _ in $(seq 50); do pactl info >/dev/null 2>&1 && break; sleep 0.1; done
for mode in false true; do
  $PY -m edge_runtime.cli serve --set paths.home="$EDGE_HOME" --set server.port="$PORT" \
     --set cloud.enabled=false --set voice.wake_word=okay_nabu --set voice.microphone=$mode \
     > "$W/serve_$mode.log" 2>&1 &
  PID=$!
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.5; done
  curl -s -o /dev/null -w "POST /v1/audio: HTTP %{http_code}\n" --data-binary @"$W/cmd.wav" \
    "http://127.0.0.1:$PORT/v1/audio"
  if [ $mode = true ]; then sleep 1; paplay --device=vspk "$W/wake_cmd.wav"; sleep 6; fi
  sleep 3
  echo "microphone=$mode: $(grep -E 'VmRSS|VmHWM' /proc/$PID/status | tr -s ' \t\n' ' ')"
  grep -E "microphone loop|wake word heard|voice turn" "$W/serve_$mode.log" | sed 's/^/  /'
  kill -TERM $PID; wait $PID
done
