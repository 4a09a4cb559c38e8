"""Approved-Experience reads used by prepare (recall) and the API."""

from __future__ import annotations

from powercontext import search
from powercontext.prepare.builder import ArtifactRef, ExperienceContent, ExperienceHit


def experience_hit(row: search.ExperienceSearchRow) -> ExperienceHit:
    """A recalled Experience head as the builder takes it (fields from the family spec)."""
    return ExperienceHit(
        artifact_ref=ArtifactRef(family=row.family, artifact_id=row.artifact_id, revision=row.revision),
        content=ExperienceContent.from_mapping(row.content),
    )


def experience_search(*, scope_id: str, query: str, limit: int) -> list[ExperienceHit]:
    """Ranked approved, current Experience heads of one scope (never pending, rejected,
    superseded or Skill content: only Experience heads have index rows)."""
    return [experience_hit(row) for row in search.search_experience(scope_id, query, limit)]
