"""Search: the derived indexes of Memory and Experience, and the rankings read from them.

Three rooms, each importing only the ones below it (an import-linter contract, pyproject.toml):

- ``ranking``: hybrid fusion and the search modes, prepare's Memory ranking (``rerank``), the
  relevance floor (``relevance``);
- ``vectors``: the local embedding model and the vector index (exact search in process, its
  maintenance, the after-commit embedder);
- ``fulltext``: the analyzer, the full-text index on SQLite FTS5 or PostgreSQL, ranked reads, and
  BM25 (``fulltext.bm25``, the one module every BM25 figure comes from).

Above the rooms, this package's own modules wire them together: ``maintenance`` (index rows and
vectors inside the writers' transactions, and the embedder's signal after their commit),
``rebuild`` (rebuild and verify both indexes), ``locking`` (one rebuild or verify at a time),
``preload`` (a fresh worker's caches), ``tasks`` (the Celery tasks) and ``apps`` (the Django
app). ``lazy_numpy`` sits below the rooms that use numpy.

Both full-text backends index the same terms as opaque, scope-keyed ASCII tokens, so they agree
on what matches, and both rank by BM25. Scope and head filtering happen inside the one SQL
statement that ranks, and that statement also reads the head revision, so every hit of one
search cites the revision that statement saw. Writers maintain index rows in their own
transaction; ``rebuild_*`` and ``verify_*`` recompute them from authoritative rows at any time.

Callers outside search use this package's names below, or a room's module by its path.
"""

# This package is also a Django app, loaded before the model registry is ready, so its names are
# imported on first use (PEP 562) instead of at import time; type checkers see the plain imports.
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from powercontext.core.hits import ExperienceHit, MemoryHit
    from powercontext.core.recall import EXPERIENCE_FAMILY
    from powercontext.core.recall import recallable_experience_heads as experience_heads
    from powercontext.search.fulltext.engines import (
        MAX_POSITION,
        MAX_POSITIONS_PER_LEXEME,
        Engine,
        PostgresEngine,
        SqliteEngine,
        engine,
    )
    from powercontext.search.fulltext.indexes import (
        EXPERIENCE_INDEX,
        INDEXES,
        MEMORY_INDEX,
        REBUILD_BATCH,
        Index,
    )
    from powercontext.search.fulltext.queries import (
        search_context,
        search_context_counted,
        search_experience,
        search_memory,
    )
    from powercontext.search.maintenance import index_experience_head, index_memberships, unindex_memberships
    from powercontext.search.ranking.fusion import (
        available_modes,
        best_mode,
        hybrid_search_context,
        search_memory_mode,
    )
    from powercontext.search.rebuild import VerifyReport, count_expected, rebuild_index, verify_index
    from powercontext.search.vectors.queries import vector_search_memory
    from powercontext.search.vectors.vector_index import (
        missing_vectors,
        rebuild_vectors,
        scopes_missing_vectors,
    )

_EXPORTS: dict[str, tuple[str, str]] = {
    "EXPERIENCE_FAMILY": ("powercontext.core.recall", "EXPERIENCE_FAMILY"),
    "experience_heads": ("powercontext.core.recall", "recallable_experience_heads"),
    "ExperienceHit": ("powercontext.core.hits", "ExperienceHit"),
    "MemoryHit": ("powercontext.core.hits", "MemoryHit"),
    "MAX_POSITION": ("powercontext.search.fulltext.engines", "MAX_POSITION"),
    "MAX_POSITIONS_PER_LEXEME": ("powercontext.search.fulltext.engines", "MAX_POSITIONS_PER_LEXEME"),
    "Engine": ("powercontext.search.fulltext.engines", "Engine"),
    "PostgresEngine": ("powercontext.search.fulltext.engines", "PostgresEngine"),
    "SqliteEngine": ("powercontext.search.fulltext.engines", "SqliteEngine"),
    "engine": ("powercontext.search.fulltext.engines", "engine"),
    "EXPERIENCE_INDEX": ("powercontext.search.fulltext.indexes", "EXPERIENCE_INDEX"),
    "INDEXES": ("powercontext.search.fulltext.indexes", "INDEXES"),
    "MEMORY_INDEX": ("powercontext.search.fulltext.indexes", "MEMORY_INDEX"),
    "REBUILD_BATCH": ("powercontext.search.fulltext.indexes", "REBUILD_BATCH"),
    "Index": ("powercontext.search.fulltext.indexes", "Index"),
    "search_context": ("powercontext.search.fulltext.queries", "search_context"),
    "search_context_counted": ("powercontext.search.fulltext.queries", "search_context_counted"),
    "search_experience": ("powercontext.search.fulltext.queries", "search_experience"),
    "search_memory": ("powercontext.search.fulltext.queries", "search_memory"),
    "vector_search_memory": ("powercontext.search.vectors.queries", "vector_search_memory"),
    "missing_vectors": ("powercontext.search.vectors.vector_index", "missing_vectors"),
    "rebuild_vectors": ("powercontext.search.vectors.vector_index", "rebuild_vectors"),
    "scopes_missing_vectors": ("powercontext.search.vectors.vector_index", "scopes_missing_vectors"),
    "available_modes": ("powercontext.search.ranking.fusion", "available_modes"),
    "best_mode": ("powercontext.search.ranking.fusion", "best_mode"),
    "hybrid_search_context": ("powercontext.search.ranking.fusion", "hybrid_search_context"),
    "search_memory_mode": ("powercontext.search.ranking.fusion", "search_memory_mode"),
    "index_experience_head": ("powercontext.search.maintenance", "index_experience_head"),
    "index_memberships": ("powercontext.search.maintenance", "index_memberships"),
    "unindex_memberships": ("powercontext.search.maintenance", "unindex_memberships"),
    "VerifyReport": ("powercontext.search.rebuild", "VerifyReport"),
    "count_expected": ("powercontext.search.rebuild", "count_expected"),
    "rebuild_index": ("powercontext.search.rebuild", "rebuild_index"),
    "verify_index": ("powercontext.search.rebuild", "verify_index"),
}


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


__all__ = [
    "EXPERIENCE_FAMILY",
    "EXPERIENCE_INDEX",
    "INDEXES",
    "MAX_POSITION",
    "MAX_POSITIONS_PER_LEXEME",
    "MEMORY_INDEX",
    "REBUILD_BATCH",
    "Engine",
    "ExperienceHit",
    "Index",
    "MemoryHit",
    "PostgresEngine",
    "SqliteEngine",
    "VerifyReport",
    "available_modes",
    "best_mode",
    "count_expected",
    "engine",
    "experience_heads",
    "hybrid_search_context",
    "index_experience_head",
    "index_memberships",
    "missing_vectors",
    "rebuild_index",
    "rebuild_vectors",
    "search_context",
    "search_context_counted",
    "search_experience",
    "search_memory",
    "scopes_missing_vectors",
    "search_memory_mode",
    "unindex_memberships",
    "vector_search_memory",
    "verify_index",
]
