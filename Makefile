# Two commands: `make run` (the application with demo data) and `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
# the suite runs in this many processes (pytest-xdist), one test file per process at
# a time; each has its own test database, broker folder and worker (settings/test.py)
TEST_PROCESSES ?= 2
export HF_HUB_OFFLINE := 1
# mypy's incremental cache, kept per user rather than per checkout: a fresh clone on a
# machine that checked the project before takes ~10 s instead of ~65-90 s (mypy checks
# each cached module's hash, so a cache from another checkout or commit stays sound)
export MYPY_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/provenance/mypy

# the project's own modules, compiled before a run: where PYTHONDONTWRITEBYTECODE is set,
# every process (workers, gunicorn, the suite's children) would compile them at each start
SOURCES := provenance_site core documents retrieval citations audit evaluation bench scripts tests

.PHONY: install bytecode run test lint format bench services clean train-scorer

install: $(VENV)/.installed

# uv, torch first: the machine's local CPU build, not the registry's CUDA one
$(VENV)/.installed: pyproject.toml scripts/install.sh
	VENV=$(VENV) ./scripts/install.sh
	mkdir -p var/static  # STATIC_ROOT: WhiteNoise warns at every start while it is missing
	touch $@

bytecode: install
	$(PY) -m compileall -q -j 0 $(SOURCES)

run: install bytecode
	PORT=$(PORT) ./scripts/run.sh

services:
	./scripts/ensure_services.sh

test: install bytecode services
	$(VENV)/bin/mypy
	$(PY) -m pytest -n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install bytecode
	$(PY) bench/run.py

# refit the extractive generator's answer scorer (citations/generators/extractive/
# answer_scorer.json) and its report (evaluation/reports/answer_scorer.md)
train-scorer: install
	$(PY) manage.py train_answer_scorer

clean:
	rm -rf var/test-media var/test-broker-* var/test-audit-heads-* test-artifacts
