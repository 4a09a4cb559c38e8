"""Full-text search over derived index rows: SQLite FTS5 and PostgreSQL full text.

Both backends index the same terms (``powercontext.analyzer``) as opaque, scope-keyed ASCII
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

from powercontext.hits import ExperienceHit, MemoryHit
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
from powercontext.search.queries import search_context, search_experience, search_memory
from powercontext.search.rebuild import (
    VerifyReport,
    count_expected,
    missing_vectors,
    rebuild_index,
    rebuild_vectors,
    scopes_missing_vectors,
    verify_index,
)
from powercontext.search.vectors import (
    available_modes,
    best_mode,
    hybrid_search_context,
    search_memory_mode,
    vector_search_memory,
)
from powercontext.selectors.artifacts import EXPERIENCE_FAMILY
from powercontext.selectors.artifacts import recallable_experience_heads as experience_heads

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
