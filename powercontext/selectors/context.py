"""The prepare path's one read: Memory and approved-Experience candidates in one statement."""

from __future__ import annotations

from powercontext import search
from powercontext.selectors.experience import ExperienceSearchHit, experience_hit
from powercontext.selectors.memory import SearchResult, search_result


def context_candidates(
    *, scope_id: str, query: str, memory_limit: int, experience_limit: int
) -> tuple[SearchResult, list[ExperienceSearchHit]]:
    """Ranked Memory hits of the scope's current head (all citing the revision the statement
    saw) and ranked approved, current Experience heads, read in one snapshot."""
    memory_rows, experience_rows = search.search_context(
        scope_id, query, memory_limit=memory_limit, experience_limit=experience_limit
    )
    return search_result(memory_rows), [experience_hit(row) for row in experience_rows]
