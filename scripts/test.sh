#!/usr/bin/env bash
# Run the whole suite: always on SQLite; then on PostgreSQL when TEST_POSTGRES_URL is set
# (with Redis/Celery and browser tests when their services are configured).
# POWERCONTEXT_TEST_STRICT=1 (CI) turns any missing database or service into a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}

run_pass() {
  local name=$1; shift
  echo "=== PowerContext test pass: ${name} ==="
  set +e
  "$@"
  local status=$?
  set -e
  if [ "$status" -eq 5 ]; then
    echo "FAIL: the ${name} pass collected no tests" >&2
    exit 1
  fi
  if [ "$status" -ne 0 ]; then
    echo "FAIL: the ${name} pass failed (exit ${status})" >&2
    exit "$status"
  fi
}

echo "=== PowerContext static checks ==="
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/lint-imports --no-cache
scripts/no_conflict_markers.sh
PY="$PY" scripts/typecheck.sh
env -u DATABASE_URL POWERCONTEXT_DATA_DIR="${POWERCONTEXT_TEST_DATA_DIR:-$PWD/data/test}" \
  "$PY" manage.py makemigrations --check --dry-run
# The documented production environment must pass Django's deployment checks.
(
  set -a
  . docs/production.env
  set +a
  env -u SECRET_KEY_FILE SECRET_KEY="$("$PY" -c 'import secrets; print(secrets.token_urlsafe(64))')" \
    "$PY" manage.py check --deploy --fail-level WARNING
)

run_pass sqlite env -u DATABASE_URL POWERCONTEXT_TEST_EXPECT_VENDOR=sqlite \
  POWERCONTEXT_DATA_DIR="${POWERCONTEXT_TEST_DATA_DIR:-$PWD/data/test}" \
  "$PY" -m pytest "$@"
run_pass "schemathesis sqlite" env PY="$PY" scripts/schemathesis.sh sqlite

if [ -n "${TEST_POSTGRES_URL:-}" ]; then
  # A postgres:// DATABASE_URL is service mode, which refuses to start without a SECRET_KEY;
  # the pass (and the gunicorn/celery/manage.py children it starts) share this one.
  test_secret_key=${SECRET_KEY:-$("$PY" -c 'import secrets; print(secrets.token_urlsafe(64))')}
  run_pass postgresql env DATABASE_URL="$TEST_POSTGRES_URL" POWERCONTEXT_TEST_EXPECT_VENDOR=postgresql \
    SECRET_KEY="$test_secret_key" \
    POWERCONTEXT_DATA_DIR="${POWERCONTEXT_TEST_DATA_DIR:-$PWD/data/test}" \
    "$PY" -m pytest "$@"
  run_pass "schemathesis postgresql" env PY="$PY" scripts/schemathesis.sh postgresql
elif [ "${POWERCONTEXT_TEST_STRICT:-0}" = "1" ]; then
  echo "FAIL: POWERCONTEXT_TEST_STRICT=1 but TEST_POSTGRES_URL is not set" >&2
  exit 1
else
  echo "NOTE: the PostgreSQL pass did not run (set TEST_POSTGRES_URL=postgres://...; .ci/run does)." >&2
fi
