"""Which vector search path serves this database, and whether pgvector is installed in it.

Vector search is exact (``powercontext.search.vectors``) and by default in process
(``vector_inprocess``: a cached per-scope matrix), on both databases: that measured fastest.
A database's own path is used when ``POWERCONTEXT_VECTOR_SEARCH`` asks for it:

- ``sqlite-vec``: on SQLite, when ``powercontext.db.sqlite3`` loaded sqlite-vec into the
  connection (``vector_sqlitevec``; docs/retrieval.md "sqlite-vec on SQLite");
- ``pgvector``: on PostgreSQL, when the operator's database has the ``vector`` extension installed
  (detected once per process and database with one catalog query, ``pg_extension``: installed in
  this database, not merely available on the server) and its side tables are set up
  (``vector_pgvector``; ``rebuild_search_index`` or ``migrate`` creates and fills them; checked
  again on each use until they exist; docs/retrieval.md "pgvector path").

Otherwise (or when the asked-for path is not available) the in-process path serves, and reports
say why.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from django.conf import settings
from django.db import connection

from powercontext.hits import ExperienceHit

IN_PROCESS = "in-process exact"
SQLITE_VEC = "sqlite-vec"
PGVECTOR = "pgvector"

_detected: dict[tuple[str, str, str, str], str | None] = {}
_set_up: set[tuple[str, str, str, str]] = set()  # databases whose pgvector side tables exist
_lock = threading.Lock()


@dataclass(frozen=True)
class VectorBackend:
    search: str  # the path vector search takes: IN_PROCESS, PGVECTOR or "sqlite-vec <version>"
    pgvector: str | None  # the installed extension's version; None when absent or not PostgreSQL
    vendor: str
    # SQLite: the sqlite-vec version loaded into the connection; None when not loaded
    sqlite_vec: str | None = None
    pgvector_set_up: bool = False  # the side tables exist: vector writes are mirrored into them

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
        if self.search == PGVECTOR:
            return f"installed ({self.pgvector}), in use"
        if settings.POWERCONTEXT_VECTOR_SEARCH == PGVECTOR and not self.pgvector_set_up:
            return f"installed ({self.pgvector}), not set up: run rebuild_search_index"
        set_up = "set up" if self.pgvector_set_up else "not set up"
        return (
            f"installed ({self.pgvector}), {set_up}, not used (POWERCONTEXT_VECTOR_SEARCH=pgvector uses it)"
        )

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
    if version is None:
        return VectorBackend(IN_PROCESS, None, connection.vendor)
    with _lock:
        set_up = key in _set_up
    if not set_up:
        from powercontext.search import vector_pgvector

        set_up = vector_pgvector.is_set_up()
        if set_up:
            with _lock:
                _set_up.add(key)
    # ``auto`` stays in process on PostgreSQL too: pgvector's exact scan made hybrid prepare ~1.9x
    # slower at 10k entries (docs/retrieval.md "pgvector path").
    use = set_up and settings.POWERCONTEXT_VECTOR_SEARCH == PGVECTOR
    return VectorBackend(PGVECTOR if use else IN_PROCESS, version, connection.vendor, pgvector_set_up=set_up)


class Ranker(Protocol):
    """One vector search path (see ``powercontext.search.vector_inprocess`` for the contract)."""

    def rank_memory(
        self, scope_id: str, model_id: str, query_vector: np.ndarray[Any, Any], limit: int
    ) -> tuple[int, list[tuple[int, float]]] | None: ...

    def rank_experience(
        self, scope_id: str, model_id: str, query_vector: np.ndarray[Any, Any], limit: int
    ) -> list[ExperienceHit]: ...


def ranker() -> Ranker:
    """The ranking functions of the path ``vector_backend()`` names. With the default setting
    that is the in-process path, decided without detection (this runs twice per hybrid prepare;
    a database with pgvector installed but not chosen must not cost a catalog query there)."""
    from powercontext.search import vector_inprocess, vector_pgvector

    if settings.POWERCONTEXT_VECTOR_SEARCH not in {SQLITE_VEC, PGVECTOR}:
        return vector_inprocess
    search = vector_backend().search
    if search == PGVECTOR:
        return vector_pgvector
    if search.startswith(SQLITE_VEC):
        from powercontext.search import vector_sqlitevec

        return vector_sqlitevec
    return vector_inprocess


def forget_detection() -> None:
    """Detect again on next use (after an operator installs or drops the extension)."""
    with _lock:
        _detected.clear()
        _set_up.clear()
