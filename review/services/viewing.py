"""Viewing markers: which reviewer has a pending candidate open, until when.

A soft marker (``Candidate.viewing_by`` / ``viewing_until``) that expires on its own after
``POWERCONTEXT_REVIEW_VIEWING_SECONDS`` and that the open page renews. It never blocks anything:
another reviewer may still open and decide the candidate (the manual claim stays the hard one).
What it changes is where Next, Previous and the page after a decision go: they skip candidates
another reviewer is viewing or has claimed, and they take the one they land on by marking it in
the same step (``viewing_take_next``), so two reviewers pressing Next at the same moment land on
different candidates.

Every marking is an ``UPDATE`` whose ``WHERE`` is the compare-and-swap: the marker is taken only
while it is free, expired or already the caller's. On PostgreSQL the second of two concurrent
updates waits for the first's row lock and re-checks the condition against the row the first
wrote, so exactly one of them takes it.

A reviewer holds at most ``POWERCONTEXT_REVIEW_VIEWING_MAX`` live markers: taking or renewing one
more releases her oldest in the same transaction (serialized per reviewer by a lock on her user
row), so a script renewing markers on every item hides at most that many items from the others,
never the whole queue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from review.models import Candidate, CandidateClaim

# How many candidates Next tries to take before giving up (each failed try means another
# reviewer took that one a moment ago).
TAKE_TRIES = 25


def viewing_seconds() -> int:
    return int(settings.POWERCONTEXT_REVIEW_VIEWING_SECONDS)


def _free_for(reviewer: User, now: datetime) -> Q:
    """No live marker of another reviewer (none, expired, or the reviewer's own)."""
    return Q(viewing_by__isnull=True) | Q(viewing_until__lte=now) | Q(viewing_by=reviewer)


def free_rows(rows: QuerySet[Candidate], reviewer: User) -> QuerySet[Candidate]:
    """``rows`` less the candidates another reviewer is on: viewing (a live marker) or claimed."""
    claimed_by_other = CandidateClaim.objects.filter(candidate=OuterRef("pk")).exclude(claimed_by=reviewer)
    return rows.filter(_free_for(reviewer, timezone.now())).filter(~Exists(claimed_by_other))


def viewing_max() -> int:
    return int(settings.POWERCONTEXT_REVIEW_VIEWING_MAX)


@transaction.atomic(durable=True)
def viewing_mark(*, pk: int, reviewer: User) -> bool:
    """Mark the pending candidate ``pk`` as viewed by ``reviewer`` for the next
    ``viewing_seconds()`` (or renew the reviewer's own marker), releasing her oldest live markers
    beyond ``viewing_max()``. One transaction: the marking ``UPDATE`` is a compare-and-swap on the
    marker's expiry; True when the reviewer now holds it, False when another reviewer's marker is
    live or the candidate is not pending (nothing written).

    The reviewer's user row is locked first, so two of her requests (two tabs, a script) mark
    one after the other and never hold more than ``viewing_max()`` between them."""
    list(User.objects.select_for_update().filter(pk=reviewer.pk).values_list("pk", flat=True))
    now = timezone.now()
    updated = Candidate.objects.filter(
        _free_for(reviewer, now), pk=pk, status=Candidate.Status.PENDING
    ).update(viewing_by=reviewer, viewing_until=now + timedelta(seconds=viewing_seconds()))
    if updated != 1:
        return False
    # Her live markers beyond the newest ``viewing_max()`` (this one the newest): one ``UPDATE``
    # whatever their number, so a page that marks costs the same queries every time.
    beyond = (
        Candidate.objects.filter(viewing_by=reviewer, viewing_until__gt=now)
        .exclude(pk=pk)
        .order_by("-viewing_until", "-pk")
        .values("pk")[viewing_max() - 1 :]
    )
    Candidate.objects.filter(pk__in=beyond, viewing_by=reviewer).update(viewing_by=None, viewing_until=None)
    return True


def viewing_release(*, pk: int, reviewer: User) -> bool:
    """Drop the reviewer's own marker on ``pk`` (moving on to another candidate); another
    reviewer's marker is left alone. One ``UPDATE``; True when a marker was dropped."""
    return (
        Candidate.objects.filter(pk=pk, viewing_by=reviewer).update(viewing_by=None, viewing_until=None) == 1
    )


@dataclass(frozen=True)
class Taken:
    """Where Next lands: ``pk`` (None: nothing left), and how many candidates it found taken by
    another reviewer in the moment between choosing and marking them."""

    pk: int | None
    lost: int = 0


def viewing_take_next(
    rows: QuerySet[Candidate],
    *,
    start: int,
    reviewer: User,
    neighbour: Callable[[QuerySet[Candidate], int], int | None],
    skip_others: bool = True,
) -> Taken:
    """The candidate after ``start`` among ``rows`` (``neighbour`` gives it in the queue's order,
    either direction) that the reviewer takes by marking it. With ``skip_others`` (the default),
    candidates another reviewer is on are skipped, and one that another reviewer marks between
    the choice and the marking is skipped too: the next one is tried instead, up to
    ``TAKE_TRIES`` times. Without it, the neighbour is returned whether or not the marker could be
    taken (the reviewer asked to see items others are on). The reviewer's own marker on ``start``
    is released first (its own ``UPDATE``), so the item they leave is free for others at once."""
    viewing_release(pk=start, reviewer=reviewer)
    if not skip_others:
        found = neighbour(rows, start)
        if found is not None:
            viewing_mark(pk=found, reviewer=reviewer)
        return Taken(found)
    at, lost = start, 0
    for _ in range(TAKE_TRIES):
        found = neighbour(free_rows(rows, reviewer), at)
        if found is None or viewing_mark(pk=found, reviewer=reviewer):
            return Taken(found, lost)
        at, lost = found, lost + 1
    return Taken(None, lost)
