# Two commands: `make run` (the application with demo data) and `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
# the suite runs in this many processes (pytest-xdist), one test file per process at
# a time; each has its own test database, broker folder and worker (settings/test.py)
TEST_PROCESSES ?= 2
export HF_HUB_OFFLINE := 1

.PHONY: install run test lint format bench services clean

install: $(VENV)/.installed

# torch first: the machine's local CPU build, not the registry's CUDA one
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	mkdir -p var
	touch $@

run: install
	PORT=$(PORT) ./scripts/run.sh

services:
	./scripts/ensure_services.sh

test: install services
	$(VENV)/bin/mypy
	$(PY) -m pytest -n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install
	$(PY) bench/run.py

clean:
	rm -rf var/test-media var/test-broker-* var/test-audit-heads-* test-artifacts
