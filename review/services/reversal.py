"""Reversible decisions: reopen a rejected candidate, retire or revert an approved artifact.

Each public function is one transaction (its ``*_within`` body runs inside a caller's, as
``review.services.undo`` does): it locks what it changes, checks the version or revision the
reviewer saw (compare-and-swap), changes it (artifacts only through the artifact kernel) and
writes one ``ReviewAction`` audit row with the reviewer and the reason.

- Reopen proposes the rejected version's content (proposal, evidence, target, reason) again as a
  NEW pending candidate, written by whoever wrote that content (the reopener is audited); the rejected candidate and its
  ``ReviewDecision`` are never changed or removed (decisions are insert-only), and the audit row
  links the two (``reopened_as``). A second reopen of the same rejection is refused.
- Retire takes the head out of recall (``artifact_head_retire``); its revisions stay.
- Revert writes a new revision whose content is an earlier revision's (a retired head may also be
  reverted to its current revision: that restores it to recall, the undo of a retire). Under
  four-eyes review it proposes that revision instead, for another reviewer to approve.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from powercontext.core import families
from powercontext.core.exceptions import (
    ArtifactConflict,
    ArtifactNotFound,
    CandidateConflict,
)
from powercontext.core.models import Artifact, ArtifactRevision
from powercontext.core.transactions import require_transaction
from powercontext.memory.artifacts import (
    Refs,
    artifact_head_lock,
    artifact_head_retire,
    artifact_revision_create,
    head_ref,
)
from powercontext.search.fulltext import analyzer
from review.models import Candidate, CandidateVersion, ReviewAction
from review.services import candidate_propose_within
from review.services.rows import lock_candidate, write_version
from review.services.submission import Submission, invalid

REVIEWED = (families.Family.EXPERIENCE, families.Family.SKILL)


def _reason(reason: str) -> str:
    if not reason.strip():
        raise invalid(["reason"], "A reason is required.")
    return reason.strip()


def candidate_reopen_within(
    *, scope_id: str, candidate_id: str, expected_version: int, reason: str, reviewer: User
) -> Candidate:
    """Propose a rejected candidate's content again as a new pending candidate (version 1, written
    by ``reviewer``); the rejected candidate, its versions and its decision stay as they are.

    Raises ``CandidateNotFound``, ``CandidateTerminal`` (not rejected), ``CandidateConflict``
    (stale version, or this rejection was already reopened), ``InvalidRequest`` (no reason).
    """
    require_transaction("this review write")
    reason = _reason(reason)
    candidate = lock_candidate(
        scope_id,
        candidate_id,
        status=Candidate.Status.REJECTED,
        expected_version=expected_version,
        wrong_status="Only a rejected candidate can be reopened.",
    )
    assert candidate.latest is not None  # lock_candidate checks it
    earlier = ReviewAction.objects.filter(candidate=candidate, action=ReviewAction.Action.REOPENED).first()
    if earlier is not None:  # the row lock above serializes two reopens of one rejection
        raise CandidateConflict(
            "This rejection was already reopened.", details={"reopened_as": earlier.reopened_as_id}
        )
    return repropose(candidate, candidate.latest, reviewer, reason=reason)


def repropose(
    candidate: Candidate,
    old: CandidateVersion,
    reviewer: User,
    *,
    reason: str,
    target: dict[str, Any] | None = None,
    artifact_refs: list[dict[str, Any]] | None = None,
) -> Candidate:
    """Inside the caller's transaction: propose ``old``'s content (proposal, evidence, target,
    reason) again as a new pending candidate, audited as a ``reopened`` action of ``candidate``
    by ``reviewer`` naming the copy. ``target``/``artifact_refs`` replace the old ones (an undone
    update re-targets the revision its undo wrote).

    Authorship follows the text (issue 32): the copy's version is written by whoever wrote
    ``old``, not by the reviewer who reopened it, and four-eyes review counts every writer of
    the candidates it was copied from (``review.selectors.governance``), so a reopen or an Undo
    never makes the text's writer free to approve it, nor its reopener its writer."""
    require_transaction("this review write")
    copy = Candidate.objects.create(
        scope_id=candidate.scope_id,
        candidate_id=f"cand_{uuid.uuid4().hex}",
        family=candidate.family,
        version=1,
    )
    submission = Submission(
        proposal=old.proposal,
        source_refs=old.source_refs,
        artifact_refs=old.artifact_refs if artifact_refs is None else artifact_refs,
        target=old.target if target is None else target,
        reason=old.reason,
    )
    copy.latest = write_version(copy, 1, submission, old.created_by)
    copy.save(update_fields=["latest"])
    ReviewAction.objects.create(
        action=ReviewAction.Action.REOPENED,
        candidate=candidate,
        reviewer=reviewer,
        reason=reason,
        candidate_version=old.version,
        reopened_as=copy,
    )
    return copy


def _lock_head(
    scope_id: str, family: str, artifact_id: str, expected_revision: int, expected_state: str
) -> Artifact:
    if family not in REVIEWED:
        raise invalid(["family"], "Only an Experience or a Skill can be retired or reverted here.")
    head = artifact_head_lock(scope_id=scope_id, family=family, artifact_id=artifact_id)
    if head is None or head.current_revision == 0:
        raise ArtifactNotFound()
    if head.current_revision != expected_revision or head.state != expected_state:
        raise ArtifactConflict(
            f"The artifact is {head.state} at revision {head.current_revision}.",
            details={"current": head_ref(head), "state": head.state},
        )
    return head


def _audited(
    action: str, head: Artifact, candidate: Candidate | None, reviewer: User, reason: str, **extra: Any
) -> Artifact:
    """Record who changed the approved ``head`` (now at its new revision), how and why."""
    ReviewAction.objects.create(
        action=action,
        candidate=candidate,
        reviewer=reviewer,
        reason=reason,
        artifact=head,
        revision=head.current_revision,
        **extra,
    )
    return head


def artifact_retire_within(
    *,
    scope_id: str,
    family: str,
    artifact_id: str,
    expected_revision: int,
    reason: str,
    reviewer: User,
    candidate: Candidate | None = None,
) -> Artifact:
    """Retire an approved Experience/Skill at ``expected_revision``: gone from recall, its
    revisions kept. Raises ``ArtifactNotFound``, ``ArtifactConflict`` (the head moved on, or is
    already retired), ``InvalidRequest`` (no reason, not a reviewed family)."""
    require_transaction("this review write")
    reason = _reason(reason)
    head = _lock_head(scope_id, family, artifact_id, expected_revision, Artifact.State.ACTIVE)
    artifact_head_retire(head=head)
    return _audited(ReviewAction.Action.RETIRED, head, candidate, reviewer, reason)


def artifact_revert_within(
    *,
    scope_id: str,
    family: str,
    artifact_id: str,
    expected_revision: int,
    to_revision: int,
    reason: str,
    reviewer: User,
    candidate: Candidate | None = None,
    expected_state: str = Artifact.State.ACTIVE,
) -> Artifact:
    """Write revision ``expected_revision + 1`` with the content of revision ``to_revision``
    (earlier; or the current one of a retired head, which restores it), through the artifact
    kernel, so it is indexed and recalled (Experience) like an approval. Its ``artifact_refs``
    cite the revision it copies. The compare-and-swap covers the head's state too
    (``expected_state``, as the reviewer saw it), so a revert never silently undoes a retire it
    did not see. Raises ``ArtifactNotFound``, ``ArtifactConflict`` (the head moved on or changed
    state), ``InvalidRequest`` (no reason, no such earlier revision)."""
    require_transaction("this review write")
    reason = _reason(reason)
    head = _lock_head(scope_id, family, artifact_id, expected_revision, expected_state)
    highest = head.current_revision if head.state == Artifact.State.RETIRED else head.current_revision - 1
    if not 1 <= to_revision <= highest:
        raise invalid(["to_revision"], f"Revision {to_revision} is not an earlier revision of this artifact.")
    old = ArtifactRevision.objects.get(head=head, revision=to_revision)
    spec = families.spec(family)
    searchable = analyzer.searchable_text(spec.searchable_values(old.content)) if spec.recallable else None
    artifact_revision_create(
        head=head,
        expected_revision=expected_revision,
        content=old.content,
        refs=Refs(
            source_refs=list(old.source_refs),
            artifact_refs=[{"family": family, "artifact_id": artifact_id, "revision": to_revision}],
        ),
        created_by=reviewer,
        searchable_text=searchable,
    )
    return _audited(ReviewAction.Action.REVERTED, head, candidate, reviewer, reason, reverted_to=to_revision)


def artifact_revert_propose_within(
    *,
    scope_id: str,
    family: str,
    artifact_id: str,
    expected_revision: int,
    to_revision: int,
    reason: str,
    reviewer: User,
    expected_state: str = Artifact.State.ACTIVE,
) -> Candidate:
    """Revert under four-eyes review (issue 32): bringing earlier or retired content back is a
    change like any other, so instead of writing the revision it proposes it, as a pending
    update of the head (at ``expected_revision``) whose proposal is revision ``to_revision``'s
    content, written by ``reviewer``; another reviewer approves it (which also restores a retired
    head to recall). Checks and raises exactly as ``artifact_revert_within``; writes nothing to
    the artifact."""
    require_transaction("this review write")
    reason = _reason(reason)
    head = _lock_head(scope_id, family, artifact_id, expected_revision, expected_state)
    highest = head.current_revision if head.state == Artifact.State.RETIRED else head.current_revision - 1
    if not 1 <= to_revision <= highest:
        raise invalid(["to_revision"], f"Revision {to_revision} is not an earlier revision of this artifact.")
    old = ArtifactRevision.objects.get(head=head, revision=to_revision)
    target = head_ref(head)
    earlier = {**target, "revision": to_revision}
    submission = Submission(
        proposal=dict(old.content),
        source_refs=list(old.source_refs),
        artifact_refs=[target] if earlier == target else [target, earlier],
        target=target,
        reason=f"Revert to revision {to_revision}: {reason}",
    )
    return candidate_propose_within(
        scope_id=scope_id, family=family, submission=submission, proposed_by=reviewer
    )


# The public services: each ``*_within`` body as one durable transaction of its own (the Inbox's
# take-back actions); ``review.services.undo`` runs the bodies inside its own transaction.
candidate_reopen = transaction.atomic(durable=True)(candidate_reopen_within)
artifact_retire = transaction.atomic(durable=True)(artifact_retire_within)
artifact_revert = transaction.atomic(durable=True)(artifact_revert_within)
artifact_revert_propose = transaction.atomic(durable=True)(artifact_revert_propose_within)
