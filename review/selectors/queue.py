"""Queue reads for the Review Inbox and the candidate API: capped counts and keyset pages.

Every page costs a fixed number of queries, whatever the size of the queue: capped counts
(bounded ``COUNT`` over ``LIMIT`` subqueries, never a full-table count) and keyset pages
(``pk > after``, ``LIMIT size + 1``) with ``select_related("latest")``. The Inbox and the
``list_artifact_candidates`` API page the same way; only their renderings differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery

from powercontext import families
from review.models import Candidate, CandidateVersion
from review.selectors.candidate import CandidateFacts, candidate_facts

PAGE_SIZE = 50
COUNT_CAP = 1000
TITLE_CHARS = 160


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
class QueueRow(CandidateFacts):
    title: str
    subtitle: str
    evidence_count: int
    has_target: bool


@dataclass(frozen=True)
class QueuePage:
    rows: list[QueueRow]
    next_after: int | None
    prev_before: int | None
    is_first: bool


@dataclass(frozen=True)
class Page:
    """One keyset page of candidates: ``next_after``/``prev_before`` are the pks to page from."""

    items: list[Candidate]
    next_after: int | None
    prev_before: int | None
    is_first: bool


def _first_line(text: Any, limit: int = TITLE_CHARS) -> str:
    line = next((part.strip() for part in str(text).splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _titles(family: str, proposal: dict[str, Any]) -> tuple[str, str]:
    spec = families.PROPOSAL_FAMILIES.get(family)
    if spec is None:
        return "", ""
    return _first_line(proposal.get(spec.title_field, "")), _first_line(proposal.get(spec.subtitle_field, ""))


def queue_row(candidate: Candidate) -> QueueRow:
    latest = candidate.latest
    proposal = latest.proposal if latest is not None and isinstance(latest.proposal, dict) else {}
    title, subtitle = _titles(candidate.family, proposal)
    return QueueRow(
        **candidate_facts(candidate),
        title=title,
        subtitle=subtitle,
        evidence_count=len(latest.source_refs or []) + len(latest.artifact_refs or []) if latest else 0,
        has_target=bool(latest and latest.target),
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


def keyset_page(
    rows: QuerySet[Candidate],
    *,
    ascending: bool = True,
    after: int | None = None,
    before: int | None = None,
    size: int = PAGE_SIZE,
    split: bool = False,
) -> Page:
    """One keyset page of ``rows`` (already filtered). ``after``: the page that follows the row
    with that pk in display order; ``before``: the page that precedes it. ``split``: the rows are
    not filtered to one family (see ``_first_rows``)."""
    forward, backward = ("pk", "-pk") if ascending else ("-pk", "pk")
    past, until = ("pk__gt", "pk__lt") if ascending else ("pk__lt", "pk__gt")
    rows = rows.select_related("latest")
    if before is not None:
        found = _first_rows(rows, {until: before}, backward, size + 1, split)
        more_before = len(found) > size
        page = list(reversed(found[:size]))
        return Page(
            items=page,
            next_after=page[-1].pk if page else None,
            prev_before=page[0].pk if page and more_before else None,
            is_first=not more_before,
        )
    found = _first_rows(rows, {past: after} if after is not None else {}, forward, size + 1, split)
    page = found[:size]
    return Page(
        items=page,
        next_after=page[-1].pk if len(found) > size else None,
        prev_before=page[0].pk if page and after is not None else None,
        is_first=after is None,
    )


def queue_page(
    rows: QuerySet[Candidate],
    *,
    ascending: bool,
    after: int | None = None,
    before: int | None = None,
    size: int | None = None,
    split: bool = True,
) -> QueuePage:
    """The Inbox queue: one keyset page as display rows (one query per family when split), with
    each row's claimant joined in the same query."""
    page = keyset_page(
        rows.select_related("claim__claimed_by"),
        ascending=ascending,
        after=after,
        before=before,
        size=PAGE_SIZE if size is None else size,
        split=split,
    )
    return QueuePage(
        rows=[queue_row(c) for c in page.items],
        next_after=page.next_after,
        prev_before=page.prev_before,
        is_first=page.is_first,
    )


def candidate_rows(*, scope_id: str, status: str, family: str | None) -> QuerySet[Candidate]:
    """Candidates of one scope with one status (and family), for the API's pages."""
    rows: QuerySet[Candidate] = Candidate.objects.filter(scope_id=scope_id, status=status)
    return rows.filter(family=family) if family is not None else rows


def candidate_page(rows: QuerySet[Candidate], *, after: int | None, size: int) -> Page:
    """Proposal order (oldest first), ``size`` per page; rows carry their result head."""
    return keyset_page(rows.select_related("result_head"), after=after, size=size)


def neighbour(
    rows: QuerySet[Candidate], pk: int, *, ascending: bool, forward: bool = True, split: bool = True
) -> int | None:
    """The pk of the row after (or before) ``pk`` in display order, or None."""
    after = ascending == forward
    lookup = "pk__gt" if after else "pk__lt"
    found = _first_rows(rows.only("pk"), {lookup: pk}, "pk" if after else "-pk", 1, split)
    return found[0].pk if found else None


# --- bulk selection -------------------------------------------------------------------------

BULK_MAX = 200


def matching_items(
    rows: QuerySet[Candidate], *, seen: datetime, limit: int = BULK_MAX
) -> list[tuple[int, int]]:
    """``(pk, version)`` of the pending ``rows`` as a reviewer saw them at ``seen`` ("select all
    N matching"), oldest first, at most ``limit``: each candidate's newest version written by
    then, so a candidate revised since is a conflict when decided, and one proposed since is not
    included. One query."""
    seen_version = (
        CandidateVersion.objects.filter(candidate=OuterRef("pk"), created_at__lte=seen)
        .order_by("-version")
        .values("version")[:1]
    )
    found = (
        rows.filter(status=Candidate.Status.PENDING, created_at__lte=seen)
        .annotate(seen_version=Subquery(seen_version))
        .filter(seen_version__isnull=False)
        .order_by("pk")
        .values_list("pk", "seen_version")[:limit]
    )
    return [(pk, version) for pk, version in found]
