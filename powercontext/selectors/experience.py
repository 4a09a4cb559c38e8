"""Approved-Experience reads used by prepare (recall) and the API."""

from __future__ import annotations

from dataclasses import dataclass

from powercontext import search


@dataclass(frozen=True)
class ExperienceSearchHit:
    family: str
    artifact_id: str
    revision: int
    situation: str
    action: str
    outcome: str
    lesson: str
    score: float


def experience_hit(row: search.ExperienceSearchRow) -> ExperienceSearchHit:
    return ExperienceSearchHit(
        family=row.family,
        artifact_id=row.artifact_id,
        revision=row.revision,
        situation=str(row.content.get("situation", "")),
        action=str(row.content.get("action", "")),
        outcome=str(row.content.get("outcome", "")),
        lesson=str(row.content.get("lesson", "")),
        score=row.score,
    )


def experience_search(*, scope_id: str, query: str, limit: int) -> list[ExperienceSearchHit]:
    """Ranked approved, current Experience heads of one scope (never pending, rejected,
    superseded or Skill content: only Experience heads have index rows)."""
    return [experience_hit(row) for row in search.search_experience(scope_id, query, limit)]
