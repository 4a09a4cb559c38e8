#!/usr/bin/env bash
# Run the whole suite: always on SQLite; then the vector and search tests again on SQLite with
# sqlite-vec (POWERCONTEXT_VECTOR_SEARCH=sqlite-vec) where requirements.txt installs its driver
# (Linux x86_64); then the whole suite on PostgreSQL when TEST_POSTGRES_URL is set (with
# Redis/Celery and browser tests when their services are configured); then the vector and search
# tests again on a PostgreSQL with pgvector (POWERCONTEXT_VECTOR_SEARCH=pgvector) when
# TEST_PGVECTOR_URL is set (scripts/pgvector_server.sh start prints one).
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

# The vector and search modules, run again on each database's own vector path (not the default).
VECTOR_TESTS=(
  tests/powercontext/test_sqlite_vec.py
  tests/powercontext/test_pgvector.py
  tests/powercontext/test_vector_backend.py
  tests/powercontext/test_vector_search.py
  tests/powercontext/test_experience_vectors.py
  tests/powercontext/test_embed_after_commit.py
  tests/powercontext/test_search_index.py
  tests/api/test_search.py
)
# The sqlite-vec pass: POWERCONTEXT_TEST_EXPECT_SQLITE_VEC=1 stops it unless the connections
# really are on pysqlite3 with sqlite-vec loaded (tests/conftest.py).
if [ "$(uname -s)/$(uname -m)" = "Linux/x86_64" ]; then
  run_pass sqlite-vec env -u DATABASE_URL POWERCONTEXT_TEST_EXPECT_VENDOR=sqlite \
    POWERCONTEXT_VECTOR_SEARCH=sqlite-vec POWERCONTEXT_TEST_EXPECT_SQLITE_VEC=1 \
    POWERCONTEXT_DATA_DIR="${POWERCONTEXT_TEST_DATA_DIR:-$PWD/data/test}" \
    "$PY" -m pytest "${VECTOR_TESTS[@]}"
elif [ "${POWERCONTEXT_TEST_STRICT:-0}" = "1" ]; then
  echo "FAIL: POWERCONTEXT_TEST_STRICT=1 but pysqlite3-binary has no wheel for $(uname -s)/$(uname -m)" >&2
  exit 1
else
  echo "NOTE: the sqlite-vec pass did not run (pysqlite3-binary is installed on Linux x86_64 only)." >&2
fi

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

# The pgvector pass: the vector/search modules only (not the whole suite), on a database with
# pgvector, POWERCONTEXT_VECTOR_SEARCH=pgvector (migrate sets the side tables up);
# POWERCONTEXT_TEST_EXPECT_PGVECTOR=1 makes a test fail unless vector search really takes the
# pgvector path, and runs the tests marked ``pgvector``.
if [ -n "${TEST_PGVECTOR_URL:-}" ]; then
  test_secret_key=${SECRET_KEY:-$("$PY" -c 'import secrets; print(secrets.token_urlsafe(64))')}
  run_pass pgvector env DATABASE_URL="$TEST_PGVECTOR_URL" POWERCONTEXT_TEST_EXPECT_VENDOR=postgresql \
    POWERCONTEXT_VECTOR_SEARCH=pgvector POWERCONTEXT_TEST_EXPECT_PGVECTOR=1 SECRET_KEY="$test_secret_key" \
    POWERCONTEXT_DATA_DIR="${POWERCONTEXT_TEST_DATA_DIR:-$PWD/data/test}" \
    "$PY" -m pytest "${VECTOR_TESTS[@]}"
elif [ "${POWERCONTEXT_TEST_STRICT:-0}" = "1" ]; then
  echo "FAIL: POWERCONTEXT_TEST_STRICT=1 but TEST_PGVECTOR_URL is not set" >&2
  exit 1
else
  echo "NOTE: the pgvector pass did not run (scripts/pgvector_server.sh start; set TEST_PGVECTOR_URL to the URL it prints)." >&2
fi
