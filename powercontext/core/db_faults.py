"""What a database error means for the caller, and bounded waits on a database that hangs.

``fault_of`` sorts an error into a fault a client can act on: the database refuses writes
(read-only), has no room left (full), or cannot be reached; every other error is not a fault of
the database's state. The error mapping answers each with a 503 and its own code
(``context_api.errors``).

A PostgreSQL server that is hung (stopped, swapped out, its disk stalled) keeps its sockets
open: a query sent to it waits forever, and a server-side ``statement_timeout`` cannot fire. In
a request, ``bounded`` arms a watchdog around each wait on the server; when the server has not
answered within the request's limit (``POWERCONTEXT_DB_ANSWER_TIMEOUT_MS``), the watchdog shuts
the connection's socket down, the waiting call fails at once with ``OperationalError`` and the
request answers 503. Outside requests (workers, commands) no limit applies unless one is set
with ``answer_limit``: a rebuild may legitimately run for minutes.
"""

from __future__ import annotations

import contextlib
import contextvars
import heapq
import itertools
import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings
from django.db import DatabaseError

logger = logging.getLogger("powercontext.database")

Fault = Literal["database_read_only", "database_full"]

# PostgreSQL SQLSTATEs: read_only_sql_transaction (a replica, default_transaction_read_only);
# disk_full. SQLite: its result codes, extended ones included (SQLITE_READONLY_DBMOVED, ...).
_PG_READ_ONLY = {"25006"}
_PG_FULL = {"53100"}
_SQLITE_READ_ONLY = "SQLITE_READONLY"
_SQLITE_FULL = "SQLITE_FULL"


def fault_of(exc: BaseException | None) -> Fault | None:
    """``database_read_only``/``database_full`` when ``exc`` (a Django database error, or the
    driver's error it wraps) says the database refuses writes or has no room; else ``None``."""
    if not isinstance(exc, DatabaseError):
        return None
    for error in (exc, exc.__cause__):
        sqlstate = getattr(error, "sqlstate", None)
        if sqlstate in _PG_READ_ONLY:
            return "database_read_only"
        if sqlstate in _PG_FULL:
            return "database_full"
        if isinstance(error, sqlite3.Error):
            name = str(getattr(error, "sqlite_errorname", ""))
            if name.startswith(_SQLITE_READ_ONLY):
                return "database_read_only"
            if name.startswith(_SQLITE_FULL):
                return "database_full"
    return None


# --- bounded waits ---------------------------------------------------------------------------


class _Scope:
    """One ``answer_limit`` block: its limit, and whether a wait inside it (or inside a block
    nested in it) was cut."""

    __slots__ = ("cut", "limit", "outer")

    def __init__(self, limit: float | None, outer: _Scope | None) -> None:
        self.limit = limit
        self.outer = outer
        self.cut = False

    def mark_cut(self) -> None:
        scope: _Scope | None = self
        while scope is not None:
            scope.cut = True
            scope = scope.outer


_scope: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar("db_answer_scope", default=None)


def request_limit() -> float | None:
    """The answer limit of a request (seconds; ``None``: none)."""
    ms = int(getattr(settings, "POWERCONTEXT_DB_ANSWER_TIMEOUT_MS", 0))
    return ms / 1000 if ms > 0 else None


def _current_limit() -> float | None:
    scope = _scope.get()
    return None if scope is None else scope.limit


def health_check_limit() -> float | None:
    """A connection health check's limit: the request's, else the configured answer limit."""
    return _current_limit() or request_limit()


def answer_already_missed() -> bool:
    """True inside an ``answer_limit`` block (a request) once a wait in it was cut: the server
    did not answer in time, so connecting to it again within the block would only add the
    connect timeout to a request that fails anyway (Django reconnects on its own, e.g. to
    restore autocommit after a failed rollback)."""
    scope = _scope.get()
    return scope is not None and scope.cut


@contextlib.contextmanager
def answer_limit(seconds: float | None) -> Iterator[None]:
    """Every wait on the server inside the block gives up after ``seconds`` (``None``: none)."""
    token = _scope.set(_Scope(seconds, _scope.get()))
    try:
        yield
    finally:
        _scope.reset(token)


class _Watchdog:
    """One thread per process that shuts down the socket of a connection whose wait ran past
    its deadline. Arming and disarming cost a lock and a heap push: nothing touches the server.

    Any number of request threads wait at once (gunicorn's threaded workers): one deadline heap,
    one entry per wait, each naming its own connection's socket."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._armed: dict[int, Callable[[], int | None]] = {}
        self._fired: set[int] = set()
        self._keys = itertools.count()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def arm(self, seconds: float, fd: Callable[[], int | None]) -> int:
        with self._cond:
            if self._thread is None or self._pid != os.getpid():  # a forked worker starts its own
                self._thread = threading.Thread(target=self._run, name="db-answer-watchdog", daemon=True)
                self._pid = os.getpid()
                self._heap, self._armed, self._fired = [], {}, set()
                self._thread.start()
            key = next(self._keys)
            self._armed[key] = fd
            heapq.heappush(self._heap, (time.monotonic() + seconds, key))
            # The thread sleeps until the earliest deadline it saw: only a deadline earlier than
            # that one needs to wake it. With one limit for every statement a new deadline is
            # the earliest only when nothing else is pending, so a busy worker's statements
            # mostly arm without a thread switch (the thread drops the disarmed ones when it
            # wakes).
            if self._heap[0][1] == key:
                self._cond.notify()
            return key

    def disarm(self, key: int) -> bool:
        """Forget ``key``; True when its deadline had passed and the socket was shut down."""
        with self._cond:
            self._armed.pop(key, None)
            if key in self._fired:
                self._fired.discard(key)
                return True
            return False

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][1] not in self._armed:
                    heapq.heappop(self._heap)  # disarmed in time
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, key = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                fd = self._armed.pop(key)
                self._fired.add(key)
                # Duplicated while the wait is still armed: its thread cannot disarm (it needs
                # the lock), so the connection is still open and the number still its socket's.
                # Once the lock is released that thread may close it and another thread's new
                # connection may get the same number; the duplicate still names the old socket.
                duplicate = _duplicate(fd)
            if duplicate is not None:
                _shut_down(duplicate)


def _duplicate(fd: Callable[[], int | None]) -> int | None:
    with contextlib.suppress(Exception):  # the connection may have closed meanwhile
        number = fd()
        if number is not None and number >= 0:
            return os.dup(number)
    return None


def _shut_down(duplicate: int) -> None:
    # Shutting the duplicate down ends the connection for the thread that waits on it (its poll
    # wakes, the driver reads end-of-file), while closing only the duplicate leaves the
    # descriptor the driver owns valid.
    try:
        sock = socket.socket(fileno=duplicate)
    except OSError:  # not a socket after all
        os.close(duplicate)
        return
    try:
        with contextlib.suppress(OSError):  # already closed by the server
            sock.shutdown(socket.SHUT_RDWR)
    finally:
        sock.close()


_watchdog = _Watchdog()


@dataclass
class Cut:
    """Whether the watchdog shut the connection down during a ``bounded`` block."""

    fired: bool = False


@contextlib.contextmanager
def bounded(fd: Callable[[], int | None], seconds: float | None = None) -> Iterator[Cut]:
    """Run the block (one wait on the server) under the current answer limit, or ``seconds``.

    ``fd`` returns the connection's socket descriptor (``None`` when closed). When the limit
    passes, the socket is shut down and the block's call fails with the driver's error; one
    line names the cause (never the query)."""
    cut = Cut()
    limit = seconds if seconds is not None else _current_limit()
    if limit is None:
        yield cut
        return
    key = _watchdog.arm(limit, fd)
    try:
        yield cut
    finally:
        if _watchdog.disarm(key):
            cut.fired = True
            scope = _scope.get()
            if scope is not None:
                scope.mark_cut()
            logger.warning("database did not answer within %.1f s: connection closed", limit)


class AnswerLimitMiddleware:
    """Bound every database wait of a request by ``POWERCONTEXT_DB_ANSWER_TIMEOUT_MS``."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        with answer_limit(request_limit()):
            return self.get_response(request)
