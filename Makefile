# PowerContext developer commands. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# One stamp per requirements set: `make run` installs the runtime requirements only; the
# development targets install requirements-dev.txt (runtime + test and lint tools).
RUN_STAMP := $(VENV)/.installed-runtime-$(shell cat requirements.txt | sha256sum | cut -c1-16)
STAMP := $(VENV)/.installed-dev-$(shell cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-16)
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: help venv run test lint typecheck migrations-check bench worker

help: ## List the commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

$(RUN_STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	@rm -f $(VENV)/.installed-runtime-*
	@touch $(RUN_STAMP)

$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements-dev.txt
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP) $(RUN_STAMP)

venv: $(STAMP) ## Create the virtualenv and install the pinned runtime and development requirements

run: $(RUN_STAMP) ## Install runtime requirements, migrate, collect static files, serve on HOST:PORT (default 127.0.0.1:8000)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput -v0
	$(PY) manage.py runserver $(HOST):$(PORT)

test: $(STAMP) ## Run the whole test suite (DATABASE_URL picks the database; default SQLite)
	PY=$(PY) scripts/test.sh $(PYTEST_ARGS)

lint: $(STAMP) ## Lint, check formatting, the import direction (import-linter) and merge-conflict markers
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	scripts/no_conflict_markers.sh

typecheck: $(STAMP) ## mypy --strict on the pure modules (pyproject.toml lists them) and the hook
	PY=$(PY) scripts/typecheck.sh

migrations-check: $(STAMP) ## Fail when models and migrations disagree
	$(PY) manage.py makemigrations --check --dry-run

worker: $(RUN_STAMP) ## Run a Celery worker (needs CELERY_BROKER_URL)
	$(VENV)/bin/celery -A powercontext worker -l INFO

bench: $(STAMP) ## Run the benchmarks (see docs/benchmarks.md)
	PY=$(PY) scripts/bench.sh $(BENCH_ARGS)
