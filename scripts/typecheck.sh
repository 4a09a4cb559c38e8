#!/usr/bin/env bash
# mypy --strict over the pure, strict and typed modules listed in pyproject.toml ([tool.powercontext]),
# the Django ones with django-stubs and djangorestframework-stubs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
mapfile -t modules < <("$PY" -c 'import tomllib; c = tomllib.load(open("pyproject.toml", "rb"))["tool"]["powercontext"]; print("\n".join(c["pure-modules"] + c["strict-modules"] + c["typed-modules"]))')
# The django-stubs plugin imports the settings: give it a throwaway data directory.
POWERCONTEXT_DATA_DIR=${POWERCONTEXT_DATA_DIR:-$PWD/data/typecheck} "$PY" -m mypy --strict --follow-imports=silent \
  "${modules[@]}"
