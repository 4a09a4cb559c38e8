"""Review Inbox reads and the side-by-side diff.

Everything here returns plain frozen dataclasses, fully loaded, so templates never touch the ORM
(and so never trigger a query). Each page costs a fixed number of queries, whatever the size of
the queue or the number of evidence items:

- queue: capped counts (bounded ``COUNT`` over ``LIMIT`` subqueries, never a full-table count)
  plus one keyset page (``pk > after``, ``LIMIT size + 1``) with ``select_related("latest")``;
- candidate: the candidate, then one query each for Sources, Artifact revisions, Memory entry
  versions and the target's head, whatever the number of references.

Evidence is always resolved inside the candidate's scope: a reference never reaches across scopes.
The side-by-side diff lives in the pure module ``review.diff``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Q, QuerySet

from powercontext.models import MEMORY_FAMILY, Artifact, ArtifactRevision, MemoryEntryVersion, Source
from review.diff import FieldDiff, fields_diff
from review.models import Candidate, CandidateVersion, ReviewDecision

PAGE_SIZE = 50
COUNT_CAP = 1000
TITLE_CHARS = 160

EXPERIENCE_FIELDS = (
    ("situation", "Situation"),
    ("action", "Action"),
    ("outcome", "Outcome"),
    ("lesson", "Lesson"),
)
SKILL_FIELDS = (
    ("name", "Name"),
    ("description", "Description"),
    ("instructions", "Instructions"),
    ("validation", "Validation"),
)
FIELDS = {Candidate.Family.EXPERIENCE: EXPERIENCE_FIELDS, Candidate.Family.SKILL: SKILL_FIELDS}


# --- counts -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CappedCount:
    """A count that stops at ``COUNT_CAP``: ``more`` means "at least ``value``"."""

    value: int
    more: bool

    def __str__(self) -> str:
        return f"{self.value}+" if self.more else str(self.value)


def capped_count(rows: QuerySet[Any], cap: int | None = None) -> CappedCount:
    """``SELECT COUNT(*) FROM (... LIMIT cap + 1)``: bounded work however big the table is."""
    cap = COUNT_CAP if cap is None else cap
    found = rows.order_by()[: cap + 1].count()
    return CappedCount(value=min(found, cap), more=found > cap)


@dataclass(frozen=True)
class QueueCounts:
    pending_experience: CappedCount
    pending_skill: CappedCount


def queue_counts() -> QueueCounts:
    """Pending candidates per family (two bounded counts on the ``candidate_queue`` index)."""
    pending = Candidate.objects.filter(status=Candidate.Status.PENDING)
    return QueueCounts(
        pending_experience=capped_count(pending.filter(family=Candidate.Family.EXPERIENCE)),
        pending_skill=capped_count(pending.filter(family=Candidate.Family.SKILL)),
    )


# --- the queue ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueRow:
    pk: int
    candidate_id: str
    scope_id: str
    family: str
    status: str
    version: int
    title: str
    subtitle: str
    evidence_count: int
    has_target: bool
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class QueuePage:
    rows: list[QueueRow]
    next_after: int | None
    prev_before: int | None
    is_first: bool


def _first_line(text: Any, limit: int = TITLE_CHARS) -> str:
    line = next((part.strip() for part in str(text).splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _titles(family: str, proposal: dict[str, Any]) -> tuple[str, str]:
    if family == Candidate.Family.SKILL:
        return _first_line(proposal.get("name", "")), _first_line(proposal.get("description", ""))
    return _first_line(proposal.get("lesson", "")), _first_line(proposal.get("situation", ""))


def queue_row(candidate: Candidate) -> QueueRow:
    latest = candidate.latest
    proposal = latest.proposal if latest is not None and isinstance(latest.proposal, dict) else {}
    title, subtitle = _titles(candidate.family, proposal)
    return QueueRow(
        pk=candidate.pk,
        candidate_id=candidate.candidate_id,
        scope_id=candidate.scope_id,
        family=candidate.family,
        status=candidate.status,
        version=candidate.version,
        title=title,
        subtitle=subtitle,
        evidence_count=len(latest.source_refs or []) + len(latest.artifact_refs or []) if latest else 0,
        has_target=bool(latest and latest.target),
        created_at=candidate.created_at,
        updated_at=candidate.updated_at,
    )


def ascending_for(status: str) -> bool:
    """Pending work is first-in first-out; decided candidates read newest first."""
    return status == Candidate.Status.PENDING


def _first_rows(
    rows: QuerySet[Candidate], condition: dict[str, Any], order: str, count: int, split: bool
) -> list[Candidate]:
    """The first ``count`` rows in ``order`` (``"pk"`` or ``"-pk"``).

    With ``split``, one query per family, merged: each then walks the ``candidate_queue`` index
    ``(status, family, id)`` in order and stops at the limit, where a single query over all
    families would sort every pending row (SQLite does) before applying the limit.
    """
    if not split:
        return list(rows.filter(**condition).order_by(order)[:count])
    found: list[Candidate] = []
    for family in Candidate.Family.values:
        found.extend(rows.filter(family=family, **condition).order_by(order)[:count])
    found.sort(key=lambda c: c.pk, reverse=order.startswith("-"))
    return found[:count]


def queue_page(
    rows: QuerySet[Candidate],
    *,
    ascending: bool,
    after: int | None = None,
    before: int | None = None,
    size: int | None = None,
    split: bool = True,
) -> QueuePage:
    """One keyset page of ``rows`` (already filtered). ``after``: the page that follows the row
    with that pk in display order; ``before``: the page that precedes it. ``split``: the rows are
    not filtered to one family (see ``_first_rows``). One query per family."""
    size = PAGE_SIZE if size is None else size
    forward, backward = ("pk", "-pk") if ascending else ("-pk", "pk")
    past, until = ("pk__gt", "pk__lt") if ascending else ("pk__lt", "pk__gt")
    rows = rows.select_related("latest")
    if before is not None:
        found = _first_rows(rows, {until: before}, backward, size + 1, split)
        more_before = len(found) > size
        page = list(reversed(found[:size]))
        return QueuePage(
            rows=[queue_row(c) for c in page],
            next_after=page[-1].pk if page else None,
            prev_before=page[0].pk if page and more_before else None,
            is_first=not more_before,
        )
    found = _first_rows(rows, {past: after} if after is not None else {}, forward, size + 1, split)
    page = found[:size]
    return QueuePage(
        rows=[queue_row(c) for c in page],
        next_after=page[-1].pk if len(found) > size else None,
        prev_before=page[0].pk if page and after is not None else None,
        is_first=after is None,
    )


def neighbour(
    rows: QuerySet[Candidate], pk: int, *, ascending: bool, forward: bool = True, split: bool = True
) -> int | None:
    """The pk of the row after (or before) ``pk`` in display order, or None."""
    after = ascending == forward
    lookup = "pk__gt" if after else "pk__lt"
    found = _first_rows(rows.only("pk"), {lookup: pk}, "pk" if after else "-pk", 1, split)
    return found[0].pk if found else None


# --- one candidate ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProposalField:
    name: str
    label: str
    text: str
    items: tuple[str, ...] | None = None


def proposal_fields(family: str, proposal: Any) -> list[ProposalField]:
    """The proposal as labelled fields in the family's order (unknown keys shown after)."""
    data = proposal if isinstance(proposal, dict) else {}
    known = FIELDS.get(family, ())
    names = [name for name, _ in known]
    out: list[ProposalField] = []
    for name, label in [*known, *((key, key) for key in data if key not in names)]:
        value = data.get(name)
        if isinstance(value, list):
            items = tuple(str(item) for item in value)
            out.append(ProposalField(name=name, label=label, text="\n".join(items), items=items))
        elif value is None:
            out.append(ProposalField(name=name, label=label, text=""))
        elif isinstance(value, str):
            out.append(ProposalField(name=name, label=label, text=value))
        else:
            out.append(ProposalField(name=name, label=label, text=json.dumps(value, ensure_ascii=False)))
    return out


@dataclass(frozen=True)
class VersionView:
    version: int
    fields: list[ProposalField]
    reason: str | None
    source_refs: list[dict[str, Any]]
    artifact_refs: list[dict[str, Any]]
    target: dict[str, Any] | None
    created_by: str | None
    created_at: datetime

    @property
    def evidence_count(self) -> int:
        return len(self.source_refs) + len(self.artifact_refs)


def version_view(family: str, version: CandidateVersion) -> VersionView:
    """Needs ``created_by`` selected (``select_related``) to stay query-free."""
    return VersionView(
        version=version.version,
        fields=proposal_fields(family, version.proposal),
        reason=version.reason,
        source_refs=list(version.source_refs or []),
        artifact_refs=list(version.artifact_refs or []),
        target=version.target,
        created_by=version.created_by.get_username() if version.created_by is not None else None,
        created_at=version.created_at,
    )


@dataclass(frozen=True)
class DecisionView:
    decision: str
    version: int
    reviewer: str
    reason: str | None
    result: str | None
    decided_at: datetime


def decision_view(decision: ReviewDecision | None) -> DecisionView | None:
    if decision is None:
        return None
    result = None
    if decision.result_head is not None:
        result = (
            f"{decision.result_head.family}/{decision.result_head.artifact_id}@{decision.result_revision}"
        )
    return DecisionView(
        decision=decision.decision,
        version=decision.version,
        reviewer=decision.reviewer.get_username(),
        reason=decision.reason,
        result=result,
        decided_at=decision.decided_at,
    )


@dataclass(frozen=True)
class CandidateSummary:
    pk: int
    candidate_id: str
    scope_id: str
    family: str
    status: str
    version: int
    decision_reason: str | None
    result: str | None
    created_at: datetime
    updated_at: datetime
    latest: VersionView | None
    decision: DecisionView | None

    @property
    def is_pending(self) -> bool:
        return self.status == Candidate.Status.PENDING


def _decision_of(candidate: Candidate) -> ReviewDecision | None:
    try:
        return candidate.decision
    except ReviewDecision.DoesNotExist:
        return None


CANDIDATE_RELATED = (
    "latest",
    "latest__created_by",
    "result_head",
    "decision",
    "decision__reviewer",
    "decision__result_head",
)


def candidate_load(pk: int) -> Candidate | None:
    """The candidate with everything a page shows about it, in one query."""
    return Candidate.objects.select_related(*CANDIDATE_RELATED).filter(pk=pk).first()


def candidate_summary(candidate: Candidate) -> CandidateSummary:
    result = None
    if candidate.result_head is not None:
        result = (
            f"{candidate.result_head.family}/{candidate.result_head.artifact_id}@{candidate.result_revision}"
        )
    return CandidateSummary(
        pk=candidate.pk,
        candidate_id=candidate.candidate_id,
        scope_id=candidate.scope_id,
        family=candidate.family,
        status=candidate.status,
        version=candidate.version,
        decision_reason=candidate.decision_reason,
        result=result,
        created_at=candidate.created_at,
        updated_at=candidate.updated_at,
        latest=version_view(candidate.family, candidate.latest) if candidate.latest is not None else None,
        decision=decision_view(_decision_of(candidate)),
    )


# --- evidence -----------------------------------------------------------------------------------


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
    """A ``target`` compared with its Artifact's current head revision."""

    family: str
    artifact_id: str
    target_revision: int
    current_revision: int | None
    stale: bool
    diff: list[FieldDiff]


@dataclass(frozen=True)
class Evidence:
    sources: list[SourceEvidence]
    revisions: list[RevisionEvidence]
    target: TargetView | None


def _key(ref: dict[str, Any]) -> tuple[str, str, int]:
    return (str(ref.get("family")), str(ref.get("artifact_id")), int(ref.get("revision") or 0))


def _any_of(conditions: Iterable[Q]) -> Q | None:
    items = list(conditions)
    return reduce(or_, items) if items else None


def _resolve_sources(scope_id: str, refs: list[dict[str, Any]]) -> list[SourceEvidence]:
    match = _any_of(Q(source_type=str(r.get("name")), source_id=str(r.get("source_id"))) for r in refs)
    found: dict[tuple[str, str], Source] = {}
    if match is not None:
        for source in Source.objects.filter(scope_id=scope_id).filter(match):
            found[(source.source_type, source.source_id)] = source
    out: list[SourceEvidence] = []
    for ref in refs:
        name, source_id = str(ref.get("name")), str(ref.get("source_id"))
        source = found.get((name, source_id))
        if source is None:
            out.append(SourceEvidence(name=name, source_id=source_id, found=False))
            continue
        metadata = None
        if source.metadata:
            metadata = json.dumps(source.metadata, ensure_ascii=False, indent=2, sort_keys=True)
        out.append(
            SourceEvidence(
                name=name,
                source_id=source_id,
                found=True,
                content=source.content,
                metadata=metadata,
                position=source.position,
                created_at=source.created_at,
            )
        )
    return out


def _revision_rows(
    scope_id: str, keys: Iterable[tuple[str, str, int]]
) -> dict[tuple[str, str, int], ArtifactRevision]:
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


def evidence_resolve(*, scope_id: str, family: str, version: VersionView) -> Evidence:
    """Resolve every reference of one candidate version, readable, within ``scope_id``.

    At most five queries, whatever the number of references: Sources, Artifact revisions, Memory
    entry versions named by cited Memory revisions' change lists, the target's head, and the
    head's current revision when it is not one of the cited revisions.
    """
    sources = _resolve_sources(scope_id, version.source_refs)
    target = version.target
    target_key = _key(target) if target else None
    head: Artifact | None = None
    if target is not None:
        head = Artifact.objects.filter(
            scope_id=scope_id, family=family, artifact_id=str(target.get("artifact_id"))
        ).first()
    keys = [_key(ref) for ref in version.artifact_refs]
    if head is not None and head.current_revision >= 1:
        keys.append((head.family, head.artifact_id, head.current_revision))
    rows = _revision_rows(scope_id, keys)
    entries = _entry_versions(scope_id, rows.values())
    revisions: list[RevisionEvidence] = []
    for ref in version.artifact_refs:
        key = _key(ref)
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
        current = (
            rows.get((head.family, head.artifact_id, head.current_revision)) if head is not None else None
        )
        proposal = {f.name: f.text for f in version.fields}
        before = (
            {f.name: f.text for f in proposal_fields(family, current.content)} if current is not None else {}
        )
        target_view = TargetView(
            family=target_key[0],
            artifact_id=target_key[1],
            target_revision=target_key[2],
            current_revision=head.current_revision if head is not None else None,
            stale=head is None or head.current_revision != target_key[2],
            diff=fields_diff(FIELDS.get(family, ()), before, proposal),
        )
    return Evidence(sources=sources, revisions=revisions, target=target_view)


# --- history --------------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryItem:
    version: VersionView
    changes: list[FieldDiff] | None


def candidate_versions(candidate: Candidate) -> list[VersionView]:
    """Every version of the candidate, oldest first (one query)."""
    rows = (
        CandidateVersion.objects.filter(candidate=candidate).select_related("created_by").order_by("version")
    )
    return [version_view(candidate.family, row) for row in rows]


def history_items(family: str, versions: list[VersionView]) -> list[HistoryItem]:
    """Each version with what changed since the one before it (None for version 1)."""
    items: list[HistoryItem] = []
    previous: VersionView | None = None
    for version in versions:
        changes = None
        if previous is not None:
            changes = fields_diff(
                FIELDS.get(family, ()),
                {f.name: f.text for f in previous.fields} | {"reason": previous.reason or ""},
                {f.name: f.text for f in version.fields} | {"reason": version.reason or ""},
                extra=(("reason", "Reason"),),
            )
        items.append(HistoryItem(version=version, changes=changes))
        previous = version
    return items
