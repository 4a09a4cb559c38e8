"""Approved-Experience reads used by prepare (recall) and the API."""

from __future__ import annotations

from powercontext import search
from powercontext.core.hits import ExperienceHit


def experience_search(*, scope_id: str, query: str, limit: int) -> list[ExperienceHit]:
    """Ranked approved, current Experience heads of one scope (never pending, rejected,
    superseded or Skill content: only Experience heads have index rows), as the builder takes
    them (``powercontext.core.hits``: search returns the builder's own type)."""
    return search.search_experience(scope_id, query, limit)
