"""``ENGINE = "powercontext.core.postgresql"``: Django's PostgreSQL backend whose statements,
commits, rollbacks, server-side cursors' fetches, connection set-up and health checks wait on the
server no longer than the current answer limit (``powercontext.core.db_faults.bounded``).
Everything else is Django's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from django.db import OperationalError
from django.db.backends.postgresql import base

from powercontext.core import db_faults


class _BoundedServerCursor:
    """A server-side (named) cursor whose FETCH and CLOSE, sent by the driver past the execute
    wrappers, wait on the server no longer than the answer limit; the rest is the cursor's."""

    def __init__(self, cursor: Any, socket: Callable[[], int | None]) -> None:
        self._cursor = cursor
        self._socket = socket

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)

    def fetchone(self) -> Any:
        with db_faults.bounded(self._socket):
            return self._cursor.fetchone()

    def fetchmany(self, size: int = 0) -> Any:
        with db_faults.bounded(self._socket):
            return self._cursor.fetchmany(size)

    def fetchall(self) -> Any:
        with db_faults.bounded(self._socket):
            return self._cursor.fetchall()

    def __iter__(self) -> Iterator[Any]:
        while rows := self.fetchmany(self._cursor.itersize):
            yield from rows

    def close(self) -> None:
        with db_faults.bounded(self._socket):
            self._cursor.close()


class DatabaseWrapper(base.DatabaseWrapper):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._health_check_cut = False
        # The outermost wrapper of every statement; a test's own execute_wrapper goes inside.
        self.execute_wrappers.append(self._bounded_execute)

    def _socket(self) -> int | None:
        connection = self.connection
        return None if connection is None or connection.closed else int(connection.pgconn.socket)

    def create_cursor(self, name: str | None = None) -> Any:
        cursor = super().create_cursor(name)
        return _BoundedServerCursor(cursor, self._socket) if name else cursor

    def _bounded_execute(
        self, execute: Callable[..., Any], sql: Any, params: Any, many: bool, context: dict[str, Any]
    ) -> Any:
        with db_faults.bounded(self._socket):
            return execute(sql, params, many, context)

    # COMMIT and ROLLBACK go to the driver directly, past the execute wrappers; so do the
    # statements that set a new connection up (its time zone). A server that hangs just then
    # would hold the request until it came back.
    def _commit(self) -> Any:
        with db_faults.bounded(self._socket):
            return super()._commit()

    def _rollback(self) -> Any:
        with db_faults.bounded(self._socket):
            return super()._rollback()

    def init_connection_state(self) -> None:
        with db_faults.bounded(self._socket):
            super().init_connection_state()

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        # Once a wait of this request went unanswered, a new connection (Django opens one by
        # itself to restore autocommit after a rollback that failed on the cut connection)
        # fails at once instead of spending the connect timeout on the same hung server.
        if db_faults.answer_already_missed():
            raise OperationalError("the database did not answer earlier in this request")
        return super().get_new_connection(conn_params)

    def is_usable(self) -> bool:
        # Django's health check (a SELECT 1 at a request's first query, and after an error) sends
        # its query past the execute wrappers: bound it too, in every process, since it should
        # never take long.
        with db_faults.bounded(self._socket, db_faults.health_check_limit()) as cut:
            usable = bool(super().is_usable())
        self._health_check_cut = cut.fired
        return usable

    def close_if_health_check_failed(self) -> None:
        super().close_if_health_check_failed()
        if self._health_check_cut:
            # The server did not answer: fail now rather than spend the connect timeout on a
            # new connection to the same hung server within this request.
            self._health_check_cut = False
            raise OperationalError("the database did not answer the health check")
