"""Evidence of a candidate version, resolved readable and inside the candidate's scope.

A reference never reaches across scopes. The candidate page costs a fixed number of queries
whatever the number of references (see ``evidence_resolve``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Q

from powercontext.core.models import MEMORY_FAMILY, Artifact, ArtifactRevision, MemoryEntryVersion, Source
from review.diff import FieldDiff, fields_diff
from review.selectors.candidate import ProposalField, VersionView, labels, proposal_fields


@dataclass(frozen=True)
class SourceEvidence:
    name: str
    source_id: str
    found: bool
    content: str = ""
    metadata: str | None = None
    position: int | None = None
    created_at: datetime | None = None


@dataclass(frozen=True)
class EntryVersionView:
    entry_version_id: str
    version: int
    kind: str
    text: str
    reason: str | None


@dataclass(frozen=True)
class MemoryChange:
    op: str
    entry_id: str
    reason: str | None
    before_id: str | None
    after_id: str | None
    before: EntryVersionView | None
    after: EntryVersionView | None


@dataclass(frozen=True)
class RevisionEvidence:
    family: str
    artifact_id: str
    revision: int
    found: bool
    is_target: bool = False
    fields: list[ProposalField] = field(default_factory=list)
    changes: list[MemoryChange] = field(default_factory=list)
    created_at: datetime | None = None

    @property
    def is_memory(self) -> bool:
        return self.family == MEMORY_FAMILY


@dataclass(frozen=True)
class TargetView:
    """A ``target`` and the diff of the proposal against its base: the Artifact's current head
    revision while the candidate is pending, the target revision itself once it is decided (the
    revision an approval replaced, or the one a rejected update proposed to change)."""

    family: str
    artifact_id: str
    target_revision: int
    current_revision: int | None
    stale: bool
    diff: list[FieldDiff]
    base_label: str = "Current revision"
    decided: bool = False


@dataclass(frozen=True)
class Evidence:
    sources: list[SourceEvidence]
    revisions: list[RevisionEvidence]
    target: TargetView | None


def ref_key(ref: dict[str, Any]) -> tuple[str, str, int]:
    return (str(ref.get("family")), str(ref.get("artifact_id")), int(ref.get("revision") or 0))


def _any_of(conditions: Iterable[Q]) -> Q | None:
    items = list(conditions)
    return reduce(or_, items) if items else None


def source_rows(scope_id: str, refs: Iterable[dict[str, Any]]) -> dict[tuple[str, str], Source]:
    """The Sources that ``refs`` name within ``scope_id``, by (name, source_id): one query."""
    match = _any_of(Q(source_type=str(r.get("name")), source_id=str(r.get("source_id"))) for r in refs)
    if match is None:
        return {}
    return {(s.source_type, s.source_id): s for s in Source.objects.filter(scope_id=scope_id).filter(match)}


def _resolve_sources(scope_id: str, refs: list[dict[str, Any]]) -> list[SourceEvidence]:
    found = source_rows(scope_id, refs)
    out: list[SourceEvidence] = []
    for ref in refs:
        name, source_id = str(ref.get("name")), str(ref.get("source_id"))
        found_source = found.get((name, source_id))
        if found_source is None:
            out.append(SourceEvidence(name=name, source_id=source_id, found=False))
            continue
        metadata = None
        if found_source.metadata:
            metadata = json.dumps(found_source.metadata, ensure_ascii=False, indent=2, sort_keys=True)
        out.append(
            SourceEvidence(
                name=name,
                source_id=source_id,
                found=True,
                content=found_source.content,
                metadata=metadata,
                position=found_source.position,
                created_at=found_source.created_at,
            )
        )
    return out


def revision_rows(
    scope_id: str, keys: Iterable[tuple[str, str, int]]
) -> dict[tuple[str, str, int], ArtifactRevision]:
    """The Artifact revisions named by (family, artifact_id, revision) within ``scope_id``: one query."""
    match = _any_of(Q(family=f, artifact_id=a, revision=r) for f, a, r in set(keys))
    if match is None:
        return {}
    return {
        (row.family, row.artifact_id, row.revision): row
        for row in ArtifactRevision.objects.filter(scope_id=scope_id).filter(match)
    }


def _entry_versions(scope_id: str, rows: Iterable[ArtifactRevision]) -> dict[str, EntryVersionView]:
    ids: set[str] = set()
    for row in rows:
        if row.family != MEMORY_FAMILY:
            continue
        for change in _changes_of(row):
            ids.update(
                v for v in (change.get("from_entry_version_id"), change.get("to_entry_version_id")) if v
            )
    if not ids:
        return {}
    return {
        v.entry_version_id: EntryVersionView(
            entry_version_id=v.entry_version_id, version=v.version, kind=v.kind, text=v.text, reason=v.reason
        )
        for v in MemoryEntryVersion.objects.filter(scope_id=scope_id, entry_version_id__in=sorted(ids))
    }


def _changes_of(row: ArtifactRevision) -> list[dict[str, Any]]:
    content = row.content if isinstance(row.content, dict) else {}
    changes = content.get("changes") or []
    return [c for c in changes if isinstance(c, dict)]


def evidence_resolve(
    *, scope_id: str, family: str, version: VersionView, status: str = "pending"
) -> Evidence:
    """Resolve every reference of one candidate version, readable, within ``scope_id``.

    ``status`` is the candidate's: a pending update is compared with its Artifact's current head,
    a decided one with its target revision (an approved update's own result is the head now).

    At most five queries, whatever the number of references: Sources, Artifact revisions, Memory
    entry versions named by cited Memory revisions' change lists, the target's head, and the
    head's current revision when it is not one of the cited revisions.
    """
    sources = _resolve_sources(scope_id, version.source_refs)
    target = version.target
    target_key = ref_key(target) if target else None
    head: Artifact | None = None
    if target is not None:
        head = Artifact.objects.filter(
            scope_id=scope_id, family=family, artifact_id=str(target.get("artifact_id"))
        ).first()
    keys = [ref_key(ref) for ref in version.artifact_refs]
    if target_key is not None:
        keys.append(target_key)
    if head is not None and head.current_revision >= 1:
        keys.append((head.family, head.artifact_id, head.current_revision))
    rows = revision_rows(scope_id, keys)
    entries = _entry_versions(scope_id, rows.values())
    revisions: list[RevisionEvidence] = []
    for ref in version.artifact_refs:
        key = ref_key(ref)
        row = rows.get(key)
        if row is None:
            revisions.append(
                RevisionEvidence(family=key[0], artifact_id=key[1], revision=key[2], found=False)
            )
            continue
        changes = (
            [
                MemoryChange(
                    op=str(c.get("op", "")),
                    entry_id=str(c.get("entry_id", "")),
                    reason=c.get("reason"),
                    before_id=c.get("from_entry_version_id"),
                    after_id=c.get("to_entry_version_id"),
                    before=entries.get(str(c.get("from_entry_version_id"))),
                    after=entries.get(str(c.get("to_entry_version_id"))),
                )
                for c in _changes_of(row)
            ]
            if row.family == MEMORY_FAMILY
            else []
        )
        revisions.append(
            RevisionEvidence(
                family=row.family,
                artifact_id=row.artifact_id,
                revision=row.revision,
                found=True,
                is_target=key == target_key,
                fields=[] if row.family == MEMORY_FAMILY else proposal_fields(row.family, row.content),
                changes=changes,
                created_at=row.created_at,
            )
        )
    target_view = None
    if target is not None and target_key is not None:
        decided = status != "pending"
        if decided:
            base = rows.get(target_key)
            base_label = f"Revision {target_key[2]} ({'replaced' if status == 'approved' else 'its target'})"
        else:
            base = (
                rows.get((head.family, head.artifact_id, head.current_revision)) if head is not None else None
            )
            base_label = "Current revision"
        proposal = {f.name: f.text for f in version.fields}
        before = {f.name: f.text for f in proposal_fields(family, base.content)} if base is not None else {}
        target_view = TargetView(
            family=target_key[0],
            artifact_id=target_key[1],
            target_revision=target_key[2],
            current_revision=head.current_revision if head is not None else None,
            stale=not decided and (head is None or head.current_revision != target_key[2]),
            diff=fields_diff(labels(family), before, proposal),
            base_label=base_label,
            decided=decided,
        )
    return Evidence(sources=sources, revisions=revisions, target=target_view)
