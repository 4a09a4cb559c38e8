"""Request changes, comment, and the proposer's answer (issue 32): a review thread on a candidate.

Like a pull request review's "request changes": a reviewer sends a pending candidate back to its
proposer with a required comment (and optional per-field comments); the candidate leaves the
queue as ``changes_requested``. The proposer reads the thread and answers with a complete new
proposal, which becomes the SAME candidate's next version, pending again in its old place in
the queue (the queue orders by candidate, and the candidate is the same row). A reviewer may
also comment without a decision.

Every write is one transaction that locks the candidate, checks the version the caller saw
(compare-and-swap) and writes one insert-only ``ReviewAction`` row: the thread entry and its
audit in one (``changes_requested``, ``commented``, ``changes_withdrawn``). Comments are untrusted
text: they pass the redaction door before they are stored, and are rendered as data.

Undo (``changes_undo``): the reviewer who requested changes may withdraw the request within
``settings.POWERCONTEXT_REVIEW_UNDO_MINUTES`` while the proposer has not answered: the candidate
is pending again at the same version, and a ``changes_withdrawn`` row records it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from powercontext.core import families
from powercontext.core.exceptions import (
    CandidateConflict,
    CandidateNotFound,
    CandidateTerminal,
    PowerContextError,
)
from powercontext.core.secret_door import redact_text
from powercontext.core.transactions import compare_and_swap
from review.models import Candidate, CandidateClaim, ReviewAction
from review.services.rows import lock_candidate, write_version
from review.services.submission import Submission, check_evidence, invalid
from review.services.undo import UndoExpired, UndoForbidden, undo_window

COMMENT_MAX = 2000
THREAD = (
    ReviewAction.Action.CHANGES_REQUESTED,
    ReviewAction.Action.COMMENTED,
    ReviewAction.Action.CHANGES_WITHDRAWN,
)


def _comment(comment: str) -> str:
    text = (comment or "").strip()
    if not text:
        raise invalid(["comment"], "A comment is required.")
    if len(text) > COMMENT_MAX:
        raise invalid(["comment"], f"A comment holds at most {COMMENT_MAX} characters.")
    return redact_text(text)


def _field_comments(family: str, field_comments: dict[str, str] | None) -> dict[str, str] | None:
    """The per-field comments, checked against the family's proposal fields, blank ones dropped,
    redacted; None when there are none."""
    if not field_comments:
        return None
    names = families.spec(family).field_names
    out: dict[str, str] = {}
    for name, text in field_comments.items():
        if name not in names:
            raise invalid(
                ["field_comments", name],
                f"Not a field of a {family} proposal (one of: {', '.join(names)}).",
                "unknown_field",
            )
        if not isinstance(text, str) or len(text) > COMMENT_MAX:
            raise invalid(["field_comments", name], f"A comment holds at most {COMMENT_MAX} characters.")
        if text.strip():
            out[name] = redact_text(text.strip())
    return out or None


def _record(
    candidate: Candidate, action: str, reviewer: User, version: int, reason: str, fields: Any = None
) -> ReviewAction:
    return ReviewAction.objects.create(
        action=action,
        candidate=candidate,
        reviewer=reviewer,
        reason=reason,
        candidate_version=version,
        field_comments=fields,
    )


@transaction.atomic(durable=True)
def candidate_request_changes(
    *,
    scope_id: str,
    candidate_id: str,
    expected_version: int,
    comment: str,
    reviewer: User,
    field_comments: dict[str, str] | None = None,
) -> Candidate:
    """Send the exact pending version back to its proposer: status ``changes_requested``, out
    of the queue, with the (redacted) comment and per-field comments in its thread.

    Raises ``InvalidRequest`` (no comment, too long, a field the family does not have),
    ``CandidateNotFound``, ``CandidateTerminal`` (not pending), ``CandidateConflict`` (stale version).
    """
    text = _comment(comment)
    candidate = lock_candidate(
        scope_id, candidate_id, status=Candidate.Status.PENDING, expected_version=expected_version
    )
    fields = _field_comments(candidate.family, field_comments)
    match = {"pk": candidate.pk, "version": expected_version, "status": Candidate.Status.PENDING}
    if not compare_and_swap(Candidate, match=match, changes={"status": Candidate.Status.CHANGES_REQUESTED}):
        raise CandidateConflict(  # pragma: no cover - the row lock above serializes writers
            details={"expected_version": expected_version, "current_version": candidate.version}
        )
    CandidateClaim.objects.filter(candidate=candidate).delete()  # only pending work is claimed
    _record(candidate, ReviewAction.Action.CHANGES_REQUESTED, reviewer, expected_version, text, fields)
    candidate.refresh_from_db()
    return candidate


@transaction.atomic(durable=True)
def candidate_comment(
    *,
    scope_id: str,
    candidate_id: str,
    expected_version: int,
    comment: str,
    reviewer: User,
    field_comments: dict[str, str] | None = None,
) -> Candidate:
    """Add a comment without a decision on the version the reviewer saw, of a pending candidate
    or one waiting for its proposer's answer. The status does not change.

    Raises what ``candidate_request_changes`` raises; ``CandidateTerminal`` for a decided one.
    """
    text = _comment(comment)
    candidate = (
        Candidate.objects.select_for_update(of=("self",))
        .filter(scope_id=scope_id, candidate_id=candidate_id)
        .first()
    )
    if candidate is None:
        raise CandidateNotFound()
    if candidate.status not in (Candidate.Status.PENDING, Candidate.Status.CHANGES_REQUESTED):
        raise CandidateTerminal(details={"status": candidate.status})
    if candidate.version != expected_version:
        raise CandidateConflict(
            details={"expected_version": expected_version, "current_version": candidate.version}
        )
    fields = _field_comments(candidate.family, field_comments)
    _record(candidate, ReviewAction.Action.COMMENTED, reviewer, expected_version, text, fields)
    return candidate


@transaction.atomic(durable=True)
def candidate_answer(
    *,
    scope_id: str,
    candidate_id: str,
    expected_version: int,
    submission: Submission,
    proposed_by: User | None = None,
) -> Candidate:
    """The proposer's answer to a change request: ``submission`` (a complete proposal of the
    candidate's family, already schema-valid) becomes version ``expected_version + 1`` of the
    same candidate, pending again (its place in the queue kept: the queue orders by candidate).

    Raises ``CandidateNotFound`` (not in this scope), ``CandidateTerminal`` (changes were not
    requested, or were withdrawn), ``CandidateConflict`` (stale version), ``InvalidRequest`` /
    ``ArtifactConflict`` (the evidence rules of a proposal).
    """
    candidate = lock_candidate(
        scope_id,
        candidate_id,
        status=Candidate.Status.CHANGES_REQUESTED,
        expected_version=expected_version,
        wrong_status="Only a candidate whose reviewer requested changes can be answered.",
    )
    check_evidence(scope_id, candidate.family, submission)
    version = write_version(candidate, expected_version + 1, submission, proposed_by)
    match = {"pk": candidate.pk, "version": expected_version, "status": Candidate.Status.CHANGES_REQUESTED}
    changes = {"version": F("version") + 1, "latest": version, "status": Candidate.Status.PENDING}
    if not compare_and_swap(Candidate, match=match, changes=changes):
        raise CandidateConflict(  # pragma: no cover - the row lock above serializes writers
            details={"expected_version": expected_version, "current_version": candidate.version}
        )
    candidate.refresh_from_db()
    return candidate


def _undo_refusal(candidate: Candidate, reviewer: User, now: datetime) -> PowerContextError | None:
    if candidate.status != Candidate.Status.CHANGES_REQUESTED:
        return CandidateTerminal(
            "There is no open change request on this candidate to undo.", details={"status": candidate.status}
        )
    request = (
        ReviewAction.objects.filter(candidate=candidate, action=ReviewAction.Action.CHANGES_REQUESTED)
        .order_by("-acted_at", "-pk")
        .first()
    )
    if request is None or request.candidate_version != candidate.version:  # pragma: no cover
        return CandidateConflict("The change request was already answered.")
    if request.reviewer_id != reviewer.pk:
        return UndoForbidden("Only the reviewer who requested the changes can undo the request.")
    if now - request.acted_at > undo_window():
        return UndoExpired()
    return None


def changes_undo_offered(candidate: Candidate, reviewer: User, now: datetime | None = None) -> bool:
    """Whether the candidate's page offers ``reviewer`` to undo their change request (a read;
    ``changes_undo`` checks it again under the row lock)."""
    return _undo_refusal(candidate, reviewer, now or timezone.now()) is None


@transaction.atomic(durable=True)
def changes_undo(*, candidate_pk: int, reviewer: User, now: datetime | None = None) -> Candidate:
    """Withdraw the open change request on candidate ``candidate_pk``: pending again at the same
    version, recorded as ``changes_withdrawn``. Raises ``CandidateNotFound``,
    ``CandidateTerminal`` (no open request: answered, withdrawn or never made), ``UndoForbidden``
    (another reviewer's request), ``UndoExpired`` (past the undo window)."""
    candidate = Candidate.objects.select_for_update(of=("self",)).filter(pk=candidate_pk).first()
    if candidate is None:
        raise CandidateNotFound()
    if (refusal := _undo_refusal(candidate, reviewer, now or timezone.now())) is not None:
        raise refusal
    match = {"pk": candidate.pk, "version": candidate.version, "status": Candidate.Status.CHANGES_REQUESTED}
    if not compare_and_swap(Candidate, match=match, changes={"status": Candidate.Status.PENDING}):
        raise CandidateConflict()  # pragma: no cover - the row lock above serializes writers
    reason = f"Undo of the change request on candidate #{candidate.pk}."
    _record(candidate, ReviewAction.Action.CHANGES_WITHDRAWN, reviewer, candidate.version, reason)
    candidate.refresh_from_db()
    return candidate


@dataclass(frozen=True)
class ChangesOutcome:
    """One item of a bulk change request or undo: ``done``, or ``conflict``/``not_found`` with
    the error code and message."""

    pk: int
    outcome: str
    code: str | None = None
    message: str | None = None


def candidates_request_changes_bulk(
    *, items: list[tuple[int, int]], comment: str, reviewer: User
) -> list[ChangesOutcome]:
    """Request changes on each ``(candidate pk, expected_version)`` with the same comment, each
    in its OWN transaction (one conflict never undoes the others). Opens no transaction itself.
    Raises ``InvalidRequest`` for a missing comment before changing anything."""
    _comment(comment)
    unique = list(dict.fromkeys(items))
    identities = {
        pk: (scope_id, candidate_id)
        for pk, scope_id, candidate_id in Candidate.objects.filter(
            pk__in=[pk for pk, _ in unique]
        ).values_list("pk", "scope_id", "candidate_id")
    }
    outcomes: list[ChangesOutcome] = []
    for pk, expected_version in unique:
        if pk not in identities:
            outcomes.append(ChangesOutcome(pk, "not_found", CandidateNotFound.code))
            continue
        scope_id, candidate_id = identities[pk]
        try:
            candidate_request_changes(
                scope_id=scope_id,
                candidate_id=candidate_id,
                expected_version=expected_version,
                comment=comment,
                reviewer=reviewer,
            )
        except (CandidateConflict, CandidateTerminal, CandidateNotFound) as exc:
            outcomes.append(ChangesOutcome(pk, "conflict", exc.code, exc.message))
        else:
            outcomes.append(ChangesOutcome(pk, "done"))
    return outcomes


def changes_undo_bulk(
    *, candidate_pks: list[int], reviewer: User, now: datetime | None = None
) -> list[ChangesOutcome]:
    """``changes_undo`` for each candidate (a bulk request's batch), each in its own transaction."""
    outcomes: list[ChangesOutcome] = []
    for pk in dict.fromkeys(candidate_pks):
        try:
            changes_undo(candidate_pk=pk, reviewer=reviewer, now=now)
        except (CandidateTerminal, CandidateConflict, CandidateNotFound, UndoForbidden, UndoExpired) as exc:
            outcomes.append(ChangesOutcome(pk, "conflict", exc.code, exc.message))
        else:
            outcomes.append(ChangesOutcome(pk, "done"))
    return outcomes
