#!/usr/bin/env bash
# Benchmarks on a throwaway SQLite database, and on PostgreSQL when BENCH_POSTGRES_URL names a
# database that may be wiped. Each pass: the in-process sections (manage.py bench), then the
# HTTP section against gunicorn serving the same database (manage.py bench_http).
# Results: bench-results/<vendor>.json and bench-results/<vendor>-http.json.
# BENCH_SKIP_HTTP=1 skips the HTTP section, BENCH_SKIP_REVIEW=1 the review page and bulk approve,
# BENCH_SKIP_SQLITE=1 the SQLite pass (to run PostgreSQL alone).
# The HTTP section also serves the database without the model (POWERCONTEXT_EMBEDDINGS=false) on
# BENCH_HTTP_PORT+1 to compare hybrid with full text alone, and times the first prepare of
# BENCH_COLD_STARTS fresh one-worker gunicorns (default 3; 0 skips) on BENCH_HTTP_PORT+2.
# Then bench_feedback against the same gunicorn (BENCH_SKIP_FEEDBACK=1 skips it): prepare with
# 100,000 feedback rows vs none, and POST /v1/context/feedback at 8 clients. That gunicorn's
# feedback rate limit is BENCH_FEEDBACK_RATE per token and minute (default 1000000: the limit's
# count still runs, it never refuses).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export LOG_LEVEL=${LOG_LEVEL:-WARNING}
# The PostgreSQL pass is service mode, where tokens are required by default; the benchmarks call
# without one on a throwaway database.
export POWERCONTEXT_REQUIRE_TOKEN=${POWERCONTEXT_REQUIRE_TOKEN:-false}
# The PostgreSQL pass is service mode, which needs a SECRET_KEY; one throwaway key serves both.
export SECRET_KEY=${SECRET_KEY:-$("$PY" -c 'import secrets; print(secrets.token_urlsafe(64))')}
BENCH_HTTP_PORT=${BENCH_HTTP_PORT:-8765}
BENCH_WORKERS=${BENCH_WORKERS:-2}
BENCH_COLD_STARTS=${BENCH_COLD_STARTS:-3}
BENCH_FEEDBACK_RATE=${BENCH_FEEDBACK_RATE:-1000000}
FTS_PORT=$((BENCH_HTTP_PORT + 1))
COLD_PORT=$((BENCH_HTTP_PORT + 2))
mkdir -p bench-results data/bench

run_pass() {
  local name=$1 url=$2; shift 2
  echo "=== ${name} ==="
  env -u CELERY_BROKER_URL DATABASE_URL="$url" "$PY" manage.py migrate -v0
  env -u CELERY_BROKER_URL DATABASE_URL="$url" "$PY" manage.py flush --noinput
  env -u CELERY_BROKER_URL DATABASE_URL="$url" "$PY" manage.py bench --json "bench-results/${name}.json" "$@"
  if [ "${BENCH_SKIP_REVIEW:-0}" != "1" ]; then
    env -u CELERY_BROKER_URL DATABASE_URL="$url" "$PY" manage.py bench_review_page --json "bench-results/${name}-review-page.json"
    env -u CELERY_BROKER_URL DATABASE_URL="$url" "$PY" manage.py bench_bulk_approve --json "bench-results/${name}-bulk-approve.json"
    env -u CELERY_BROKER_URL DATABASE_URL="$url" "$PY" manage.py bench_review_queue --json "bench-results/${name}-review-queue.json"
    env -u CELERY_BROKER_URL DATABASE_URL="$url" "$PY" manage.py bench_review_near --json "bench-results/${name}-review-near.json"
  fi
  if [ "${BENCH_SKIP_HTTP:-0}" != "1" ]; then
    env -u CELERY_BROKER_URL DATABASE_URL="$url" POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE="$BENCH_FEEDBACK_RATE" \
      .venv/bin/gunicorn powercontext.wsgi -w "$BENCH_WORKERS" -b "127.0.0.1:${BENCH_HTTP_PORT}" --log-level warning &
    local server=$!
    env -u CELERY_BROKER_URL DATABASE_URL="$url" POWERCONTEXT_EMBEDDINGS=false .venv/bin/gunicorn powercontext.wsgi \
      -w "$BENCH_WORKERS" -b "127.0.0.1:${FTS_PORT}" --log-level warning &
    local fts_server=$!
    trap 'kill $server $fts_server 2>/dev/null || true' EXIT
    timeout 60 bash -c "until curl -sf http://127.0.0.1:${BENCH_HTTP_PORT}/health/ready >/dev/null; do sleep 0.2; done"
    timeout 60 bash -c "until curl -sf http://127.0.0.1:${FTS_PORT}/health/ready >/dev/null; do sleep 0.2; done"
    env DATABASE_URL="$url" "$PY" manage.py bench_http --url "http://127.0.0.1:${BENCH_HTTP_PORT}" \
      --fts-url "http://127.0.0.1:${FTS_PORT}" --cold-starts "$BENCH_COLD_STARTS" --cold-port "$COLD_PORT" \
      --json "bench-results/${name}-http.json" || { kill "$server" "$fts_server"; exit 1; }
    if [ "${BENCH_SKIP_FEEDBACK:-0}" != "1" ]; then
      env -u CELERY_BROKER_URL DATABASE_URL="$url" "$PY" manage.py bench_feedback \
        --url "http://127.0.0.1:${BENCH_HTTP_PORT}" --json "bench-results/${name}-feedback.json" \
        || { kill "$server" "$fts_server"; exit 1; }
    fi
    kill "$server" "$fts_server"; wait "$server" "$fts_server" 2>/dev/null || true
    trap - EXIT
  fi
}

# gunicorn serves the admin's static files through WhiteNoise from the collected directory.
"$PY" manage.py collectstatic --noinput -v0
if [ "${BENCH_SKIP_SQLITE:-0}" != "1" ]; then
  rm -f data/bench/bench.sqlite3*
  run_pass sqlite "sqlite:///$PWD/data/bench/bench.sqlite3" "$@"
fi
if [ -n "${BENCH_POSTGRES_URL:-}" ]; then
  run_pass postgresql "$BENCH_POSTGRES_URL" "$@"
else
  echo "NOTE: set BENCH_POSTGRES_URL=postgres://... (a database that may be wiped) to benchmark PostgreSQL too." >&2
fi
