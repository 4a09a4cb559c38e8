"""People decide on reported items (issue 30): dismiss the reports, retire the item, revise it,
or take such a decision back.

Agents report cited items as ``wrong`` or ``outdated`` (``powercontext.feedback``); a Memory entry
version enough distinct tokens reported is held out of prepare until a person decides here. Each
public function is one transaction that locks what it changes, writes one ``ReportDecision``
audit row (insert-only) naming the reviewer and the reason, and refreshes the item's feedback
counters, so what prepare reads changes with the decision:

- **Dismiss**: the reports the reviewer saw (feedback ids up to ``seen_through``) stay in the
  log and no longer count; the item is recalled again. Later reports count anew.
- **Retire**: a Memory entry leaves the head (a new Memory revision); an Experience leaves
  recall (its revisions kept), as the Inbox's Retire does.
- **Revise**: a Memory entry gets a new version with the reviewer's text (a new item: its
  counters start clean, the reports were about the old text). An Experience gets an update
  proposed as a pending candidate that names the reported revision as its target; it lands when
  a reviewer approves it (four-eyes applies), and the new revision starts clean.
- **Undo**: any reviewer can take a decision back while the item is as the decision left it
  (compare-and-swap): a dismissal stops counting, a retired entry or Experience is restored, a
  revised entry gets its reported version back (with its reports: held again if they hold it),
  a proposed Experience update is rejected. An ``undone`` row records who did it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from powercontext.core import families
from powercontext.core.exceptions import Conflict, InvalidRequest, NotFound
from powercontext.core.models import (
    Artifact,
    ArtifactRevision,
    MemoryEntryVersion,
    MemoryMembership,
)
from powercontext.feedback.models import EXPERIENCE, MEMORY, Feedback, FeedbackCounter, ReportDecision
from powercontext.feedback.prior import memory_target
from powercontext.feedback.services import counters_refresh_within
from powercontext.memory import services as memory_services
from powercontext.memory.selectors import memory_head_revision
from review.models import Candidate
from review.services import candidate_propose_within, candidate_reject_within
from review.services.reversal import artifact_retire_within, artifact_revert_within
from review.services.submission import Submission

REASON_MAX_CHARS = 500


class ReportNotFound(NotFound):
    code = "not_found"
    default_message = "There is no such reported item in this scope."


class ReportChanged(Conflict):
    code = "conflict"
    default_message = "The reported item changed since this page was shown; reload it and decide again."


@dataclass(frozen=True)
class Reported:
    """A reported item as a decision reads it under its counter row's lock."""

    scope_id: str
    target: str
    family: str
    counter: FeedbackCounter


def _invalid(field: str, message: str) -> InvalidRequest:
    return InvalidRequest(
        details={"errors": [{"loc": ["body", field], "msg": message, "type": "value_error"}]}
    )


def _reason(reason: str) -> str:
    reason = reason.strip()
    if not reason:
        raise _invalid("reason", "A reason is required.")
    return reason[:REASON_MAX_CHARS]


def _lock(scope_id: str, target: str) -> Reported:
    counter = FeedbackCounter.objects.select_for_update().filter(scope_id=scope_id, target=target).first()
    if counter is None:
        raise ReportNotFound()
    return Reported(scope_id, target, counter.family, counter)


def _newest_report(scope_id: str, target: str) -> int:
    newest = Feedback.objects.filter(scope_id=scope_id, target=target).aggregate(newest=Max("id"))["newest"]
    return int(newest or 0)


def _record(reported: Reported, action: str, reviewer: User, reason: str, **fields: object) -> ReportDecision:
    decision = ReportDecision.objects.create(
        scope_id=reported.scope_id,
        target=reported.target,
        family=reported.family,
        action=action,
        reviewer=reviewer,
        reason=reason,
        decided_at=timezone.now(),
        **fields,
    )
    counters_refresh_within(reported.scope_id, [reported.target])
    return decision


def _memory_version(reported: Reported) -> MemoryEntryVersion:
    return MemoryEntryVersion.objects.select_related("entry").get(pk=reported.counter.entry_version_id or 0)


def _active_citation(reported: Reported) -> memory_services.Citation:
    """The reported entry version's citation at the current head; ``ReportChanged`` when the
    version is no longer the entry's active one (revised or retired since)."""
    version = _memory_version(reported)
    active = MemoryMembership.objects.filter(
        entry_version=version, to_revision__isnull=True, state=MemoryMembership.State.ACTIVE
    ).exists()
    head = memory_head_revision(scope_id=reported.scope_id)
    if not active or head is None:
        raise ReportChanged()
    return memory_services.Citation(
        family=families.Family.MEMORY.value,
        artifact_id=families.MEMORY_ARTIFACT_ID,
        revision=head,
        entry_id=version.entry.entry_id,
        entry_version_id=version.entry_version_id,
    )


def _experience_revision(reported: Reported, state: str = Artifact.State.ACTIVE) -> ArtifactRevision:
    """The reported Experience revision, which must still be its head's current revision with
    the head in ``state``; ``ReportChanged`` otherwise."""
    revision = ArtifactRevision.objects.select_related("head").get(
        pk=reported.counter.artifact_revision_id or 0
    )
    if revision.head.current_revision != revision.revision or revision.head.state != state:
        raise ReportChanged()
    return revision


@transaction.atomic(durable=True)
def report_dismiss(
    *, scope_id: str, target: str, seen_through: int, reviewer: User, reason: str
) -> ReportDecision:
    """Dismiss the reports up to feedback id ``seen_through`` (what the reviewer saw); the
    item is recalled again. Raises ``ReportNotFound``, ``InvalidRequest`` (no reason, or
    ``seen_through`` beyond the item's reports), ``ReportChanged`` (a standing dismissal already
    covers every report up to ``seen_through``: someone dismissed them since the page was shown,
    and this dismissal would change nothing)."""
    reason = _reason(reason)
    reported = _lock(scope_id, target)
    if not 0 < seen_through <= _newest_report(scope_id, target):
        raise _invalid("seen_through", "No such report of this item.")
    if seen_through <= reported.counter.reports_after:
        raise ReportChanged(
            "These reports were dismissed since this page was shown; reload it and decide again."
        )
    return _record(reported, ReportDecision.Action.DISMISSED, reviewer, reason, through_feedback=seen_through)


@transaction.atomic(durable=True)
def report_retire(*, scope_id: str, target: str, reviewer: User, reason: str) -> ReportDecision:
    """Retire the reported Memory entry (a new Memory revision) or Experience (out of recall).
    Raises ``ReportNotFound``, ``ReportChanged`` (no longer the current version/revision)."""
    reason = _reason(reason)
    reported = _lock(scope_id, target)
    through = _newest_report(scope_id, target)
    if reported.family == MEMORY:
        mutation = memory_services.memory_retire_within(
            scope_id=scope_id, citation=_active_citation(reported), reason=reason
        )
        return _record(
            reported,
            ReportDecision.Action.RETIRED,
            reviewer,
            reason,
            through_feedback=through,
            memory_revision=mutation.revision,
        )
    revision = _experience_revision(reported)
    artifact_retire_within(
        scope_id=scope_id,
        family=revision.family,
        artifact_id=revision.artifact_id,
        expected_revision=revision.revision,
        reason=reason,
        reviewer=reviewer,
    )
    return _record(reported, ReportDecision.Action.RETIRED, reviewer, reason, through_feedback=through)


@transaction.atomic(durable=True)
def report_revise_memory(
    *, scope_id: str, target: str, text: str, reviewer: User, reason: str
) -> ReportDecision:
    """Replace the reported Memory entry version with ``text`` (same kind) in a new revision; the
    new version's counters start clean. Raises ``ReportNotFound``, ``ReportChanged``,
    ``InvalidRequest`` (an Experience: use ``report_propose_update``; blank text)."""
    reason = _reason(reason)
    reported = _lock(scope_id, target)
    if reported.family != MEMORY:
        raise InvalidRequest("Only a Memory entry is revised here; propose an update of an Experience.")
    text = text.strip()
    if not text:
        raise _invalid("text", "The new text is required.")
    version = _memory_version(reported)
    mutation = memory_services.memory_revise_within(
        scope_id=scope_id, citation=_active_citation(reported), kind=version.kind, text=text, reason=reason
    )
    if mutation.entry is None or mutation.entry.entry_version_id == version.entry_version_id:
        raise _invalid("text", "The new text is the same as the old.")
    return _record(
        reported,
        ReportDecision.Action.REVISED,
        reviewer,
        reason,
        through_feedback=_newest_report(scope_id, target),
        memory_revision=mutation.revision,
        new_target=memory_target(mutation.entry.entry_version_id),
    )


@transaction.atomic(durable=True)
def report_propose_update(
    *, scope_id: str, target: str, proposal: dict[str, str], reviewer: User, reason: str
) -> ReportDecision:
    """Propose an update of the reported Experience revision (a pending candidate whose target
    is that revision, written by ``reviewer``). Raises ``ReportNotFound``, ``ReportChanged``
    (no longer the current revision), ``InvalidRequest``."""
    reason = _reason(reason)
    reported = _lock(scope_id, target)
    if reported.family != EXPERIENCE:
        raise InvalidRequest("Only an Experience gets an update proposed; revise a Memory entry instead.")
    revision = _experience_revision(reported)
    ref = {"family": revision.family, "artifact_id": revision.artifact_id, "revision": revision.revision}
    candidate = candidate_propose_within(
        scope_id=scope_id,
        family=revision.family,
        submission=Submission(
            proposal=proposal, source_refs=[], artifact_refs=[ref], target=ref, reason=reason
        ),
        proposed_by=reviewer,
    )
    return _record(
        reported,
        ReportDecision.Action.REVISED,
        reviewer,
        reason,
        through_feedback=_newest_report(scope_id, target),
        candidate_id=candidate.candidate_id,
    )


@transaction.atomic(durable=True)
def report_decision_undo(*, decision_id: int, reviewer: User) -> ReportDecision:
    """Take a report decision back (see the module docstring). Raises ``ReportNotFound`` (no
    such decision), ``ReportChanged`` (already undone, or the item changed since)."""
    decision = ReportDecision.objects.select_for_update().filter(pk=decision_id).first()
    if decision is None or decision.action == ReportDecision.Action.UNDONE:
        raise ReportNotFound()
    if ReportDecision.objects.filter(undoes=decision).exists():
        raise ReportChanged("This decision was already taken back.")
    reported = _lock(decision.scope_id, decision.target)
    reason = f"Undo of the {decision.action} decision #{decision.pk}."
    if decision.family == MEMORY and decision.action != ReportDecision.Action.DISMISSED:
        _restore_memory(reported, decision, reason)  # a retire or a revise: the version back
    elif decision.action == ReportDecision.Action.RETIRED:
        revision = _experience_revision(reported, Artifact.State.RETIRED)
        artifact_revert_within(
            scope_id=decision.scope_id,
            family=revision.family,
            artifact_id=revision.artifact_id,
            expected_revision=revision.revision,
            to_revision=revision.revision,
            reason=reason,
            reviewer=reviewer,
            expected_state=Artifact.State.RETIRED,
        )
    elif decision.action == ReportDecision.Action.REVISED:
        candidate = Candidate.objects.filter(
            scope_id=decision.scope_id, candidate_id=decision.candidate_id
        ).first()
        if candidate is None or candidate.status != Candidate.Status.PENDING:
            raise ReportChanged("The proposed update was already decided; take that decision back instead.")
        candidate_reject_within(
            scope_id=decision.scope_id,
            candidate_id=candidate.candidate_id,
            expected_version=candidate.version,
            reason=reason,
            reviewer=reviewer,
        )
    return _record(reported, ReportDecision.Action.UNDONE, reviewer, reason, undoes=decision)


def _restore_memory(reported: Reported, decision: ReportDecision, reason: str) -> None:
    version = _memory_version(reported)
    if decision.memory_revision is None:
        raise ReportChanged()
    memory_services.memory_restore_within(
        scope_id=decision.scope_id,
        entry_id=version.entry.entry_id,
        expected_from_revision=decision.memory_revision,
        entry_version_id=version.entry_version_id,
        reason=reason,
    )
