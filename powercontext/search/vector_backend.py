"""Which vector search path serves this database, and whether pgvector is installed in it.

On PostgreSQL the operator's database may have the ``vector`` extension (pgvector) installed;
this module detects it, once per process and database, with one catalog query (``pg_extension``:
installed in this database, not merely available on the server). pgvector serves vector search
(``vector_pgvector``: exact, in SQL) when the extension is installed, its side tables are set up
(``rebuild_search_index`` creates and fills them; checked again on each use until they exist)
and ``POWERCONTEXT_VECTOR_SEARCH`` is ``auto``; otherwise the exact in-process path
(``vector_inprocess``) does, and reports say why.
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
PGVECTOR = "pgvector"

_detected: dict[tuple[str, str, str, str], str | None] = {}
_set_up: set[tuple[str, str, str, str]] = set()  # databases whose pgvector side tables exist
_lock = threading.Lock()


@dataclass(frozen=True)
class VectorBackend:
    search: str  # the path vector search takes: IN_PROCESS or PGVECTOR
    pgvector: str | None  # the installed extension's version; None when absent or not PostgreSQL
    vendor: str
    pgvector_set_up: bool = False  # the side tables exist: vector writes are mirrored into them

    def as_dict(self) -> dict[str, object]:
        return {"search": self.search, "pgvector": self.pgvector_state()}

    def pgvector_state(self) -> str:
        if self.vendor != "postgresql":
            return "not applicable"
        if self.pgvector is None:
            return "absent"
        if not self.pgvector_set_up:
            return f"installed ({self.pgvector}), not set up: run rebuild_search_index"
        if self.search == PGVECTOR:
            return f"installed ({self.pgvector}), in use"
        return f"installed ({self.pgvector}), not used (POWERCONTEXT_VECTOR_SEARCH=in-process)"

    def describe(self) -> str:
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
    use = set_up and settings.POWERCONTEXT_VECTOR_SEARCH == "auto"
    return VectorBackend(PGVECTOR if use else IN_PROCESS, version, connection.vendor, set_up)


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
    from powercontext.search import vector_inprocess, vector_pgvector

    return vector_pgvector if vector_backend().search == PGVECTOR else vector_inprocess


def forget_detection() -> None:
    """Detect again on next use (after an operator installs or drops the extension)."""
    with _lock:
        _detected.clear()
        _set_up.clear()
