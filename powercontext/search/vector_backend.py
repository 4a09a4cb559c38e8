"""Which vector search path serves this database, and whether pgvector is installed in it.

Vector search is exact (``powercontext.search.vectors``). On SQLite it runs in the database with
sqlite-vec (``vector_sqlitevec``) when ``powercontext.db.sqlite3`` loaded it into the connection
(only when ``POWERCONTEXT_VECTOR_SEARCH`` is ``sqlite-vec``: measured slower than the cached
in-process matrix, docs/retrieval.md "sqlite-vec on SQLite"); otherwise in process
(``vector_inprocess``). On
PostgreSQL the operator's database may have the ``vector`` extension (pgvector) installed; this
module detects it, once per process and database, with one catalog query (``pg_extension``:
installed in this database, not merely available on the server). A pgvector query path is not
implemented: pgvector is not packaged for the Debian release this service targets, so no such
path could be tested here, and an untested one is not shipped. When the extension is present,
reports say so and that the in-process path is still the one in use.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from django.conf import settings
from django.db import connection

from powercontext.search.queries import ExperienceSearchRow

IN_PROCESS = "in-process exact"
SQLITE_VEC = "sqlite-vec"

_detected: dict[tuple[str, str, str, str], str | None] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class VectorBackend:
    search: str  # the path vector search takes: IN_PROCESS, or "sqlite-vec <version>" on SQLite
    pgvector: str | None  # the installed extension's version; None when absent or not PostgreSQL
    vendor: str
    # SQLite: the sqlite-vec version loaded into the connection; None when not loaded
    sqlite_vec: str | None = None

    def as_dict(self) -> dict[str, object]:
        if self.vendor == "sqlite":
            return {
                "search": self.search,
                "pgvector": self.pgvector_state(),
                "sqlite_vec": self.sqlite_vec_state(),
            }
        return {"search": self.search, "pgvector": self.pgvector_state()}

    def sqlite_vec_state(self) -> str:
        if self.vendor != "sqlite":
            return "not applicable"
        if self.sqlite_vec is None:
            return "not loaded"
        used = "" if self.search.startswith(SQLITE_VEC) else ", not used"
        return f"loaded ({self.sqlite_vec}){used}"

    def pgvector_state(self) -> str:
        if self.vendor != "postgresql":
            return "not applicable"
        if self.pgvector is None:
            return "absent"
        return f"installed ({self.pgvector}), not used"

    def describe(self) -> str:
        if self.vendor == "sqlite":
            return f"vector search: {self.search}; sqlite-vec: {self.sqlite_vec_state()}"
        return f"vector search: {self.search}; pgvector: {self.pgvector_state()}"


def installed_pgvector_version() -> str | None:
    """The version of the ``vector`` extension installed in the current database, or None.

    The one catalog query of this module; everything else derives from its answer."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return None if row is None else str(row[0])


def _database_key() -> tuple[str, str, str, str]:
    settings = connection.settings_dict
    return (
        connection.vendor,
        str(settings.get("HOST") or ""),
        str(settings.get("PORT") or ""),
        str(settings.get("NAME") or ""),
    )


def vector_backend() -> VectorBackend:
    """The vector search path for the current database (detected once per process and database)."""
    if connection.vendor == "sqlite":
        # Loaded (or not) by powercontext.db.sqlite3 when the connection opened: no query.
        connection.ensure_connection()
        loaded = getattr(connection, "sqlite_vec_version", None)
        setting = settings.POWERCONTEXT_VECTOR_SEARCH
        # ``auto`` stays in process on SQLite: sqlite-vec ranked 17-21x slower than the cached
        # matrix at 10k entries (docs/retrieval.md "sqlite-vec on SQLite").
        use = loaded is not None and setting == SQLITE_VEC
        return VectorBackend(f"{SQLITE_VEC} {loaded}" if use else IN_PROCESS, None, "sqlite", loaded)
    if connection.vendor != "postgresql":
        return VectorBackend(IN_PROCESS, None, connection.vendor)
    key = _database_key()
    with _lock:
        known = key in _detected
        version = _detected.get(key)
    if not known:
        version = installed_pgvector_version()
        with _lock:
            _detected[key] = version
    return VectorBackend(IN_PROCESS, version, connection.vendor)


class Ranker(Protocol):
    """One vector search path (see ``powercontext.search.vector_inprocess`` for the contract)."""

    def rank_memory(
        self, scope_id: str, model_id: str, query_vector: np.ndarray[Any, Any], limit: int
    ) -> tuple[int, list[tuple[int, float]]] | None: ...

    def rank_experience(
        self, scope_id: str, model_id: str, query_vector: np.ndarray[Any, Any], limit: int
    ) -> list[ExperienceSearchRow]: ...


def ranker() -> Ranker:
    """The ranking functions of the path ``vector_backend()`` names."""
    from powercontext.search import vector_inprocess

    if connection.vendor == "sqlite" and vector_backend().search.startswith(SQLITE_VEC):
        from powercontext.search import vector_sqlitevec

        return vector_sqlitevec
    return vector_inprocess


def forget_detection() -> None:
    """Detect again on next use (after an operator installs or drops the extension)."""
    with _lock:
        _detected.clear()
