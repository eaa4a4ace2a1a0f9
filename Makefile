# Quick start: `make demo` runs the service with demo data; `make test` runs the whole suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test test-embedded test-wire wire-server lint bench bench-scale clean

$(STAMP): setup.py pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# `make demo PORT=9000` (or WSAPI_PORT=9000 make demo) serves on another port.
demo: $(STAMP)
	$(VENV)/bin/workspace-api demo $(if $(PORT),--port $(PORT))

# The whole suite twice: on the embedded store, then over a real MongoDB wire connection to a
# FerretDB (SQLite backend) that the suite builds and starts (tests/ferretdb/: needs Go 1.24 or
# later; .ci/run installs it where it is missing). Both tiers always run; the target
# fails when either fails. PYTEST_ARGS passes options to both, e.g. PYTEST_ARGS='-m "not browser"'.
# The embedded tier runs its test files in TEST_WORKERS processes (pytest-xdist, a file per
# worker at a time): most tests wait on sockets and subprocesses, so more workers than cores pay
# off (5 on 2 cores: 5.5 minutes, 4: 5.8). The wire tier runs in WIRE_TEST_WORKERS processes,
# each with a FerretDB of its own (tests/conftest.py): 3 on 2 cores (5 minutes; 2: over 6).
# 0 means one process.
TEST_WORKERS ?= 5
WIRE_TEST_WORKERS ?= 3
xdist = $(if $(filter 0 1,$(1)),-p no:xdist,-n $(1) --dist loadfile --no-loadscope-reorder)
test: $(STAMP)
	@status=0; \
	echo "== test tier: embedded =="; \
	env -u MONGODB_URI WSAPI_TEST_TIER=embedded $(PY) -m pytest $(call xdist,$(TEST_WORKERS)) $(PYTEST_ARGS) || status=1; \
	echo "== test tier: wire =="; \
	env -u MONGODB_URI WSAPI_TEST_TIER=wire $(PY) -m pytest $(call xdist,$(WIRE_TEST_WORKERS)) $(PYTEST_ARGS) || status=1; \
	exit $$status

test-embedded: $(STAMP)
	env -u MONGODB_URI WSAPI_TEST_TIER=embedded $(PY) -m pytest $(call xdist,$(TEST_WORKERS)) $(PYTEST_ARGS)

test-wire: $(STAMP)
	env -u MONGODB_URI WSAPI_TEST_TIER=wire $(PY) -m pytest $(call xdist,$(WIRE_TEST_WORKERS)) $(PYTEST_ARGS)

# The wire tier's database server (tests/ferretdb/), built now when its build is missing or
# older than its sources; the wire tier builds it too when it has to.
wire-server: $(STAMP)
	$(PY) -c "from tests import wire; print(wire.binary())"

# Benchmarks of the hot paths (bench/run.py, rows P1a..P10b, M1a, M1b and S1..S3): each figure against its
# baseline in the same run, one table of ratios, under 5 minutes on 2 cores.
bench: $(STAMP)
	$(PY) -m bench

# The API on the embedded SQLite store with 1,000,000 calls (bench/scale.py, rows L1..L25):
# pages, deep cursors, metrics, uploads, list deletes, prospect changes, do-not-call and memory
# at that size. The data is seeded once and cached in bench/.data/. `make bench` runs it too;
# `make bench-scale CALLS=100000` for a quick look.
bench: bench-scale
bench-scale: $(STAMP)
	$(PY) -m bench.scale $(if $(CALLS),--calls $(CALLS))

# The checks CI runs before the tests (also in .pre-commit-config.yaml).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
