#!/usr/bin/env bash
# mypy --strict over the pure, strict and typed modules listed in pyproject.toml ([tool.powercontext]),
# the Django ones with django-stubs and djangorestframework-stubs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
# A file under a listed directory is checked with that directory (mypy refuses a module twice).
mapfile -t modules < <("$PY" - <<'EOF'
import tomllib
c = tomllib.load(open("pyproject.toml", "rb"))["tool"]["powercontext"]
paths = list(dict.fromkeys(c["pure-modules"] + c["strict-modules"] + c["typed-modules"]))
dirs = [p for p in paths if not p.endswith(".py")]
print("\n".join(p for p in paths if not any(p.startswith(d + "/") for d in dirs)))
EOF
)
# The django-stubs plugin imports the settings: give it a throwaway data directory.
POWERCONTEXT_DATA_DIR=${POWERCONTEXT_DATA_DIR:-$PWD/data/typecheck} "$PY" -m mypy --strict --follow-imports=silent \
  "${modules[@]}"
