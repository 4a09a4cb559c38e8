"""The one shape of a search hit per family (pure: no Django).

Search (full text, vectors, fusion) returns these; selection passes them to the prepared-context
builder unchanged; the builder's trace, explain and replay hold the same objects. The builder
(``powercontext.prepare.builder``) re-exports them as its input types.

Experience's fields are ``powercontext.core.families.EXPERIENCE``'s fields: ``ExperienceContent``
spells them once more only so that they are typed attributes, and importing this module fails if
the two ever differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from powercontext.core.families import EXPERIENCE


@dataclass(frozen=True)
class ArtifactRef:
    """A citation of one Artifact revision (family, id, revision), as the contract's
    ``ArtifactRef`` object carries it and as hits, trace entries and candidates cite it."""

    family: str
    artifact_id: str
    revision: int


@dataclass(frozen=True)
class MemoryHit:
    """One active entry version of a Memory head, as ranked by search.

    Search order is the ranking; ``score``, ``matched_by``, ``similarity`` and ``lexical_share``
    are never rendered. ``key`` is the search's row id (the membership), used to merge rankings.
    ``position`` is the entry's place in its head's order (``rerank.rank_memory`` sets it; None
    elsewhere): the pack's cut reads which hits were remembered next to one another.
    """

    memory_ref: ArtifactRef | None
    entry_id: str
    entry_version_id: str
    text: str
    score: float = 0.0
    matched_by: tuple[str, ...] = ("fts",)
    similarity: float | None = None  # raw cosine of the vector channel, when it ranked the hit
    lexical_share: float | None = None  # share of the query's IDF mass the entry covers
    key: int = field(default=0, compare=False, repr=False)
    position: int | None = field(default=None, compare=False, repr=False)

    @property
    def revision(self) -> int | None:
        """The Memory revision the hit cites."""
        return self.memory_ref.revision if self.memory_ref is not None else None


@dataclass(frozen=True)
class ExperienceContent:
    """The Experience family's fields (``powercontext.core.families.EXPERIENCE``), in its order."""

    situation: str
    action: str
    outcome: str
    lesson: str

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> ExperienceContent:
        return cls(**{name: str(values.get(name, "")) for name in EXPERIENCE.field_names})

    def values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in EXPERIENCE.field_names)

    def as_mapping(self) -> dict[str, Any]:
        return dict(zip(EXPERIENCE.field_names, self.values(), strict=True))


if tuple(f.name for f in fields(ExperienceContent)) != EXPERIENCE.field_names:  # pragma: no cover
    raise ImportError("ExperienceContent's fields differ from families.EXPERIENCE")


@dataclass(frozen=True)
class ExperienceHit:
    """One approved, current Experience head, as ranked by search (``key``: the head's row id)."""

    artifact_ref: ArtifactRef
    content: ExperienceContent
    score: float = 0.0
    similarity: float | None = None  # raw cosine of the vector channel, when it ranked the hit
    lexical_share: float | None = None  # share of the query's IDF mass the head covers
    key: int = field(default=0, compare=False, repr=False)
