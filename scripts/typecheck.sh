#!/usr/bin/env bash
# mypy --strict over the pure and strict modules listed in pyproject.toml ([tool.powercontext]).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
mapfile -t modules < <("$PY" -c 'import tomllib; c = tomllib.load(open("pyproject.toml", "rb"))["tool"]["powercontext"]; print("\n".join(c["pure-modules"] + c["strict-modules"]))')
"$PY" -m mypy --strict --follow-imports=silent "${modules[@]}"
