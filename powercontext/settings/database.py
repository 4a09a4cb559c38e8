"""The default database: PostgreSQL (service mode) from ``DATABASE_URL`` with bounded connect and
statement times, or the embedded SQLite file with its write-lock and cache settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from powercontext.core.private_files import private_sqlite_files, sqlite_file
from powercontext.settings.env import env_bool, env_int, private_files

# Django's PostgreSQL backend plus bounded waits on a hung server.
POSTGRESQL_ENGINE = "powercontext.core.postgresql"
# Runs of one statement text on one connection before psycopg prepares it (its own default).
PREPARE_THRESHOLD = 5


def database(url: str, data_dir: Path) -> dict[str, Any]:
    """``DATABASES["default"]`` for ``url`` (empty: the SQLite file in ``data_dir``)."""
    # Unset DATABASE_URL: a SQLite file in data_dir (the embedded default).
    # postgres://user:pass@host:port/name: PostgreSQL through psycopg 3 (service mode).
    if url:
        # Persistent connections (seconds; 0: one per request). A server that is stopped or hung
        # without closing its sockets holds a request on a persistent connection until gunicorn's
        # --timeout unless POWERCONTEXT_DB_ANSWER_TIMEOUT_MS bounds it (see below).
        _db = dj_database_url.parse(
            url,
            conn_max_age=env_int("POWERCONTEXT_DB_CONN_MAX_AGE", 60),
            conn_health_checks=True,
        )
        if _db["ENGINE"] not in {"django.db.backends.postgresql", "django.db.backends.sqlite3"}:
            raise ImproperlyConfigured("DATABASE_URL must be a postgres:// or sqlite:// URL")
        # Any SQLite file is private (0600, its -wal and -shm too), not only the default one.
        sqlite_path = sqlite_file(_db["NAME"]) if _db["ENGINE"] == "django.db.backends.sqlite3" else None
        if sqlite_path is not None:
            private_sqlite_files(sqlite_path, create=True)
    else:
        data_dir.mkdir(parents=True, exist_ok=True)
        _db = {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(data_dir / "powercontext.sqlite3"),
            "CONN_MAX_AGE": env_int("POWERCONTEXT_DB_CONN_MAX_AGE", 60),
        }
        private_files(data_dir, Path(_db["NAME"]))

    if _db["ENGINE"] == "django.db.backends.sqlite3":
        # Writers take the lock when the transaction begins (IMMEDIATE) and wait for it (busy
        # timeout) instead of failing with "database is locked" half way through; WAL lets readers
        # keep a consistent snapshot while one writer commits.
        _db.setdefault("OPTIONS", {})
        _db["OPTIONS"].update(
            {
                "transaction_mode": "IMMEDIATE",
                "timeout": float(os.environ.get("POWERCONTEXT_SQLITE_TIMEOUT", "30")),
                # Memory-mapped reads keep index pages hot between requests (the benchmark: p50
                # search at 100k entries 0.73 -> 0.39 ms on a cold connection). The page cache is
                # per connection, so per serving thread: 8 MiB, not 64, kept each worker 70-130 MiB
                # smaller after load at 100k with the same search, prepare and remember times
                # (docs/benchmarks.md, "The SQLite page cache").
                "init_command": (
                    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                    f"PRAGMA cache_size=-{int(os.environ.get('POWERCONTEXT_SQLITE_CACHE_MB', '8')) * 1024}; "
                    f"PRAGMA mmap_size={int(os.environ.get('POWERCONTEXT_SQLITE_MMAP_MB', '256')) * 1024 * 1024};"
                ),
            }
        )
        _db.setdefault("TEST", {})
        _db["TEST"].setdefault("NAME", str(data_dir / "test-powercontext.sqlite3"))
    if _db["ENGINE"] == "django.db.backends.postgresql":
        # A database that is down or hung fails a request within bounds instead of holding a worker:
        # connecting gives up after POWERCONTEXT_DB_CONNECT_TIMEOUT seconds (psycopg's minimum is
        # 2), a statement after POWERCONTEXT_DB_STATEMENT_TIMEOUT_MS and a wait for a row lock after
        # POWERCONTEXT_DB_LOCK_TIMEOUT_MS (0: no limit; e.g. for a long `migrate`). Values set in
        # DATABASE_URL's query string win. A server that hangs answers nothing, so no server-side
        # timeout fires: in a request, our backend gives up after POWERCONTEXT_DB_ANSWER_TIMEOUT_MS
        # (powercontext/core/db_faults.py). docs/operators.md "Database faults".
        _db["ENGINE"] = POSTGRESQL_ENGINE
        _db.setdefault("OPTIONS", {})
        _db["OPTIONS"].setdefault("connect_timeout", env_int("POWERCONTEXT_DB_CONNECT_TIMEOUT", 2, minimum=1))
        # Parameters travel apart from the statement (server-side binding), so a statement asked
        # again on the same connection is the same text, and psycopg prepares it once it has run
        # five times: PostgreSQL then stops planning it anew each time (a prepare's candidate query
        # spent ~1.6 ms of every run in the planner; prepare in process 1.3-1.6x faster, docs/
        # benchmarks.md). POWERCONTEXT_DB_PREPARED_STATEMENTS=false turns both off, e.g. behind a
        # pooler in transaction mode that does not carry prepared statements across connections.
        # It also stops server-side cursors held across transactions (Django's iterator() outside
        # a transaction declares them WITH HOLD), which such a pooler cannot carry either.
        if env_bool("POWERCONTEXT_DB_PREPARED_STATEMENTS", True):
            _db["OPTIONS"].setdefault("server_side_binding", True)
            _db["OPTIONS"].setdefault("prepare_threshold", PREPARE_THRESHOLD)
        else:
            _db["DISABLE_SERVER_SIDE_CURSORS"] = True
        for name, variable, default in (
            ("statement_timeout", "POWERCONTEXT_DB_STATEMENT_TIMEOUT_MS", 60000),
            ("lock_timeout", "POWERCONTEXT_DB_LOCK_TIMEOUT_MS", 2000),
        ):
            milliseconds = env_int(variable, default)
            if milliseconds and name not in str(_db["OPTIONS"].get("options", "")):
                _db["OPTIONS"]["options"] = (
                    f"{_db['OPTIONS'].get('options', '')} -c {name}={milliseconds}".strip()
                )
    return _db
