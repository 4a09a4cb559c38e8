#!/usr/bin/env bash
# A throwaway PostgreSQL server with pgvector, for the pgvector test pass and local trials.
#
#   scripts/pgvector_server.sh start   # init (first time) and start; prints the database URL
#   scripts/pgvector_server.sh stop    # stop it and delete its data directory
#   scripts/pgvector_server.sh url     # print the database URL
#
# The binaries (PostgreSQL 16 and pgvector's vector.so) come from the pgserver wheel in the
# virtualenv (requirements-dev.txt); its Python API is not used. The server listens on
# 127.0.0.1:${PGVECTOR_PORT:-5441} only, keeps its data in a temporary directory, and has a
# login role powercontext/powercontext (CREATEDB) and the vector extension created in template1,
# so every database created afterwards (Django's test database too) has it.
# As root (CI), the server runs as the postgres OS user (PostgreSQL refuses to run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
port=${PGVECTOR_PORT:-5441}
data=${PGVECTOR_DATA_DIR:-${TMPDIR:-/tmp}/powercontext-pgvector-${port}}
url="postgres://powercontext:powercontext@127.0.0.1:${port}/powercontext"

fail() { echo "FAIL: pgvector server: $*" >&2; exit 1; }

pginstall() {
  local pkg
  pkg=$("$PY" -c 'import importlib.util, os; s = importlib.util.find_spec("pgserver"); print(os.path.dirname(s.origin) if s and s.origin else "")' 2>/dev/null) \
    || fail "cannot run $PY"
  [ -n "$pkg" ] && [ -x "$pkg/pginstall/bin/postgres" ] \
    || fail "the pgserver wheel is not installed in $PY's environment (pip install -r requirements-dev.txt)"
  if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$pkg/pginstall/bin/postgres" 2>/dev/null; then
    # The postgres OS user cannot reach the virtualenv (a checkout under a private home):
    # run a world-readable copy of the binaries, laid out as in site-packages (they find their
    # libraries relative to bin/: ../lib and ../../../pgserver.libs).
    local copy="${data}.pginstall"
    if [ ! -x "$copy/pgserver/pginstall/bin/postgres" ]; then
      rm -rf "$copy" && mkdir -p "$copy/pgserver" && cp -a "$pkg/pginstall" "$copy/pgserver/" \
        && { [ ! -d "$pkg.libs" ] || cp -a "$pkg.libs" "$copy/"; } && chmod -R a+rX "$copy" \
        || fail "cannot copy the binaries to $copy"
    fi
    echo "$copy/pgserver/pginstall/bin"
    return
  fi
  echo "$pkg/pginstall/bin"
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || fail "running as root needs a postgres OS user"
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

psql_super() {  # psql as the superuser over the server's own socket directory
  as_owner "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$data" -p "$port" -U postgres "$@"
}

start() {
  bin=$(pginstall)
  if [ ! -s "$data/PG_VERSION" ]; then
    mkdir -p "$data"
    [ "$(id -u)" = 0 ] && chown postgres: "$data"
    chmod 700 "$data"
    as_owner "$bin/initdb" -D "$data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
      -E UTF8 --locale=C.UTF-8 >"$data.initdb.log" 2>&1 || { cat "$data.initdb.log" >&2; fail "initdb failed"; }
  fi
  if ! as_owner "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    as_owner "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
      -o "-p $port -k $data -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off" start >/dev/null \
      || { tail -n 20 "$data/server.log" >&2 || true; fail "the server did not start on port $port"; }
  fi
  psql_super -d postgres -tAc "SELECT 1 FROM pg_roles WHERE rolname = 'powercontext'" | grep -q 1 \
    || psql_super -d postgres -c "CREATE ROLE powercontext LOGIN CREATEDB PASSWORD 'powercontext'"
  psql_super -d template1 -c "CREATE EXTENSION IF NOT EXISTS vector"
  psql_super -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'powercontext'" | grep -q 1 \
    || psql_super -d postgres -c "CREATE DATABASE powercontext OWNER powercontext"
  psql_super -d powercontext -tAc "SELECT extversion FROM pg_extension WHERE extname = 'vector'" | grep -q . \
    || fail "the vector extension is not installed in database powercontext"
  echo "$url"
}

stop() {
  bin=$(pginstall)
  if [ -s "$data/PG_VERSION" ]; then
    as_owner "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$data" "$data.initdb.log" "${data}.pginstall"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) echo "$url" ;;
  *) echo "usage: $0 start|stop|url" >&2; exit 2 ;;
esac
