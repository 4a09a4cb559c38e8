"""Django's SQLite backend, on the driver that can load the sqlite-vec extension.

The standard library's ``sqlite3`` of the Python this service runs on may be built without
extension loading (pyenv's CPython is), so sqlite-vec cannot be loaded into its connections.
``pysqlite3`` (the ``pysqlite3-binary`` wheel: the same DB-API module, bundling a recent SQLite
with extension loading, FTS5 and JSON) can. It is used only when ``POWERCONTEXT_VECTOR_SEARCH``
is ``sqlite-vec`` (the only thing that needs it) and it is installed; otherwise — the default —
this backend is Django's on the standard library's driver, unchanged.

How: Django's backend binds its driver when its module is imported
(``from sqlite3 import dbapi2 as Database``), subclasses that module's ``Cursor`` and registers
its adapters and converters on it; ``creation`` imports ``sqlite3`` for test database copies. So
``django.db.backends.sqlite3`` is imported once with ``sys.modules["sqlite3"]`` pointing at
pysqlite3 and restored right after: every one of those bindings is then pysqlite3's, nothing else
in the process sees the swap, and Django's code is used unchanged. Risks: the swap only takes
effect if nothing imported Django's SQLite backend before this module (then the standard driver
stays bound; ``driver()`` says which one is bound and the SQLite test pass fails if sqlite-vec is
not in use); and a thread importing ``sqlite3`` for the first time during that one import would
get pysqlite3. Connections of this backend are never mixed with standard-library ones.

Each new connection loads sqlite-vec (``get_new_connection``), then turns extension loading off
again, so SQL can never load another library. When loading fails the connection works without it
and vector search stays in process (``powercontext.search.vector_backend``).
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from types import ModuleType
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

_DJANGO_BACKEND = "django.db.backends.sqlite3.base"


def _pysqlite3() -> ModuleType | None:
    if getattr(settings, "POWERCONTEXT_VECTOR_SEARCH", "auto") != "sqlite-vec":
        return None
    try:
        return importlib.import_module("pysqlite3")
    except ImportError:
        return None


def _import_django_backend(package: ModuleType | None) -> ModuleType:
    """Django's SQLite backend module, imported on ``package`` when one is given and the
    backend is not imported yet."""
    if package is None or _DJANGO_BACKEND in sys.modules:
        return importlib.import_module(_DJANGO_BACKEND)
    saved = {name: sys.modules.get(name) for name in ("sqlite3", "sqlite3.dbapi2")}
    sys.modules["sqlite3"] = package
    sys.modules["sqlite3.dbapi2"] = package.dbapi2
    try:
        return importlib.import_module(_DJANGO_BACKEND)
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


_django = _import_django_backend(_pysqlite3())
Database: Any = _django.Database


def driver() -> str:
    """The DB-API module Django's SQLite backend is bound to: ``pysqlite3`` or ``sqlite3``."""
    return "pysqlite3" if Database.__name__.startswith("pysqlite3") else "sqlite3"


_warned = False
_warn_lock = threading.Lock()


def _warn_once(message: str) -> None:
    global _warned
    with _warn_lock:
        if _warned:
            return
        _warned = True
    logger.warning(message)


def load_sqlite_vec(conn: Any) -> str | None:
    """Load sqlite-vec into a raw connection and return its version, or None when the driver
    cannot load extensions or the extension is missing or fails to load."""
    if not hasattr(conn, "enable_load_extension"):
        return None
    try:
        import sqlite_vec
    except ImportError:
        _warn_once("sqlite-vec is not installed: vector search runs in process")
        return None
    try:
        conn.enable_load_extension(True)
        try:
            sqlite_vec.load(conn)
        finally:
            conn.enable_load_extension(False)
        return str(conn.execute("SELECT vec_version()").fetchone()[0])
    except Database.Error:
        _warn_once("sqlite-vec failed to load: vector search runs in process")
        return None


class DatabaseWrapper(_django.DatabaseWrapper):  # type: ignore[misc, name-defined, unused-ignore]
    """Django's SQLite wrapper; each new connection has sqlite-vec loaded when it can be
    (``sqlite_vec_version``: its version, or None)."""

    sqlite_vec_version: str | None = None

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        conn = super().get_new_connection(conn_params)
        self.sqlite_vec_version = load_sqlite_vec(conn)
        return conn
