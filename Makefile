# PowerContext developer commands. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-16)
HOST ?= 127.0.0.1
PORT ?= 8000

PURE_MODULES := context_api/builder.py context_api/replay.py powercontext/analyzer.py review/diff.py \
	review/textmarks.py context_api/hooks/codex_user_prompt_submit.py

.PHONY: help venv run test lint typecheck migrations-check bench worker

help: ## List the commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements-dev.txt
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

venv: $(STAMP) ## Create the virtualenv and install pinned requirements

run: $(STAMP) ## Migrate and serve on 127.0.0.1:8000 (SQLite, Celery eager unless configured)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py runserver $(HOST):$(PORT)

test: $(STAMP) ## Run the whole test suite (DATABASE_URL picks the database; default SQLite)
	PY=$(PY) scripts/test.sh $(PYTEST_ARGS)

lint: $(STAMP) ## Lint and check formatting
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP) ## mypy --strict on the pure modules and the hook
	$(VENV)/bin/mypy --strict --follow-imports=silent $(PURE_MODULES)

migrations-check: $(STAMP) ## Fail when models and migrations disagree
	$(PY) manage.py makemigrations --check --dry-run

worker: $(STAMP) ## Run a Celery worker (needs CELERY_BROKER_URL)
	$(VENV)/bin/celery -A powercontext worker -l INFO

bench: $(STAMP) ## Run the benchmarks (see README "Benchmarks")
	PY=$(PY) scripts/bench.sh $(BENCH_ARGS)
