"""One index maintenance run at a time: rebuilds and verifies serialize across processes.

Two rebuilds of the same rows at once delete and re-insert the same keys and one fails with a
duplicate key. ``maintenance_lock`` makes the second wait for the first (and say so):

- PostgreSQL: a session-level advisory lock (``pg_advisory_lock``), taken with no statement
  timeout (a rebuild waits as long as the other runs) and released at the end, or by the server
  when the connection dies;
- SQLite: an exclusive ``flock`` on a file next to the database. Not an exclusive transaction:
  a rebuild commits scope by scope (durable transactions, which cannot nest inside one), and
  SQLite only ever runs on one host, where a file lock is the cross-process lock.

While held, the ``rebuild`` heartbeat row says a rebuild is in progress (``/health/detail``,
``powercontext_rebuild_in_progress``).
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import connection, transaction

from powercontext.core import heartbeat

ADVISORY_KEY = 0x5043_4958  # "PCIX": one lock for all index maintenance


@contextmanager
def maintenance_lock(on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the maintenance lock for the block; ``on_wait`` is called once, before waiting, when
    another run holds it (a command says so instead of looking hung)."""
    if connection.vendor == "postgresql":
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_lock(%s)", [ADVISORY_KEY])
                if not cursor.fetchone()[0]:
                    if on_wait is not None:
                        on_wait()
                    cursor.execute("SET LOCAL statement_timeout = 0")
                    cursor.execute("SET LOCAL lock_timeout = 0")
                    cursor.execute("SELECT pg_advisory_lock(%s)", [ADVISORY_KEY])
        try:
            with heartbeat.holding(heartbeat.REBUILD):
                yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [ADVISORY_KEY])
        return
    path = Path(str(connection.settings_dict["NAME"]) + ".maintenance-lock")
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            with heartbeat.holding(heartbeat.REBUILD):
                yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
