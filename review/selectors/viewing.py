"""Who has a pending candidate open in the Inbox (the soft "viewing" marker written by
``review.services.viewing``), as the queue rows and the candidate page show it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from review.models import Candidate


@dataclass(frozen=True)
class ViewingView:
    """A live marker: who is reviewing the candidate, and until when unless renewed."""

    user_id: int
    username: str
    until: datetime


def viewing_of(candidate: Candidate, now: datetime | None = None) -> ViewingView | None:
    """The candidate's live marker (None when there is none or it expired); needs ``viewing_by``
    selected to stay query-free."""
    if candidate.status != Candidate.Status.PENDING or candidate.viewing_by_id is None:
        return None
    until = candidate.viewing_until
    if until is None or until <= (timezone.now() if now is None else now) or candidate.viewing_by is None:
        return None
    return ViewingView(
        user_id=candidate.viewing_by_id, username=candidate.viewing_by.get_username(), until=until
    )


def viewing_holder(pk: int) -> ViewingView | None:
    """The live marker of candidate ``pk`` as stored now (one query)."""
    candidate = Candidate.objects.select_related("viewing_by").filter(pk=pk).first()
    return viewing_of(candidate) if candidate is not None else None
