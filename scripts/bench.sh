#!/usr/bin/env bash
# Run the benchmarks on a throwaway SQLite database, and on PostgreSQL when BENCH_POSTGRES_URL
# names a database that may be wiped. Results: bench-results/<vendor>.json.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export LOG_LEVEL=${LOG_LEVEL:-WARNING}
mkdir -p bench-results data/bench
rm -f data/bench/bench.sqlite3*
echo "=== SQLite ==="
env -u CELERY_BROKER_URL DATABASE_URL="sqlite:///$PWD/data/bench/bench.sqlite3" "$PY" manage.py migrate -v0
env -u CELERY_BROKER_URL DATABASE_URL="sqlite:///$PWD/data/bench/bench.sqlite3" "$PY" manage.py bench --json bench-results/sqlite.json "$@"
if [ -n "${BENCH_POSTGRES_URL:-}" ]; then
  echo "=== PostgreSQL ==="
  env -u CELERY_BROKER_URL DATABASE_URL="$BENCH_POSTGRES_URL" "$PY" manage.py migrate -v0
  env -u CELERY_BROKER_URL DATABASE_URL="$BENCH_POSTGRES_URL" "$PY" manage.py flush --noinput
  env -u CELERY_BROKER_URL DATABASE_URL="$BENCH_POSTGRES_URL" "$PY" manage.py bench --json bench-results/postgresql.json "$@"
else
  echo "NOTE: set BENCH_POSTGRES_URL=postgres://... (a database that may be wiped) to benchmark PostgreSQL too." >&2
fi
