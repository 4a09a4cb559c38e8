"""Memory reads: head, entries of a revision, exact citations, changes, search."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from powercontext import search
from powercontext.core.exceptions import MemoryNotFound
from powercontext.core.hits import MemoryHit
from powercontext.core.models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    Artifact,
    ArtifactRevision,
    MemoryEntry,
    MemoryEntryVersion,
    MemoryMembership,
)


@dataclass(frozen=True)
class EntryView:
    """One entry version as seen in one Memory revision (the wire ``MemoryEntry``)."""

    revision: int
    entry_id: str
    entry_version_id: str
    version: int
    kind: str
    text: str
    state: str
    source_refs: list[Any]
    artifact_refs: list[Any]


@dataclass(frozen=True)
class SearchResult:
    revision: int | None
    hits: list[MemoryHit]  # search's own hits, each citing ``revision``
    mode: str = "fts"  # the mode used (``auto`` resolved)


@dataclass(frozen=True)
class RevisionChanges:
    revision: int
    changes: list[dict[str, Any]]


def entry_view(
    membership: MemoryMembership, version: MemoryEntryVersion, entry: MemoryEntry, revision: int
) -> EntryView:
    return EntryView(
        revision=revision,
        entry_id=entry.entry_id,
        entry_version_id=version.entry_version_id,
        version=version.version,
        kind=version.kind,
        text=version.text,
        state=membership.state,
        source_refs=list(version.source_refs or []),
        artifact_refs=list(version.artifact_refs or []),
    )


def memory_head_revision(*, scope_id: str) -> int | None:
    """The scope's current Memory revision, or None when the scope has no Memory."""
    revision = (
        Artifact.objects.filter(scope_id=scope_id, family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID)
        .values_list("current_revision", flat=True)
        .first()
    )
    return revision or None


def _in_revision(revision: int) -> Q:
    return Q(from_revision__lte=revision) & (Q(to_revision__isnull=True) | Q(to_revision__gt=revision))


def memory_list_entries(
    *, scope_id: str, include_inactive: bool = False
) -> tuple[int | None, list[EntryView]]:
    """Entries of the current head in creation order (active only unless asked for)."""
    revision = memory_head_revision(scope_id=scope_id)
    if revision is None:
        return None, []
    rows = (
        MemoryMembership.objects.filter(scope_id=scope_id)
        .filter(_in_revision(revision))
        .select_related("entry", "entry_version")
    )
    if not include_inactive:
        rows = rows.filter(state=MemoryMembership.State.ACTIVE)
    # Filtering on the revision read (not "open now") keeps the listing exact even when a
    # write commits between the two statements.
    rows = rows.order_by("entry_id")
    return revision, [entry_view(m, m.entry_version, m.entry, revision) for m in rows]


def find_membership(
    *, scope_id: str, entry_id: str, entry_version_id: str, revision: int | None
) -> MemoryMembership | None:
    """The membership of an exact entry version: open in the head (``revision`` None) or in
    revision ``revision``. Looks the version up by its unique id first, so the cost does not
    grow with the size of the scope's Memory."""
    version = (
        MemoryEntryVersion.objects.select_related("entry")
        .filter(scope_id=scope_id, entry_version_id=entry_version_id)
        .first()
    )
    if version is None or version.entry.entry_id != entry_id:
        return None
    rows = MemoryMembership.objects.filter(entry_version=version)
    rows = rows.filter(to_revision__isnull=True) if revision is None else rows.filter(_in_revision(revision))
    membership = rows.first()
    if membership is not None:
        # Reuse the rows already read instead of two more queries.
        membership.entry_version = version
        membership.entry = version.entry
    return membership


def memory_get_entry(
    *, scope_id: str, family: str, artifact_id: str, revision: int, entry_id: str, entry_version_id: str
) -> EntryView:
    """Resolve an exact citation: the immutable version named, as it was in that revision.

    Raises ``MemoryNotFound`` unless the version belongs to the scope and was part of the cited
    revision, and that revision exists.
    """
    if family != MEMORY_FAMILY or artifact_id != MEMORY_ARTIFACT_ID:
        raise MemoryNotFound()
    head = memory_head_revision(scope_id=scope_id)
    if head is None or revision < 1 or revision > head:
        raise MemoryNotFound()
    membership = find_membership(
        scope_id=scope_id, entry_id=entry_id, entry_version_id=entry_version_id, revision=revision
    )
    if membership is None:
        raise MemoryNotFound()
    return entry_view(membership, membership.entry_version, membership.entry, revision)


def memory_list_changes(
    *, scope_id: str, since_revision: int | None
) -> tuple[int | None, list[RevisionChanges]]:
    """Per-revision change lists after ``since_revision`` (exclusive), oldest first.

    A positive ``since_revision`` beyond the head is ``MemoryNotFound``.
    """
    head = memory_head_revision(scope_id=scope_id)
    since = since_revision or 0
    if since > (head or 0):
        raise MemoryNotFound()
    if head is None:
        return None, []
    rows = (
        ArtifactRevision.objects.filter(
            scope_id=scope_id, family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID, revision__gt=since
        )
        .order_by("revision")
        .values_list("revision", "content")
    )
    return head, [
        RevisionChanges(revision=rev, changes=list(content.get("changes", []))) for rev, content in rows
    ]


def memory_search(*, scope_id: str, query: str, limit: int, mode: str = "fts") -> SearchResult:
    """Ranked active entries of the scope's current head, ranked by ``mode`` (``auto``: the best
    available; the caller checks that ``mode`` is in ``search.available_modes()``).

    All hits cite one head revision (read by the statement that returned them); with no hits,
    the head is read separately.
    """
    used, hits = search.search_memory_mode(scope_id, query, limit, mode)
    if not hits:
        return SearchResult(revision=memory_head_revision(scope_id=scope_id), hits=[], mode=used)
    return SearchResult(revision=hits[0].revision, mode=used, hits=hits)
