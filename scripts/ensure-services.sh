#!/usr/bin/env bash
# Install the Debian packages the tests use, when missing: redis-server (the cache tests
# start their own), PortAudio (sounddevice), espeak-ng and pocketsphinx-testdata (test
# speech), PulseAudio (the virtual-microphone end-to-end test).
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v espeak-ng >/dev/null 2>&1 || need+=(espeak-ng)
command -v pulseaudio >/dev/null 2>&1 || need+=(pulseaudio pulseaudio-utils libasound2-plugins)
ldconfig -p 2>/dev/null | grep -q libportaudio || need+=(libportaudio2)
dpkg -s pocketsphinx-testdata >/dev/null 2>&1 || need+=(pocketsphinx-testdata)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian packages for the tests: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
  echo "missing Debian packages for the tests: ${need[*]} (sudo apt-get install ${need[*]})" >&2
  exit 1
fi
