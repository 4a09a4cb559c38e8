"""Review writes: propose, revise, rebase, resolve, approve, reject, claim. Each public function
is one transaction.

Approval is the only way an Experience or Skill revision comes to exist: in one transaction it
locks the candidate, re-checks its version and target, writes the immutable revision with its
lineage, moves the Artifact head by compare-and-swap, writes the head's deterministic
``searchable_text`` and index row (Experience only), marks the candidate approved with its
result, and records the decision. Any failure rolls all of it back.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F

from powercontext.core import families
from powercontext.core.exceptions import (
    ArtifactConflict,
    CandidateConflict,
    CandidateNotFound,
    CandidateTerminal,
    Conflict,
    InvariantFailure,
    RebaseRequired,
)
from powercontext.core.models import Artifact, ArtifactRevision
from powercontext.core.transactions import compare_and_swap, require_transaction
from powercontext.memory.artifacts import (
    Refs,
    artifact_head_create,
    artifact_head_lock,
    artifact_revision_create,
    head_ref,
)
from powercontext.search.fulltext import analyzer
from review.merge import MergeResult, merge_fields
from review.models import Candidate, CandidateClaim, ReviewDecision
from review.services.governance import SelfApprovalForbidden, check_four_eyes
from review.services.rows import lock_candidate, write_version
from review.services.submission import MAX_EVIDENCE as MAX_EVIDENCE
from review.services.submission import Submission as Submission
from review.services.submission import check_evidence, exact_ref, invalid


@transaction.atomic(durable=True)
def candidate_propose(
    *, scope_id: str, family: str, submission: Submission, proposed_by: User | None = None
) -> Candidate:
    """Store a pending candidate (version 1). Writes no Artifact revision.

    Raises ``InvalidRequest`` for missing evidence or a bad target, ``ArtifactConflict`` when the
    target is not the latest revision of its Artifact.
    """
    return candidate_propose_within(
        scope_id=scope_id, family=family, submission=submission, proposed_by=proposed_by
    )


def candidate_propose_within(
    *, scope_id: str, family: str, submission: Submission, proposed_by: User | None = None
) -> Candidate:
    """``candidate_propose`` inside the caller's transaction (asserted): for a writer that
    records what it proposed in the same unit of work (the pipeline's Phase 2)."""
    require_transaction("this review write")
    check_evidence(scope_id, family, submission)
    candidate = Candidate.objects.create(
        scope_id=scope_id, candidate_id=f"cand_{uuid.uuid4().hex}", family=family, version=1
    )
    candidate.latest = write_version(candidate, 1, submission, proposed_by)
    candidate.save(update_fields=["latest"])
    return candidate


def _lock_pending(scope_id: str, candidate_id: str, expected_version: int) -> Candidate:
    """Lock the candidate row and check it is pending at ``expected_version``."""
    return lock_candidate(
        scope_id, candidate_id, status=Candidate.Status.PENDING, expected_version=expected_version
    )


def _advance(candidate: Candidate, expected_version: int, **changes: Any) -> None:
    """Compare-and-swap the candidate head from ``expected_version``."""
    match = {"pk": candidate.pk, "version": expected_version, "status": Candidate.Status.PENDING}
    if not compare_and_swap(Candidate, match=match, changes=changes):
        raise CandidateConflict(
            details={"expected_version": expected_version, "current_version": candidate.version}
        )


@transaction.atomic(durable=True)
def candidate_revise(
    *,
    scope_id: str,
    candidate_id: str,
    expected_version: int,
    submission: Submission,
    reviewer: User,
) -> Candidate:
    """Append a complete replacement proposal as the next pending version.

    A revise never moves an update to another revision of its Artifact (issue 32): the proposal
    was written against the targeted revision, and replacing a newer head with it would drop what
    that head approved since. ``RebaseRequired`` (409) says to rebase instead (``candidate_rebase``
    and ``candidate_resolve`` run the three-way merge). Keeping the target, dropping it (the
    update becomes a new Artifact's proposal) or setting one on a candidate without one is a
    plain revise, with the target checked to be the head (``ArtifactConflict`` otherwise).
    """
    candidate = _lock_pending(scope_id, candidate_id, expected_version)
    _refuse_retarget(scope_id, candidate, submission.target)
    check_evidence(scope_id, candidate.family, submission)
    version = write_version(candidate, expected_version + 1, submission, reviewer)
    _advance(candidate, expected_version, version=F("version") + 1, latest=version)
    candidate.refresh_from_db()
    return candidate


def _refuse_retarget(scope_id: str, candidate: Candidate, requested: dict[str, Any] | None) -> None:
    """``RebaseRequired`` when ``requested`` is another revision of the Artifact the candidate's
    latest version targets."""
    current = candidate.latest.target if candidate.latest is not None else None
    if current is None or requested is None:
        return
    old, new = exact_ref(current), exact_ref(requested)
    same_artifact = (old["family"], old["artifact_id"]) == (new["family"], new["artifact_id"])
    if not same_artifact or old["revision"] == new["revision"]:
        return
    head = Artifact.objects.filter(
        scope_id=scope_id, family=old["family"], artifact_id=old["artifact_id"]
    ).first()
    raise RebaseRequired(
        details={"target": old, "requested": new, "current": head_ref(head) if head is not None else None}
    )


class MergeConflict(Conflict):
    """A rebase whose three-way merge changed some fields differently on both sides: nothing is
    written; ``details["fields"]`` names them (sorted) and ``details["onto"]`` the revision."""

    code = "merge_conflict"
    default_message = "The update and the current revision changed the same fields differently."


def retargeted_refs(
    latest_refs: list[dict[str, Any]], target: dict[str, Any], onto_revision: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The new target (``target`` at ``onto_revision``) and ``latest_refs`` with the old target's
    reference replaced by it (deduplicated, order kept)."""
    old = exact_ref(target)
    new = {**old, "revision": onto_revision}
    refs: list[dict[str, Any]] = []
    for ref in latest_refs:
        ref = new if exact_ref(ref) == old else ref
        if ref not in refs:
            refs.append(ref)
    return new, refs


def _revision_content(scope_id: str, ref: dict[str, Any], revision: int) -> dict[str, Any] | None:
    row = (
        ArtifactRevision.objects.filter(
            scope_id=scope_id, family=ref["family"], artifact_id=ref["artifact_id"], revision=revision
        )
        .values_list("content", flat=True)
        .first()
    )
    return dict(row) if row is not None else None


def _merged_onto(scope_id: str, candidate: Candidate, onto_revision: int) -> tuple[Submission, MergeResult]:
    """The rebase of the locked pending ``candidate`` onto revision ``onto_revision`` of its
    Artifact: the submission it becomes (the proposal still the update's; the target and its
    reference moved; checked, so the head is at ``onto_revision``) and the per-field three-way
    merge (base = the targeted revision, theirs = ``onto_revision``, ours = the proposal)."""
    latest = candidate.latest
    if latest is None or latest.target is None:
        raise invalid(["target"], "Only an update (a candidate with a target) can be rebased.", "no_target")
    old = exact_ref(latest.target)
    if old["revision"] == onto_revision:
        raise invalid(["target"], f"The candidate already targets revision {onto_revision}.", "not_stale")
    new, refs = retargeted_refs(latest.artifact_refs, latest.target, onto_revision)
    submission = Submission(
        proposal=latest.proposal,
        source_refs=list(latest.source_refs),
        artifact_refs=refs,
        target=new,
        reason=latest.reason,
    )
    check_evidence(scope_id, candidate.family, submission)  # the head is at onto_revision
    base = _revision_content(scope_id, old, old["revision"])
    theirs = _revision_content(scope_id, old, onto_revision)
    if base is None or theirs is None:  # pragma: no cover - revisions are insert-only
        raise InvariantFailure()
    return submission, merge_fields(base, theirs, latest.proposal)


def _write_next(
    candidate: Candidate, expected_version: int, submission: Submission, reviewer: User
) -> Candidate:
    version = write_version(candidate, expected_version + 1, submission, reviewer)
    _advance(candidate, expected_version, version=F("version") + 1, latest=version)
    candidate.refresh_from_db()
    return candidate


@transaction.atomic(durable=True)
def candidate_rebase(
    *, scope_id: str, candidate_id: str, expected_version: int, onto_revision: int, reviewer: User
) -> Candidate:
    """Rebase a pending update onto revision ``onto_revision`` of its Artifact (the current head)
    by a per-field three-way merge (``review.merge``): base = the targeted revision, theirs = the
    current revision, ours = the update's proposal. A clean merge becomes the next version,
    targeting the new revision, with the proposal, reason and evidence otherwise kept (the old
    target's reference in ``artifact_refs`` replaced by the new one); fields changed only by the
    current revision keep its text, so approving never silently drops approved content. The
    reviewer then reviews the diff against the new head before approving.

    Raises ``MergeConflict`` (fields changed differently on both sides; nothing is written:
    ``candidate_resolve`` takes the reviewer's choice for them), ``CandidateNotFound``,
    ``CandidateTerminal``, ``CandidateConflict`` (stale version), ``ArtifactConflict`` (the head
    is not at ``onto_revision``), ``InvalidRequest`` (not an update, or already targeting that
    revision).
    """
    candidate = _lock_pending(scope_id, candidate_id, expected_version)
    submission, merged = _merged_onto(scope_id, candidate, onto_revision)
    if not merged.clean:
        raise MergeConflict(details={"fields": list(merged.conflicts), "onto": onto_revision})
    return _write_next(
        candidate, expected_version, dataclasses.replace(submission, proposal=merged.merged), reviewer
    )


@transaction.atomic(durable=True)
def candidate_resolve(
    *,
    scope_id: str,
    candidate_id: str,
    expected_version: int,
    onto_revision: int,
    resolutions: dict[str, Any],
    reviewer: User,
) -> Candidate:
    """A rebase that stopped at a merge conflict, finished with the reviewer's value for each
    conflicting field (the conflict editor, ``review/views/conflict.py``): the same three-way
    merge as ``candidate_rebase``, run here in the same transaction, gives every other field;
    ``resolutions`` (already valid values of the family's fields) must name exactly the fields
    that conflict. The result becomes the next version, targeting ``onto_revision``.

    Raises what ``candidate_rebase`` raises except ``MergeConflict``, and ``InvalidRequest`` when
    nothing conflicts (rebase instead) or ``resolutions`` names other fields than the conflicts.
    """
    candidate = _lock_pending(scope_id, candidate_id, expected_version)
    submission, merged = _merged_onto(scope_id, candidate, onto_revision)
    if merged.clean:
        raise invalid(
            ["target"], f"Nothing conflicts with revision {onto_revision}: rebase instead.", "no_conflict"
        )
    if sorted(resolutions) != list(merged.conflicts):
        fields = ", ".join(merged.conflicts)
        raise invalid(
            ["resolutions"], f"Resolve exactly the conflicting fields: {fields}.", "resolution_mismatch"
        )
    proposal = {**merged.merged, **resolutions}
    return _write_next(
        candidate, expected_version, dataclasses.replace(submission, proposal=proposal), reviewer
    )


def _after_revision_written() -> None:
    """A seam for fault-injection tests: runs between the revision insert and the candidate update."""


@transaction.atomic(durable=True)
def candidate_approve(
    *, scope_id: str, candidate_id: str, expected_version: int, reviewer: User
) -> Candidate:
    """Commit the reviewed proposal as the next Artifact revision and approve the candidate.

    The revision and the head move go through the artifact kernel
    (``artifact_revision_create``), with the family's ``searchable_text`` for recalled families.
    Raises ``CandidateNotFound``, ``CandidateTerminal``, ``CandidateConflict`` (stale version),
    ``ArtifactConflict`` (the target moved on, or another approval won the head),
    ``SelfApprovalForbidden`` (four-eyes review is on and the reviewer wrote a version).
    """
    candidate = _lock_pending(scope_id, candidate_id, expected_version)
    check_four_eyes(candidate, reviewer)
    latest = candidate.latest
    if latest is None:  # pragma: no cover - propose always writes version 1
        raise InvariantFailure()
    family = families.spec(candidate.family)
    head = _lock_result_head(scope_id, family, latest.target)
    searchable = (
        analyzer.searchable_text(family.searchable_values(latest.proposal)) if family.recallable else None
    )
    revision = artifact_revision_create(
        head=head,
        expected_revision=head.current_revision,
        content=latest.proposal,
        refs=Refs(source_refs=latest.source_refs, artifact_refs=latest.artifact_refs),
        created_by=reviewer,
        searchable_text=searchable,
    )
    _after_revision_written()
    return _decide(
        candidate,
        expected_version,
        ReviewDecision.Decision.APPROVED,
        reviewer,
        result_head=head,
        result_revision=revision,
    )


def _decide(
    candidate: Candidate, expected_version: int, decision: str, reviewer: User, **outcome: Any
) -> Candidate:
    """Move the candidate to its terminal state (compare-and-swap) and record the decision with
    the same outcome fields (``result_head``/``result_revision`` or ``reason``)."""
    changes = {f"decision_{k}" if k == "reason" else k: v for k, v in outcome.items()}
    _advance(candidate, expected_version, status=decision, **changes)
    CandidateClaim.objects.filter(candidate=candidate).delete()  # only pending work is claimed
    ReviewDecision.objects.create(
        candidate=candidate, version=expected_version, decision=decision, reviewer=reviewer, **outcome
    )
    candidate.refresh_from_db()
    return candidate


def _lock_result_head(scope_id: str, family: families.FamilySpec, target: dict[str, Any] | None) -> Artifact:
    """The head the approval writes to, locked: the target's (still at the target revision) or
    a new Artifact."""
    if target is None:
        return artifact_head_create(scope_id=scope_id, family=family.family, prefix=family.artifact_prefix)
    head = artifact_head_lock(scope_id=scope_id, family=family.family, artifact_id=target["artifact_id"])
    if head is None:
        raise ArtifactConflict(details={"current": None})
    if head.current_revision != target["revision"]:
        raise ArtifactConflict(details={"current": head_ref(head)})
    return head


@transaction.atomic(durable=True)
def candidate_reject(
    *, scope_id: str, candidate_id: str, expected_version: int, reason: str, reviewer: User
) -> Candidate:
    """Move the exact pending version to the terminal ``rejected`` state. Writes no Artifact."""
    return candidate_reject_within(
        scope_id=scope_id,
        candidate_id=candidate_id,
        expected_version=expected_version,
        reason=reason,
        reviewer=reviewer,
    )


def candidate_reject_within(
    *, scope_id: str, candidate_id: str, expected_version: int, reason: str, reviewer: User
) -> Candidate:
    """``candidate_reject`` inside the caller's transaction (asserted)."""
    require_transaction("this review write")
    candidate = _lock_pending(scope_id, candidate_id, expected_version)
    return _decide(candidate, expected_version, ReviewDecision.Decision.REJECTED, reviewer, reason=reason)


# --- bulk decisions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class BulkOutcome:
    """What became of one item of a bulk decision: ``decided`` (approved or rejected as asked),
    or ``conflict`` with the error code (stale version, already decided, target moved on), or
    ``not_found``."""

    pk: int
    expected_version: int
    outcome: str
    code: str | None = None


BULK_REFUSALS = (CandidateConflict, CandidateTerminal, ArtifactConflict, CandidateNotFound)


def candidates_decide_bulk(
    *, items: list[tuple[int, int]], decision: str, reason: str | None, reviewer: User
) -> list[BulkOutcome]:
    """Approve or reject each ``(candidate pk, expected_version)``, in order, each in its OWN
    transaction through ``candidate_approve`` / ``candidate_reject`` (so one conflict never
    undoes the others, and every item gets the same checks as a single decision).

    Not atomic as a whole, by design: it opens no transaction itself (each call is durable).
    ``decision`` is ``approved`` or ``rejected``; a rejection needs ``reason``. Raises
    ``InvalidRequest`` for a bad decision or a missing reason, before deciding anything.
    """
    if decision not in (ReviewDecision.Decision.APPROVED, ReviewDecision.Decision.REJECTED):
        raise invalid(["decision"], "The decision must be approved or rejected.")
    if decision == ReviewDecision.Decision.REJECTED and not (reason or "").strip():
        raise invalid(["reason"], "A reason is required to reject.")
    unique = list(dict.fromkeys(items))
    identities = dict(
        (pk, (scope_id, candidate_id))
        for pk, scope_id, candidate_id in Candidate.objects.filter(
            pk__in=[pk for pk, _ in unique]
        ).values_list("pk", "scope_id", "candidate_id")
    )
    outcomes: list[BulkOutcome] = []
    for pk, expected_version in unique:
        if pk not in identities:
            outcomes.append(BulkOutcome(pk, expected_version, "not_found", CandidateNotFound.code))
            continue
        scope_id, candidate_id = identities[pk]
        try:
            if decision == ReviewDecision.Decision.APPROVED:
                candidate_approve(
                    scope_id=scope_id,
                    candidate_id=candidate_id,
                    expected_version=expected_version,
                    reviewer=reviewer,
                )
            else:
                candidate_reject(
                    scope_id=scope_id,
                    candidate_id=candidate_id,
                    expected_version=expected_version,
                    reason=str(reason),
                    reviewer=reviewer,
                )
        except (*BULK_REFUSALS, SelfApprovalForbidden) as exc:
            outcomes.append(BulkOutcome(pk, expected_version, "conflict", exc.code))
        else:
            outcomes.append(BulkOutcome(pk, expected_version, "decided"))
    return outcomes


# Claims ("Assign to me") are their own small service; re-exported so callers use one module.
from review.services.claims import ClaimChanged as ClaimChanged  # noqa: E402
from review.services.claims import ClaimOutcome as ClaimOutcome  # noqa: E402
from review.services.claims import candidate_claim as candidate_claim  # noqa: E402
from review.services.claims import candidate_unclaim as candidate_unclaim  # noqa: E402
from review.services.reversal import artifact_retire as artifact_retire  # noqa: E402
from review.services.reversal import artifact_revert as artifact_revert  # noqa: E402
from review.services.reversal import artifact_revert_propose as artifact_revert_propose  # noqa: E402
from review.services.reversal import candidate_reopen as candidate_reopen  # noqa: E402
