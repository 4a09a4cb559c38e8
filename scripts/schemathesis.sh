#!/usr/bin/env bash
# Property-based contract test: run Schemathesis against a live gunicorn server.
#
#   scripts/schemathesis.sh sqlite|postgresql
#
# Starts gunicorn on a free loopback port over a throwaway database (a fresh SQLite file, or a
# dedicated PostgreSQL database created and dropped here with TEST_POSTGRES_URL's credentials),
# migrates it, creates a reviewer token (so reviewer operations are exercised, not only their
# 401) and fuzzes every operation of the served contract with a fixed seed. Checks: no 5xx, only
# documented statuses, responses valid against the schema, invalid input rejected. Any failure
# fails the script. SCHEMATHESIS_MAX_EXAMPLES / SCHEMATHESIS_SEED tune the run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
VENDOR=${1:?usage: scripts/schemathesis.sh sqlite|postgresql}
MAX_EXAMPLES=${SCHEMATHESIS_MAX_EXAMPLES:-100}
SEED=${SCHEMATHESIS_SEED:-20260301}
CHECKS=not_a_server_error,status_code_conformance,response_schema_conformance,negative_data_rejection

WORK=$(mktemp -d "${TMPDIR:-/tmp}/powercontext-schemathesis.XXXXXX")
SERVER_PID=""
PG_DB=""

cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [ -n "$PG_DB" ]; then
    pg_admin "$PG_DB" drop >/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# Create or drop the dedicated PostgreSQL database (psycopg is a project dependency).
pg_admin() {
  "$PY" - "$TEST_POSTGRES_URL" "$1" "$2" <<'PYEOF'
import sys
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

url, name, action = sys.argv[1:4]
parts = urlsplit(url)
admin = urlunsplit(parts._replace(path="/postgres"))
with psycopg.connect(admin, autocommit=True) as conn:
    if action == "create":
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    else:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
print(urlunsplit(parts._replace(path="/" + name)))
PYEOF
}

case "$VENDOR" in
  sqlite)
    DB_URL="sqlite:///$WORK/schemathesis.sqlite3"
    ;;
  postgresql)
    : "${TEST_POSTGRES_URL:?the postgresql run needs TEST_POSTGRES_URL}"
    PG_DB="powercontext_schemathesis_$$"
    DB_URL=$(pg_admin "$PG_DB" create)
    ;;
  *)
    echo "unknown database: $VENDOR (sqlite|postgresql)" >&2
    exit 2
    ;;
esac

export DATABASE_URL="$DB_URL"
export POWERCONTEXT_DATA_DIR="$WORK"
export SECRET_KEY="schemathesis-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export DEBUG=false
unset CELERY_BROKER_URL CELERY_RESULT_BACKEND POWERCONTEXT_REQUIRE_TOKEN

"$PY" manage.py migrate --noinput -v 0
# As a deployment does: static storages that need a manifest find one (into $WORK/static).
"$PY" manage.py collectstatic --noinput -v 0
TOKEN=$("$PY" manage.py create_api_token schemathesis --reviewer | tail -n 1)
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$PORT"

"$(dirname "$PY")/gunicorn" powercontext.wsgi -b "127.0.0.1:$PORT" -w 2 --log-level warning \
  >"$WORK/gunicorn.log" 2>&1 &
SERVER_PID=$!

echo "=== Schemathesis ($VENDOR): $BASE, seed $SEED, max examples $MAX_EXAMPLES ==="
ST_BIN="$(cd "$(dirname "$PY")" && pwd)/schemathesis"
set +e
# From the throwaway directory: Schemathesis keeps a crash cache (.schemathesis/) in its working
# directory, which would otherwise replay old failures into the next run and land in the repo.
(cd "$WORK" && "$ST_BIN" run "$BASE/v1/openapi.json" \
  --url "$BASE" \
  --wait-for-schema 60 \
  --checks "$CHECKS" \
  --seed "$SEED" \
  --max-examples "$MAX_EXAMPLES" \
  --workers 1 \
  --header "Authorization: Bearer $TOKEN" \
  --report junit --report-junit-path "$WORK/junit.xml" \
  --no-color) 2>&1 | tee "$WORK/schemathesis.log"
STATUS=${PIPESTATUS[0]}
set -e

CASES=$(grep -A1 '^Test cases:' "$WORK/schemathesis.log" | grep -Eo '[0-9]+ generated' | grep -Eo '[0-9]+' | tail -n 1 || true)
echo "Schemathesis ($VENDOR): ${CASES:-unknown} test cases, exit $STATUS"
if [ "$STATUS" -ne 0 ]; then
  echo "--- gunicorn log ---" >&2
  tail -n 50 "$WORK/gunicorn.log" >&2 || true
  echo "FAIL: Schemathesis found contract violations on $VENDOR" >&2
  exit "$STATUS"
fi
