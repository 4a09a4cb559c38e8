"""One candidate as the Inbox shows it, and the exact reads the candidate API needs.

Everything returns plain frozen dataclasses, fully loaded, so templates never touch the ORM (and
so never trigger a query).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from powercontext.core import families
from powercontext.core.exceptions import ArtifactNotFound, CandidateNotFound
from powercontext.core.models import Artifact, ArtifactRevision
from review.diff import FieldDiff, fields_diff
from review.models import Candidate, CandidateClaim, CandidateVersion, ReviewDecision


def labels(family: str) -> tuple[tuple[str, str], ...]:
    """(name, label) of a family's proposal fields, in order (empty for an unknown family)."""
    spec = families.PROPOSAL_FAMILIES.get(family)
    return spec.labels if spec is not None else ()


def candidate_get(*, scope_id: str, candidate_id: str) -> Candidate:
    candidate = (
        Candidate.objects.select_related("latest", "result_head")
        .filter(scope_id=scope_id, candidate_id=candidate_id)
        .first()
    )
    if candidate is None:
        raise CandidateNotFound()
    return candidate


def artifact_revision_get(*, scope_id: str, family: str, artifact_id: str, revision: int) -> ArtifactRevision:
    """An exact approved revision of an Experience or Skill in this scope."""
    found = ArtifactRevision.objects.filter(
        scope_id=scope_id, family=family, artifact_id=artifact_id, revision=revision
    ).first()
    if found is None:
        raise ArtifactNotFound()
    return found


@dataclass(frozen=True)
class ProposalField:
    name: str
    label: str
    text: str
    items: tuple[str, ...] | None = None


def proposal_fields(family: str, proposal: Any) -> list[ProposalField]:
    """The proposal as labelled fields in the family's order (unknown keys shown after)."""
    data = proposal if isinstance(proposal, dict) else {}
    known = labels(family)
    names = [name for name, _ in known]
    out: list[ProposalField] = []
    for name, label in [*known, *((key, key) for key in data if key not in names)]:
        value = data.get(name)
        if isinstance(value, list):
            items = tuple(str(item) for item in value)
            out.append(ProposalField(name=name, label=label, text="\n".join(items), items=items))
        elif value is None:
            out.append(ProposalField(name=name, label=label, text=""))
        elif isinstance(value, str):
            out.append(ProposalField(name=name, label=label, text=value))
        else:
            out.append(ProposalField(name=name, label=label, text=json.dumps(value, ensure_ascii=False)))
    return out


@dataclass(frozen=True)
class VersionView:
    version: int
    fields: list[ProposalField]
    reason: str | None
    source_refs: list[dict[str, Any]]
    artifact_refs: list[dict[str, Any]]
    target: dict[str, Any] | None
    created_by: str | None
    created_at: datetime

    @property
    def evidence_count(self) -> int:
        return len(self.source_refs) + len(self.artifact_refs)


def version_view(family: str, version: CandidateVersion) -> VersionView:
    """Needs ``created_by`` selected (``select_related``) to stay query-free."""
    return VersionView(
        version=version.version,
        fields=proposal_fields(family, version.proposal),
        reason=version.reason,
        source_refs=list(version.source_refs or []),
        artifact_refs=list(version.artifact_refs or []),
        target=version.target,
        created_by=version.created_by.get_username() if version.created_by is not None else None,
        created_at=version.created_at,
    )


def result_label(head: Artifact | None, revision: int | None) -> str | None:
    """``family/artifact_id@revision`` of an approval's result (None when there is none)."""
    return f"{head.family}/{head.artifact_id}@{revision}" if head is not None else None


@dataclass(frozen=True)
class DecisionView:
    decision: str
    version: int
    reviewer: str
    reason: str | None
    result: str | None
    decided_at: datetime


def decision_view(decision: ReviewDecision | None) -> DecisionView | None:
    if decision is None:
        return None
    return DecisionView(
        decision=decision.decision,
        version=decision.version,
        reviewer=decision.reviewer.get_username(),
        reason=decision.reason,
        result=result_label(decision.result_head, decision.result_revision),
        decided_at=decision.decided_at,
    )


@dataclass(frozen=True)
class ClaimView:
    """Who claimed a pending candidate ("Assign to me"), and when."""

    user_id: int
    username: str
    claimed_at: datetime


def claim_of(candidate: Candidate) -> ClaimView | None:
    """The candidate's claim; needs ``claim__claimed_by`` selected to stay query-free."""
    try:
        claim = candidate.claim
    except CandidateClaim.DoesNotExist:
        return None
    return ClaimView(
        user_id=claim.claimed_by_id, username=claim.claimed_by.get_username(), claimed_at=claim.claimed_at
    )


@dataclass(frozen=True)
class CandidateFacts:
    """What every view of a candidate shows (queue rows and the candidate page)."""

    pk: int
    candidate_id: str
    scope_id: str
    family: str
    status: str
    version: int
    created_at: datetime
    updated_at: datetime
    claim: ClaimView | None


@dataclass(frozen=True)
class CandidateSummary(CandidateFacts):
    decision_reason: str | None
    result: str | None
    latest: VersionView | None
    decision: DecisionView | None

    @property
    def is_pending(self) -> bool:
        return self.status == Candidate.Status.PENDING


def _decision_of(candidate: Candidate) -> ReviewDecision | None:
    try:
        return candidate.decision
    except ReviewDecision.DoesNotExist:
        return None


CANDIDATE_RELATED = (
    "latest",
    "latest__created_by",
    "result_head",
    "decision",
    "decision__reviewer",
    "decision__result_head",
    "claim__claimed_by",
)


def candidate_load(pk: int) -> Candidate | None:
    """The candidate with everything a page shows about it, in one query."""
    return Candidate.objects.select_related(*CANDIDATE_RELATED).filter(pk=pk).first()


def candidate_facts(candidate: Candidate) -> dict[str, Any]:
    """``CandidateFacts`` of one candidate, as keyword arguments (with ``claim__claimed_by``
    selected, see ``claim_of``)."""
    return {
        "pk": candidate.pk,
        "candidate_id": candidate.candidate_id,
        "scope_id": candidate.scope_id,
        "family": candidate.family,
        "status": candidate.status,
        "version": candidate.version,
        "created_at": candidate.created_at,
        "updated_at": candidate.updated_at,
        "claim": claim_of(candidate),
    }


def candidate_summary(candidate: Candidate) -> CandidateSummary:
    return CandidateSummary(
        **candidate_facts(candidate),
        decision_reason=candidate.decision_reason,
        result=result_label(candidate.result_head, candidate.result_revision),
        latest=version_view(candidate.family, candidate.latest) if candidate.latest is not None else None,
        decision=decision_view(_decision_of(candidate)),
    )


@dataclass(frozen=True)
class HistoryItem:
    version: VersionView
    changes: list[FieldDiff] | None


def candidate_versions(candidate: Candidate) -> list[VersionView]:
    """Every version of the candidate, oldest first (one query)."""
    rows = (
        CandidateVersion.objects.filter(candidate=candidate).select_related("created_by").order_by("version")
    )
    return [version_view(candidate.family, row) for row in rows]


def history_items(family: str, versions: list[VersionView]) -> list[HistoryItem]:
    """Each version with what changed since the one before it (None for version 1)."""
    items: list[HistoryItem] = []
    previous: VersionView | None = None
    for version in versions:
        changes = None
        if previous is not None:
            changes = fields_diff(
                labels(family),
                {f.name: f.text for f in previous.fields} | {"reason": previous.reason or ""},
                {f.name: f.text for f in version.fields} | {"reason": version.reason or ""},
                extra=(("reason", "Reason"),),
            )
        items.append(HistoryItem(version=version, changes=changes))
        previous = version
    return items
