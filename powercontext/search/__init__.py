"""Full-text search over derived index rows: SQLite FTS5 and PostgreSQL full text.

Both backends index the same terms (``powercontext.search.analyzer``) as opaque, scope-keyed ASCII
tokens, so they agree on what matches; both rank by BM25 (FTS5's ``bm25``; on PostgreSQL the
same formula in SQL with per-scope statistics, ``bm25``). Scope and head filtering happen inside the one SQL statement that
ranks, and that statement also reads the head revision, so every hit of one search cites the
revision that statement saw.

Two indexes share this machinery: Memory (one row per active membership of each scope's current
head) and Experience (one row per approved, current Experience head, from its
``searchable_text``). Writers maintain rows in their own transaction; ``rebuild_*`` and
``verify_*`` recompute them from authoritative rows at any time.

Modules by role: ``engines`` (per-vendor storage and ranking), ``indexes`` (the two indexes and
their expected rows), ``queries`` (ranked reads), ``maintenance`` (writes inside the writers'
transactions), ``rebuild`` (rebuild and verify), ``embedding`` (the local model), ``vectors``
(the Memory vector index: exact in-process vector search and hybrid fusion) and ``pending``
(embedding after commit: signals, the embedder thread, waiting for the index). Callers use this
package's names.
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
    from powercontext.search.engines import (
        MAX_POSITION,
        MAX_POSITIONS_PER_LEXEME,
        Engine,
        PostgresEngine,
        SqliteEngine,
        engine,
    )
    from powercontext.search.indexes import EXPERIENCE_INDEX, INDEXES, MEMORY_INDEX, REBUILD_BATCH, Index
    from powercontext.search.maintenance import index_experience_head, index_memberships, unindex_memberships
    from powercontext.search.queries import (
        search_context,
        search_experience,
        search_memory,
    )
    from powercontext.search.rebuild import VerifyReport, count_expected, rebuild_index, verify_index
    from powercontext.search.vector_index import missing_vectors, rebuild_vectors, scopes_missing_vectors
    from powercontext.search.vectors import (
        available_modes,
        best_mode,
        hybrid_search_context,
        search_memory_mode,
        vector_search_memory,
    )

_EXPORTS: dict[str, tuple[str, str]] = {
    "EXPERIENCE_FAMILY": ("powercontext.core.recall", "EXPERIENCE_FAMILY"),
    "experience_heads": ("powercontext.core.recall", "recallable_experience_heads"),
    "MAX_POSITION": ("powercontext.search.engines", "MAX_POSITION"),
    "MAX_POSITIONS_PER_LEXEME": ("powercontext.search.engines", "MAX_POSITIONS_PER_LEXEME"),
    "Engine": ("powercontext.search.engines", "Engine"),
    "PostgresEngine": ("powercontext.search.engines", "PostgresEngine"),
    "SqliteEngine": ("powercontext.search.engines", "SqliteEngine"),
    "engine": ("powercontext.search.engines", "engine"),
    "EXPERIENCE_INDEX": ("powercontext.search.indexes", "EXPERIENCE_INDEX"),
    "INDEXES": ("powercontext.search.indexes", "INDEXES"),
    "MEMORY_INDEX": ("powercontext.search.indexes", "MEMORY_INDEX"),
    "REBUILD_BATCH": ("powercontext.search.indexes", "REBUILD_BATCH"),
    "Index": ("powercontext.search.indexes", "Index"),
    "index_experience_head": ("powercontext.search.maintenance", "index_experience_head"),
    "index_memberships": ("powercontext.search.maintenance", "index_memberships"),
    "unindex_memberships": ("powercontext.search.maintenance", "unindex_memberships"),
    "ExperienceHit": ("powercontext.core.hits", "ExperienceHit"),
    "MemoryHit": ("powercontext.core.hits", "MemoryHit"),
    "search_context": ("powercontext.search.queries", "search_context"),
    "search_experience": ("powercontext.search.queries", "search_experience"),
    "search_memory": ("powercontext.search.queries", "search_memory"),
    "VerifyReport": ("powercontext.search.rebuild", "VerifyReport"),
    "count_expected": ("powercontext.search.rebuild", "count_expected"),
    "missing_vectors": ("powercontext.search.vector_index", "missing_vectors"),
    "rebuild_index": ("powercontext.search.rebuild", "rebuild_index"),
    "rebuild_vectors": ("powercontext.search.vector_index", "rebuild_vectors"),
    "scopes_missing_vectors": ("powercontext.search.vector_index", "scopes_missing_vectors"),
    "verify_index": ("powercontext.search.rebuild", "verify_index"),
    "available_modes": ("powercontext.search.vectors", "available_modes"),
    "best_mode": ("powercontext.search.vectors", "best_mode"),
    "hybrid_search_context": ("powercontext.search.vectors", "hybrid_search_context"),
    "search_memory_mode": ("powercontext.search.vectors", "search_memory_mode"),
    "vector_search_memory": ("powercontext.search.vectors", "vector_search_memory"),
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
    "search_experience",
    "search_memory",
    "scopes_missing_vectors",
    "search_memory_mode",
    "unindex_memberships",
    "vector_search_memory",
    "verify_index",
]
