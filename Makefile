# pagecontext: every target sets up what it needs, idempotently.
#   make demo   serve the demo (page http://127.0.0.1:8000, assistant http://localhost:8001);
#               DEMO_ARGS="--page-port 8500 --assistant-port 8501" for other ports
#   make test   unit + e2e tests in real Chromium
#   make check  mypy --strict and ruff

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEBIAN_CHROMIUM := /usr/bin/chromium
CHROMIUM ?= $(DEBIAN_CHROMIUM)
SITE := build/site
WHEELS_DL := build/wheels
PYSRC := $(shell find pysrc -name '*.py' -not -path '*/__pycache__/*')
# The demo pages' own MicroPython modules, compiled into the site.
APPS := $(shell find web/demo -name '*.py')

export PAGECONTEXT_CHROMIUM ?= $(CHROMIUM)
export PYTHONPATH := $(CURDIR)/pysrc

.PHONY: all demo test unit e2e check setup browser clean acceptance-report fuzz bench FORCE

all: $(SITE)/.stamp

$(VENV)/.stamp: pyproject.toml requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet pip==26.3
	$(PY) -m pip install --quiet -r requirements-dev.txt
	# The project itself, editable: `.venv/bin/python -m pagecontext` and
	# `.venv/bin/pagecontext` then work from any directory.
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

node_modules/.stamp: package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	touch $@

# Third-party browser wheels, pinned by hash (pip refuses anything else).
$(WHEELS_DL)/.stamp: browser-wheels.txt $(VENV)/.stamp
	mkdir -p $(WHEELS_DL)
	$(PY) -m pip download --quiet --no-deps --require-hashes --only-binary=:all: \
	  --implementation cp --python-version 3.14 --abi cp314 \
	  --platform pyemscripten_2026_0_wasm32 --platform any \
	  -r browser-wheels.txt -d $(WHEELS_DL)
	touch $@

# Everything the browser loads, assembled into one folder the server serves, with the
# workers' boot snapshot (made by Node.js from the same files).
SNAPSHOT_JS := web/make-snapshot.mjs web/snapshot.mjs
# The list of those sources, rewritten only when it changes: a file deleted (or added)
# makes the site out of date too, which the files' own times cannot.
build/sources.txt: FORCE
	@mkdir -p build
	@echo "$(PYSRC) $(APPS)" | cmp -s - $@ || echo "$(PYSRC) $(APPS)" > $@
FORCE:
$(SITE)/.stamp: $(VENV)/.stamp node_modules/.stamp $(WHEELS_DL)/.stamp $(PYSRC) $(APPS) build/sources.txt pyproject.toml $(SNAPSHOT_JS)
	@# The stamp is make's, not the assembly's: out of the earlier site before it is
	@# replaced, so that assemble does not name it as a file put there since.
	rm -f $@
	$(PY) -m pagecontext assemble --out $(SITE) --wheels $(WHEELS_DL)
	touch $@

setup: $(SITE)/.stamp browser

# Debian's Chromium drives the e2e tests (Playwright cannot download browsers here).
# An empty PAGECONTEXT_CHROMIUM means Playwright's own Chromium: nothing to install.
# Debian's is installed (as root) only when it is the one asked for.
browser:
	@if [ -n "$(PAGECONTEXT_CHROMIUM)" ] && [ ! -x "$(PAGECONTEXT_CHROMIUM)" ]; then \
	  if [ "$(PAGECONTEXT_CHROMIUM)" = "$(DEBIAN_CHROMIUM)" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium || exit 1; \
	  fi; \
	  if [ ! -x "$(PAGECONTEXT_CHROMIUM)" ]; then \
	    echo "Chromium not found at $(PAGECONTEXT_CHROMIUM): install it (as root, make installs Debian's at $(DEBIAN_CHROMIUM)) or set PAGECONTEXT_CHROMIUM" >&2; exit 1; \
	  fi; \
	fi

DEMO_ARGS ?=
demo: $(SITE)/.stamp
	$(PY) -m pagecontext demo $(DEMO_ARGS)

# The browser wheels too: a test runs the core in Pyodide beside CPython.
unit: $(VENV)/.stamp node_modules/.stamp $(WHEELS_DL)/.stamp
	$(PY) -m pytest tests -q

e2e: setup
	$(PY) -m pytest e2e -q

test: setup
	$(PY) -m pytest tests e2e -q

check: $(VENV)/.stamp
	$(PY) -m mypy
	MYPYPATH=pysrc:bench $(PY) -m mypy --strict bench/run.py bench/session.py bench/stream.py bench/results_file.py
	$(PY) -m ruff check pysrc tests e2e bench
	$(PY) -m ruff format --check pysrc tests e2e bench

clean:
	rm -rf build

# The acceptance scenarios' results, from the tests that prove them.
acceptance-report: setup
	$(PY) -m pytest tests e2e -q --acceptance-report build/acceptance.json
	@echo "wrote build/acceptance.json"

# The fuzzed core with 50,000 examples per property (make test runs 2,000), and the
# two sessions' state machine with 12,500 runs of 40 steps (make test runs 500).
fuzz: $(VENV)/.stamp
	PAGECONTEXT_FUZZ=1 $(PY) -m pytest tests/test_fuzz.py tests/test_session_machine.py -q

# Benchmarks in headless Chromium (bench/README.md); QUICK=1 for a reduced run.
bench: setup
	$(PY) bench/run.py $(if $(filter-out 0,$(QUICK)),--quick,) --out bench/results/latest.json
	$(PY) bench/session.py --out bench/results/session.json
	$(PY) bench/stream.py $(if $(filter-out 0,$(QUICK)),--quick,) --out bench/results/stream.json
