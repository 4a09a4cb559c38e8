"""Undo: take back one's own decision shortly after taking it, built on the reversible decisions.

A decision commits at once; Undo reverses it afterwards, so no reviewer ever waits behind a
timer. Decisions are insert-only: an undo never changes or removes a ``ReviewDecision`` (nor the
decided candidate); it writes what the take-back actions write, and proposes the decided content
again as a NEW pending candidate, which the reviewer lands on:

- a rejection: reopened (``reversal.candidate_reopen_within``);
- an approval that created an Experience/Skill: its head retired (out of recall, revisions kept),
  and the content re-proposed as a new candidate (a new artifact if approved again);
- an approved update: its head reverted to the revision before it (a new revision with the old
  content), and the content re-proposed as an update of that new revision (the same diff).

Each undo is one transaction, audited by ``ReviewAction`` rows whose reason says "Undo" (a
``reopened`` row naming the new candidate, plus ``retired`` or ``reverted`` for an approval).
It is a compare-and-swap on what the decision wrote: if the artifact's head moved since (someone
revised, retired or reverted it), or the decision was already taken back, Undo is refused and
nothing is changed. Only the reviewer who decided may undo, and only within
``settings.POWERCONTEXT_REVIEW_UNDO_MINUTES`` of the decision; after that (or for anyone else),
the take-back actions on the candidate's page remain.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from powercontext.core.exceptions import (
    ArtifactConflict,
    ArtifactNotFound,
    CandidateConflict,
    CandidateNotFound,
    CandidateTerminal,
    Conflict,
    Forbidden,
    InvariantFailure,
    PowerContextError,
)
from powercontext.core.models import Artifact
from review.models import Candidate, ReviewAction, ReviewDecision
from review.services import retargeted_refs
from review.services.reversal import (
    artifact_retire_within,
    artifact_revert_within,
    candidate_reopen_within,
    repropose,
)


class UndoForbidden(Forbidden):
    code = "undo_forbidden"
    default_message = "Only the reviewer who took a decision can undo it."


class UndoExpired(Conflict):
    code = "undo_expired"
    default_message = "The time to undo this decision has passed."


class UndoHeadMoved(Conflict):
    code = "undo_head_moved"
    default_message = "The approved artifact changed since the decision."


def undo_window() -> timedelta:
    return timedelta(minutes=settings.POWERCONTEXT_REVIEW_UNDO_MINUTES)


def _reason(decision: ReviewDecision) -> str:
    return f"Undo of the {decision.decision} decision on candidate #{decision.candidate_id}."


def _refusal(
    candidate: Candidate, decision: ReviewDecision, reviewer: User, now: datetime | None
) -> PowerContextError | None:
    """Why ``reviewer`` may not undo ``decision`` now (checks other than the artifact's head)."""
    if decision.reviewer_id != reviewer.pk:
        return UndoForbidden()
    if (now or timezone.now()) - decision.decided_at > undo_window():
        minutes = settings.POWERCONTEXT_REVIEW_UNDO_MINUTES
        return UndoExpired(
            f"Undo is possible for {minutes} minutes after a decision; this one is older. "
            "Use Reopen, Retire or Revert on the candidate's page."
        )
    if ReviewAction.objects.filter(candidate=candidate, action=ReviewAction.Action.REOPENED).exists():
        return CandidateConflict("This decision was already taken back.")
    return None


def undo_offered(candidate: Candidate, reviewer: User, now: datetime | None = None) -> bool:
    """Whether a decided candidate's page offers ``reviewer`` Undo: their decision, within the
    window, not taken back, and (an approval) its artifact still as the approval left it. A read;
    ``decision_undo`` checks all of it again under its locks."""
    if candidate.status == Candidate.Status.PENDING:
        return False
    decision = ReviewDecision.objects.filter(candidate=candidate).first()
    if decision is None or _refusal(candidate, decision, reviewer, now) is not None:
        return False
    if decision.decision == ReviewDecision.Decision.REJECTED:
        return True
    head_id, revision = decision.result_head_id, decision.result_revision
    if head_id is None or revision is None:  # pragma: no cover - an approval always has its result
        return False
    return Artifact.objects.filter(
        pk=head_id, current_revision=revision, state=Artifact.State.ACTIVE
    ).exists()


@transaction.atomic(durable=True)
def decision_undo(*, candidate_pk: int, reviewer: User, now: datetime | None = None) -> Candidate:
    """Undo the decision on candidate ``candidate_pk`` (see the module); returns the new pending
    candidate that holds the decided content again.

    Raises ``CandidateNotFound`` (no such candidate or no decision), ``UndoForbidden`` (another
    reviewer's decision), ``UndoExpired`` (past the window), ``CandidateConflict`` (already taken
    back), ``UndoHeadMoved`` (the approved artifact's head is no longer what the approval wrote).
    """
    candidate = (
        Candidate.objects.select_for_update(of=("self",))  # serializes two undos of one decision
        .filter(pk=candidate_pk)
        .select_related("latest")
        .first()
    )
    decision = ReviewDecision.objects.filter(candidate_id=candidate_pk).first()
    if candidate is None or decision is None or candidate.latest is None:
        raise CandidateNotFound("There is no decision on this candidate to undo.")
    if (refusal := _refusal(candidate, decision, reviewer, now)) is not None:
        raise refusal
    reason = _reason(decision)
    if decision.decision == ReviewDecision.Decision.REJECTED:
        return candidate_reopen_within(
            scope_id=candidate.scope_id,
            candidate_id=candidate.candidate_id,
            expected_version=decision.version,
            reason=reason,
            reviewer=reviewer,
        )
    head, revision, latest = decision.result_head, decision.result_revision, candidate.latest
    if head is None or revision is None:  # pragma: no cover - an approval always has its result
        raise InvariantFailure()
    where = {"scope_id": head.scope_id, "family": head.family, "artifact_id": head.artifact_id}
    try:
        if latest.target is None:
            artifact_retire_within(
                **where, expected_revision=revision, reason=reason, reviewer=reviewer, candidate=candidate
            )
            return repropose(candidate, latest, reviewer, reason=reason)
        artifact_revert_within(
            **where,
            expected_revision=revision,
            to_revision=revision - 1,
            reason=reason,
            reviewer=reviewer,
            candidate=candidate,
        )
    except (ArtifactConflict, ArtifactNotFound) as exc:
        raise UndoHeadMoved(
            f"The approved {head.family} changed after this approval (which wrote revision {revision}): "
            "someone else acted on it, and Undo does not revert their work. Nothing was changed; "
            "open the candidate to see what it is now.",
            details=exc.details,
        ) from exc
    target, refs = retargeted_refs(latest.artifact_refs, latest.target, revision + 1)
    return repropose(candidate, latest, reviewer, reason=reason, target=target, artifact_refs=refs)


@dataclass(frozen=True)
class UndoOutcome:
    """One item of ``decisions_undo``: ``reproposed`` is the new pending candidate's pk when
    undone; otherwise ``code`` and ``message`` say why not."""

    candidate_pk: int
    reproposed: int | None
    code: str | None = None
    message: str | None = None


UNDO_REFUSALS = (
    UndoForbidden,
    UndoExpired,
    UndoHeadMoved,
    CandidateConflict,
    CandidateTerminal,
    CandidateNotFound,
)


def decisions_undo(
    *, candidate_pks: list[int], reviewer: User, now: datetime | None = None
) -> list[UndoOutcome]:
    """Undo each decision (a bulk decision's batch) in its OWN transaction, in order: one that
    cannot be undone never stops the others, and each says why. Opens no transaction itself."""
    outcomes: list[UndoOutcome] = []
    for pk in dict.fromkeys(candidate_pks):
        try:
            copy = decision_undo(candidate_pk=pk, reviewer=reviewer, now=now)
        except UNDO_REFUSALS as exc:
            outcomes.append(UndoOutcome(pk, None, exc.code, exc.message))
        else:
            outcomes.append(UndoOutcome(pk, copy.pk))
    return outcomes
