#!/bin/sh
# Container entrypoint: make sure the models are present (verified by sha256; built once into
# the cache volume), then run the command. With MODELS_AT_BUILD=1 images this only verifies.
# Set EDGE_RUNTIME_SKIP_MODELS=1 to skip the check (e.g. a read-only volume you manage yourself).
set -eu
if [ "${EDGE_RUNTIME_SKIP_MODELS:-0}" != "1" ]; then
    edge-runtime models pull
    edge-runtime models build
fi
exec "$@"
