# podtax — `make demo` and `make test` do all set-up themselves.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PKGS   := shared services/runner services/host_agent services/parser services/analyzer services/scheduler tools/kubesim
TOOLS  := sysbench stress-ng fio hdparm

.PHONY: all setup sysdeps demo test test-fast bench lint fmt clean docs

all: setup

$(BIN)/python:
	@$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get update -qq && apt-get install -y -qq python3-venv; \
	  else echo "python3-venv is missing: run 'sudo apt-get install python3-venv'"; exit 1; fi; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python requirements-dev.txt $(foreach p,$(PKGS),$(p)/pyproject.toml)
	$(BIN)/pip install -q $(foreach p,$(PKGS),-e $(p)) -r requirements-dev.txt
	@touch $@

setup: $(VENV)/.installed

# Benchmark tools from Debian packages; installed with apt when missing and we are root.
sysdeps:
	@missing=""; for t in $(TOOLS); do command -v $$t >/dev/null || command -v /usr/sbin/$$t >/dev/null || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing$$missing with apt-get"; \
	    apt-get install -y -qq $$missing >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq $$missing; }; \
	  else echo "missing benchmark tools:$$missing — install them with: sudo apt-get install$$missing"; exit 1; fi; \
	fi

demo: setup sysdeps
	$(BIN)/python -m podtax.demo

test: setup sysdeps
	$(BIN)/python -m pytest -q --durations=15

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow"

bench: setup sysdeps
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

lint: setup
	$(BIN)/ruff check .

fmt: setup
	$(BIN)/ruff format .

docs: setup
	$(BIN)/python -m podtax.events --markdown > docs/events.md
	$(BIN)/python -m podtax.config > docs/configuration.md

clean:
	rm -rf $(VENV) .pytest_cache .podtax
