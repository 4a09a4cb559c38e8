"""Queue reads for the Review Inbox and the candidate API: capped counts and keyset pages.

Every page costs a fixed number of queries, whatever the size of the queue: capped counts
(bounded ``COUNT`` over ``LIMIT`` subqueries, never a full-table count) and keyset pages
(``pk > after``, ``LIMIT size + 1``) with ``select_related("latest")``. The Inbox and the
``list_artifact_candidates`` API page the same way; only their renderings differ.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db.models import (
    Case,
    Count,
    Exists,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce

from powercontext.core import families
from powercontext.core.models import Artifact
from review import textmarks
from review.models import Candidate, ReviewAction, ReviewDecision
from review.selectors import counts
from review.selectors.candidate import CandidateFacts, candidate_facts
from review.selectors.counts import CappedCount
from review.selectors.similar import Similar, near_duplicate_flags
from review.selectors.viewing import ViewingView, viewing_of

PAGE_SIZE = 50
TITLE_CHARS = 160


# --- sort orders ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sort:
    """One order of the queue: ``field`` (or none) then the pk, both in one direction."""

    key: str
    label: str
    field: str | None
    descending: bool

    def order(self, *, reverse: bool = False) -> list[str]:
        sign = "-" if self.descending != reverse else ""
        return [f"{sign}{name}" for name in (self.field, "pk") if name is not None]


SORTS: dict[str, Sort] = {
    "waiting": Sort("waiting", "Waiting longest", None, False),
    "newest": Sort("newest", "Newest first", None, True),
    "scope": Sort("scope", "Scope (A-Z)", "scope_id", False),
    "decided": Sort("decided", "Decided most recently", "decision__decided_at", True),
}


def sort_keys(status: str) -> tuple[str, ...]:
    """The sorts offered for a status, the default first: pending work waits in line, decided
    candidates read by decision time; those waiting for their proposer's answer (no decision
    yet) line up like pending work."""
    if status in (Candidate.Status.PENDING, Candidate.Status.CHANGES_REQUESTED):
        return ("waiting", "newest", "scope")
    return ("decided", "newest", "waiting", "scope")


def default_sort(status: str) -> Sort:
    return SORTS[sort_keys(status)[0]]


def _past(sort: Sort, pk: int, *, forward: bool) -> Q:
    """Rows that come after (``forward``) or before the row ``pk`` in ``sort`` order. The row's
    own sort value is read by a subquery, so a cursor stays a bare pk and costs no query."""
    op = "gt" if forward != sort.descending else "lt"
    if sort.field is None:
        return Q(**{f"pk__{op}": pk})
    anchor = Subquery(Candidate.objects.filter(pk=pk).values(sort.field)[:1])
    return Q(**{f"{sort.field}__{op}": anchor}) | Q(**{sort.field: anchor, f"pk__{op}": pk})


def taken_back() -> Exists:
    """A decided candidate whose decision was taken back (Undo or Reopen, each a ``reopened``
    action naming its pending copy): the copy supersedes it, so the Approved and Rejected lists
    leave it out unless asked (``filters.CandidateQueueFilter``). One ``EXISTS`` per row, served
    by the ``review_action_thread`` index ``(candidate, acted_at)``."""
    return Exists(ReviewAction.objects.filter(candidate=OuterRef("pk"), action=ReviewAction.Action.REOPENED))


# --- the queue ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueRow(CandidateFacts):
    title: str
    subtitle: str
    evidence_count: int
    has_target: bool
    # A pending update whose target Artifact moved on (or is gone): Approve is refused until rebased.
    stale: bool = False
    # Kinds of bidirectional / invisible characters in the proposal, reason or scope (textmarks).
    marks: tuple[str, ...] = ()
    # A pending candidate that is the later copy of a near-duplicate pair: the earlier one
    # (``similar.near_duplicate_flags``); None = no flag (or decided rows).
    near_duplicate: Similar | None = None
    # Decided rows: who decided, when, and why (a rejection's reason).
    reviewer: str | None = None
    decided_at: datetime | None = None
    decision_reason: str | None = None
    viewing: ViewingView | None = None  # who has it open (``viewing_of``)


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


def proposal_texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in proposal_texts(item)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in proposal_texts(item)]
    return []


def _marks(candidate: Candidate, proposal: dict[str, Any]) -> tuple[str, ...]:
    latest = candidate.latest
    texts = [candidate.scope_id, *proposal_texts(proposal), (latest.reason or "") if latest else ""]
    return tuple(sorted(textmarks.kinds_in("\n".join(texts))))


def _decision_of(candidate: Candidate) -> ReviewDecision | None:
    try:
        return candidate.decision
    except ReviewDecision.DoesNotExist:
        return None


def queue_row(candidate: Candidate, *, heads: dict[tuple[str, str, str], int] | None = None) -> QueueRow:
    """One display row. ``heads``: current revisions of the page's update targets (see
    ``_target_heads``); a decided candidate needs ``decision__reviewer`` selected."""
    latest = candidate.latest
    proposal = latest.proposal if latest is not None and isinstance(latest.proposal, dict) else {}
    title, subtitle = _titles(candidate.family, proposal)
    target = latest.target if latest is not None and isinstance(latest.target, dict) else None
    stale = False
    if target is not None and heads is not None and candidate.status == Candidate.Status.PENDING:
        current = heads.get((candidate.scope_id, candidate.family, str(target.get("artifact_id"))))
        stale = current is None or current != target.get("revision")
    decision = _decision_of(candidate) if candidate.status != Candidate.Status.PENDING else None
    return QueueRow(
        **candidate_facts(candidate),
        title=title,
        subtitle=subtitle,
        evidence_count=len(latest.source_refs or []) + len(latest.artifact_refs or []) if latest else 0,
        has_target=target is not None,
        stale=stale,
        marks=_marks(candidate, proposal),
        reviewer=decision.reviewer.get_username() if decision is not None else None,
        decided_at=decision.decided_at if decision is not None else None,
        decision_reason=decision.reason if decision is not None else None,
    )


def _target_heads(candidates: list[Candidate]) -> dict[tuple[str, str, str], int]:
    """Current revisions of the Artifacts that the page's pending updates target: one query for
    the whole page (none when it holds no pending update)."""
    keys = {
        (c.scope_id, c.family, str(c.latest.target.get("artifact_id")))
        for c in candidates
        if c.status == Candidate.Status.PENDING and c.latest is not None and isinstance(c.latest.target, dict)
    }
    if not keys:
        return {}
    match = Q(pk__in=[])
    for scope_id, family, artifact_id in keys:
        match |= Q(scope_id=scope_id, family=family, artifact_id=artifact_id)
    rows = Artifact.objects.filter(match).values_list("scope_id", "family", "artifact_id", "current_revision")
    return {(scope_id, family, artifact_id): revision for scope_id, family, artifact_id, revision in rows}


def _first_rows(
    rows: QuerySet[Candidate], condition: Q, sort: Sort, count: int, split: bool, *, reverse: bool = False
) -> list[Candidate]:
    """The first ``count`` rows in ``sort`` order (``reverse``: the opposite order).

    With ``split`` (and a pk-only order), one query per family, merged: each then walks the
    ``candidate_queue`` index ``(status, family, id)`` in order and stops at the limit, where a
    single query over all families would sort every pending row (SQLite does) before the limit.
    """
    order = sort.order(reverse=reverse)
    if not split or sort.field is not None:
        return list(rows.filter(condition).order_by(*order)[:count])
    found: list[Candidate] = []
    for family in Candidate.Family.values:
        found.extend(rows.filter(condition, family=family).order_by(*order)[:count])
    found.sort(key=lambda c: c.pk, reverse=order[0].startswith("-"))
    return found[:count]


def keyset_page(
    rows: QuerySet[Candidate],
    *,
    ascending: bool = True,
    sort: Sort | None = None,
    after: int | None = None,
    before: int | None = None,
    size: int = PAGE_SIZE,
    split: bool = False,
) -> Page:
    """One keyset page of ``rows`` (already filtered) in ``sort`` order (by default by pk,
    ``ascending`` or not). ``after``: the page that follows the row with that pk in display
    order; ``before``: the page that precedes it. ``split``: the rows are not filtered to one
    family (see ``_first_rows``)."""
    if sort is None:
        sort = SORTS["waiting"] if ascending else SORTS["newest"]
    if before is not None:
        found = _first_rows(rows, _past(sort, before, forward=False), sort, size + 1, split, reverse=True)
        more_before = len(found) > size
        page = list(reversed(found[:size]))
        return Page(
            items=page,
            next_after=page[-1].pk if page else None,
            prev_before=page[0].pk if page and more_before else None,
            is_first=not more_before,
        )
    condition = _past(sort, after, forward=True) if after is not None else Q()
    found = _first_rows(rows, condition, sort, size + 1, split)
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
    sort: Sort,
    after: int | None = None,
    before: int | None = None,
    size: int | None = None,
    split: bool = True,
    decided: bool = False,
) -> QueuePage:
    """The Inbox queue: one keyset page as display rows (one query per family when split, and
    one for the current heads of the page's pending updates, if any), each row's claimant joined
    in the same query. ``decided``: the rows are decided, and carry their reviewer and decision
    time (joined, no extra query)."""
    related = ["latest", "claim__claimed_by", "viewing_by"]
    if decided:
        related += ["decision", "decision__reviewer"]
    page = keyset_page(
        rows.select_related(*related),
        sort=sort,
        after=after,
        before=before,
        size=PAGE_SIZE if size is None else size,
        split=split,
    )
    heads = _target_heads(page.items)
    duplicates = near_duplicate_flags(page.items)
    return QueuePage(
        rows=[
            replace(queue_row(c, heads=heads), near_duplicate=duplicates.get(c.pk), viewing=viewing_of(c))
            for c in page.items
        ],
        next_after=page.next_after,
        prev_before=page.prev_before,
        is_first=page.is_first,
    )


@dataclass(frozen=True)
class Position:
    """Where a candidate stands in a queue: ``number`` of ``total`` (None: not among the first
    ``COUNT_CAP`` rows, or not in this queue at all)."""

    number: int | None
    total: CappedCount
    in_queue: bool


def queue_position(rows: QuerySet[Candidate], pk: int, *, sort: Sort, cap: int | None = None) -> Position:
    """ "12 of 34": one bounded query over the first ``cap + 1`` rows in display order."""
    cap = counts.COUNT_CAP if cap is None else cap
    one, zero = Value(1), Value(0)
    found = (
        rows.annotate(
            is_before=Case(
                When(_past(sort, pk, forward=False), then=one), default=zero, output_field=IntegerField()
            ),
            is_here=Case(When(pk=pk, then=one), default=zero, output_field=IntegerField()),
        )
        .order_by(*sort.order())[: cap + 1]
        .aggregate(
            total=Count("pk"),
            before=Coalesce(Sum("is_before"), zero),
            here=Coalesce(Sum("is_here"), zero),
        )
    )
    total = CappedCount(value=min(found["total"], cap), more=found["total"] > cap)
    here = bool(found["here"])
    return Position(number=found["before"] + 1 if here else None, total=total, in_queue=here or total.more)


def candidate_rows(*, scope_id: str, status: str, family: str | None) -> QuerySet[Candidate]:
    """Candidates of one scope with one status (and family), for the API's pages."""
    rows: QuerySet[Candidate] = Candidate.objects.filter(scope_id=scope_id, status=status)
    return rows.filter(family=family) if family is not None else rows


def candidate_page(rows: QuerySet[Candidate], *, after: int | None, size: int) -> Page:
    """Proposal order (oldest first), ``size`` per page; rows carry their result head."""
    return keyset_page(rows.select_related("result_head"), after=after, size=size)


def neighbour(
    rows: QuerySet[Candidate], pk: int, *, sort: Sort, forward: bool = True, split: bool = True
) -> int | None:
    """The pk of the row after (or before) ``pk`` in ``sort`` order, or None."""
    condition = _past(sort, pk, forward=forward)
    found = _first_rows(rows.only("pk"), condition, sort, 1, split, reverse=not forward)
    return found[0].pk if found else None
