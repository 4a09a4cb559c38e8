"""Claims ("Assign to me"): which reviewer is working on a pending candidate. Advisory: a claim
never blocks a decision."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from powercontext.core.exceptions import (
    CandidateNotFound,
    CandidateTerminal,
    Conflict,
)
from review.models import Candidate, CandidateClaim


class ClaimChanged(Conflict):
    """The claim is no longer what the reviewer saw (someone else claimed or released it)."""

    code = "claim_changed"
    default_message = "The candidate's assignment changed since the page was shown."


@dataclass(frozen=True)
class ClaimOutcome:
    """What a claim write did: ``changed`` False when it was already so; ``previous`` is the
    username of the reviewer who held the claim before (a take-over), if any."""

    changed: bool
    previous: str | None = None


def _lock_candidate(scope_id: str, candidate_id: str) -> Candidate:
    candidate = (
        Candidate.objects.select_for_update(of=("self",))
        .filter(scope_id=scope_id, candidate_id=candidate_id)
        .first()
    )
    if candidate is None:
        raise CandidateNotFound()
    return candidate


def _current_claim(candidate: Candidate) -> CandidateClaim | None:
    return CandidateClaim.objects.select_related("claimed_by").filter(candidate=candidate).first()


@transaction.atomic(durable=True)
def candidate_claim(
    *, scope_id: str, candidate_id: str, reviewer: User, expected_claimant: int | None
) -> ClaimOutcome:
    """Assign the pending candidate to ``reviewer`` (a take-over when another reviewer holds it).

    ``expected_claimant`` is the user id of the claimant the reviewer saw (None: unclaimed); the
    claim is written only while it is still that one, so "Assign to me" never silently takes an
    item someone claimed a moment ago (``ClaimChanged``; the page then shows who and offers the
    take-over). Claims are advisory: they never block a decision. Locks the candidate row.
    Raises ``CandidateNotFound``, ``CandidateTerminal`` (decided: nothing left to claim),
    ``ClaimChanged``.
    """
    candidate = _lock_candidate(scope_id, candidate_id)
    if candidate.status != Candidate.Status.PENDING:
        raise CandidateTerminal(details={"status": candidate.status})
    claim = _current_claim(candidate)
    holder = claim.claimed_by_id if claim is not None else None
    if holder == reviewer.pk:
        return ClaimOutcome(changed=False)
    if holder != expected_claimant:
        raise ClaimChanged()
    now = timezone.now()
    if claim is None:
        CandidateClaim.objects.create(candidate=candidate, claimed_by=reviewer, claimed_at=now)
        return ClaimOutcome(changed=True)
    previous = claim.claimed_by.get_username()
    CandidateClaim.objects.filter(candidate=candidate, claimed_by_id=holder).update(
        claimed_by=reviewer, claimed_at=now
    )
    return ClaimOutcome(changed=True, previous=previous)


@transaction.atomic(durable=True)
def candidate_unclaim(*, scope_id: str, candidate_id: str, reviewer: User) -> ClaimOutcome:
    """Release ``reviewer``'s own claim ("Unassign"); a claim held by someone else is left alone
    (``changed`` False: take it over with ``candidate_claim`` instead). Locks the candidate row.
    Raises ``CandidateNotFound``.
    """
    candidate = _lock_candidate(scope_id, candidate_id)
    deleted, _ = CandidateClaim.objects.filter(candidate=candidate, claimed_by=reviewer).delete()
    return ClaimOutcome(changed=deleted > 0)
