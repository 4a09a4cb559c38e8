"""A citation, exactly as prepare returned it, resolved to the one immutable item it names.

Memory: ``{"memory_ref": {family, artifact_id, revision}, "entry_id", "entry_version_id"}``
names an entry version that was part of Memory revision ``revision`` of the scope (the rule of
exact get). Experience: ``{"artifact_ref": {family, artifact_id, revision}}`` names one revision
of an Experience of the scope. Anything else, or an item of another scope, is unknown.

Every lookup is batched: a call with 32 citations costs two queries (one per family), whatever
the scope holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Q

from powercontext.core.families import MEMORY_ARTIFACT_ID, Family
from powercontext.core.models import (
    MEMORY_FAMILY as MEMORY_HEAD_FAMILY,
)
from powercontext.core.models import (
    Artifact,
    ArtifactRevision,
    MemoryEntry,
    MemoryEntryVersion,
    MemoryMembership,
)
from powercontext.feedback.models import EXPERIENCE, MEMORY
from powercontext.feedback.prior import experience_target, memory_target

MEMORY_FAMILY = Family.MEMORY.value
EXPERIENCE_FAMILY = Family.EXPERIENCE.value


@dataclass(frozen=True)
class Target:
    """The item a citation names: its family, its key within the scope (``target``), the row it
    is (``entry_version_pk`` or ``artifact_revision_pk``) and the revision the citation named."""

    family: str
    target: str
    cited_revision: int
    entry_version_pk: int | None = None
    artifact_revision_pk: int | None = None


def _memory_wanted(citation: Mapping[str, Any]) -> tuple[int, str, str] | None:
    ref = citation.get("memory_ref")
    if not isinstance(ref, Mapping):
        return None
    if ref.get("family") != MEMORY_FAMILY or ref.get("artifact_id") != MEMORY_ARTIFACT_ID:
        return None
    return int(ref["revision"]), str(citation["entry_id"]), str(citation["entry_version_id"])


def _experience_wanted(citation: Mapping[str, Any]) -> tuple[str, int] | None:
    ref = citation.get("artifact_ref")
    if not isinstance(ref, Mapping) or ref.get("family") != EXPERIENCE_FAMILY:
        return None
    return str(ref["artifact_id"]), int(ref["revision"])


_V = MemoryEntryVersion._meta.db_table
_E = MemoryEntry._meta.db_table
_M = MemoryMembership._meta.db_table
_A = Artifact._meta.db_table
# The named versions of the scope, each with its entry's public id, every interval of Memory
# revisions it was part of, and the scope's head revision: one statement (three ORM queries cost
# two more round trips on every feedback call). Table names are the models' own; values are
# parameters.
_MEMORY_SQL = (
    f"SELECT v.id, v.entry_version_id, e.entry_id, m.from_revision, m.to_revision, "  # noqa: S608
    f"(SELECT a.current_revision FROM {_A} a WHERE a.scope_id = %s AND a.family = %s AND a.artifact_id = %s) "
    f"FROM {_V} v JOIN {_E} e ON e.id = v.entry_id LEFT JOIN {_M} m ON m.entry_version_id = v.id "
    f"WHERE v.scope_id = %s AND v.entry_version_id IN ({{placeholders}})"
)


def resolve(scope_id: str, citations: Sequence[Mapping[str, Any]]) -> list[Target | None]:
    """Each citation's item in ``scope_id``, or None when it names nothing there (unknown ids,
    a revision the version was not part of, another family, another scope)."""
    memory: dict[int, tuple[int, str, str]] = {}
    experience: dict[int, tuple[str, int]] = {}
    for index, citation in enumerate(citations):
        if (wanted := _memory_wanted(citation)) is not None:
            memory[index] = wanted
        elif (named := _experience_wanted(citation)) is not None:
            experience[index] = named
    found: list[Target | None] = [None] * len(citations)

    if memory:
        version_ids = sorted({w[2] for w in memory.values()})
        placeholders = ", ".join(["%s"] * len(version_ids))
        rows: dict[
            str, tuple[int, str, list[tuple[int, int | None]]]
        ] = {}  # version id -> (pk, entry id, intervals)
        head = 0
        with connection.cursor() as cursor:
            cursor.execute(
                _MEMORY_SQL.format(placeholders=placeholders),
                [scope_id, MEMORY_HEAD_FAMILY, MEMORY_ARTIFACT_ID, scope_id, *version_ids],
            )
            for pk, version_id, entry_id, start, end, current in cursor.fetchall():
                head = current or 0
                row = rows.setdefault(version_id, (pk, entry_id, []))
                if start is not None:
                    row[2].append((start, end))
        for index, (revision, entry_id, version_id) in memory.items():
            found_row = rows.get(version_id)
            if found_row is None or found_row[1] != entry_id or not 1 <= revision <= head:
                continue
            if any(start <= revision and (end is None or revision < end) for start, end in found_row[2]):
                found[index] = Target(
                    MEMORY, memory_target(version_id), revision, entry_version_pk=found_row[0]
                )

    if experience:
        match = Q()
        for artifact_id, revision in set(experience.values()):
            match |= Q(artifact_id=artifact_id, revision=revision)
        revisions = {
            (r.artifact_id, r.revision): r.pk
            for r in ArtifactRevision.objects.filter(match, scope_id=scope_id, family=EXPERIENCE_FAMILY).only(
                "pk", "artifact_id", "revision"
            )
        }
        for index, (artifact_id, revision) in experience.items():
            revision_pk = revisions.get((artifact_id, revision))
            if revision_pk is not None:
                found[index] = Target(
                    EXPERIENCE,
                    experience_target(artifact_id, revision),
                    revision,
                    artifact_revision_pk=revision_pk,
                )
    return found
