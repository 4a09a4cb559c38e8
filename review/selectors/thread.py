"""A candidate's review thread (``review.services.changes``): the reviewers' change requests,
comments and withdrawals, and, for the Inbox, the versions that answered them with their diffs."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from review.models import Candidate, ReviewAction
from review.selectors.candidate import HistoryItem, candidate_versions, history_items, labels

THREAD = (
    ReviewAction.Action.CHANGES_REQUESTED,
    ReviewAction.Action.COMMENTED,
    ReviewAction.Action.CHANGES_WITHDRAWN,
)


@dataclass(frozen=True)
class FieldComment:
    name: str
    label: str
    text: str


@dataclass(frozen=True)
class ThreadComment:
    """One reviewer entry: ``kind`` is changes_requested, commented or changes_withdrawn, on
    candidate ``version``; per-field comments in the family's field order."""

    kind: str
    version: int
    reviewer: str
    comment: str
    fields: tuple[FieldComment, ...]
    at: datetime


def _comment(family: str, row: ReviewAction) -> ThreadComment:
    given = row.field_comments if isinstance(row.field_comments, dict) else {}
    fields = tuple(
        FieldComment(name, label, str(given[name])) for name, label in labels(family) if name in given
    )
    return ThreadComment(
        kind=row.action,
        version=row.candidate_version or 0,
        reviewer=row.reviewer.get_username(),
        comment=row.reason,
        fields=fields,
        at=row.acted_at,
    )


def threads_of(candidates: list[Candidate]) -> dict[int, list[ThreadComment]]:
    """Each candidate's thread, oldest first: one query for all of them."""
    by_pk = {c.pk: c for c in candidates}
    out: dict[int, list[ThreadComment]] = defaultdict(list)
    if not by_pk:
        return out
    rows = (
        ReviewAction.objects.filter(candidate_id__in=list(by_pk), action__in=THREAD)
        .select_related("reviewer")
        .order_by("acted_at", "pk")
    )
    for row in rows:
        assert row.candidate_id is not None
        out[row.candidate_id].append(_comment(by_pk[row.candidate_id].family, row))
    return out


def thread_of(candidate: Candidate) -> list[ThreadComment]:
    return threads_of([candidate]).get(candidate.pk, [])


@dataclass(frozen=True)
class ThreadStep:
    """One step of the Inbox thread: a version (with its changes from the one before, for an
    answer), or a reviewer's entry."""

    version: HistoryItem | None = None
    comment: ThreadComment | None = None


def thread_steps(candidate: Candidate) -> list[ThreadStep]:
    """The thread as the candidate page shows it: version 1, the entries on it, the version that
    answered them (with the diff), and so on. Empty when no reviewer wrote in the thread."""
    comments = thread_of(candidate)
    if not comments:
        return []
    on: dict[int, list[ThreadComment]] = defaultdict(list)
    for comment in comments:
        on[comment.version].append(comment)
    steps: list[ThreadStep] = []
    for item in history_items(candidate.family, candidate_versions(candidate)):
        steps.append(ThreadStep(version=item))
        steps.extend(ThreadStep(comment=comment) for comment in on[item.version.version])
    return steps
