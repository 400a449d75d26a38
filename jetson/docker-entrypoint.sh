#!/bin/sh
# Container entrypoint: make sure the models are present (verified by sha256; built once into
# the cache volume), then run the command. With MODELS_AT_BUILD=1 images this only verifies
# (offline: `models pull` downloads nothing that is already there and verified).
# Set EDGE_RUNTIME_SKIP_MODELS=1 to skip the check (e.g. a read-only volume you manage yourself).
set -eu
home="${EDGE_RUNTIME_PATHS__HOME:-/var/cache/edge-runtime}"
if [ "${EDGE_RUNTIME_SKIP_MODELS:-0}" != "1" ]; then
    if ! edge-runtime models pull; then
        cat >&2 <<EOF
docker-entrypoint: the models are not (all) in $home and could not be downloaded: is there
network? They are fetched once, verified and kept in the volume; nothing downloads at run
time. Ways out:
  - start the container once with network access, so the volume gets them;
  - use an image built with MODELS_AT_BUILD=1 (the default) and a named volume, which Docker
    seeds from the image (an empty bind mount on $home hides the image's models);
  - put the models into the volume yourself and set EDGE_RUNTIME_SKIP_MODELS=1.
EOF
        exit 78    # EX_CONFIG: a restart will not help until one of the above is done
    fi
    edge-runtime models build
fi
exec "$@"
