"""Candidate, Experience and Skill operations of the /v1 contract.

Agents propose; reviewers (a token whose user holds ``review.review_candidate``) revise, approve
and reject. The proposal schemas come from ``powercontext.core.families``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from rest_framework.serializers import SerializerMetaclass

from context_api import render
from context_api.operations.base import Caller, Operation, operation
from context_api.validation import (
    NON_BLANK,
    ArtifactReferenceSerializer,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    StrictObjectField,
    StrictSerializer,
    field_error,
    id128_field,
    proposal_serializer,
    scope_field,
    validate,
)
from powercontext.core import families
from powercontext.core.exceptions import ArtifactNotFound, InvalidRequest, Unauthorized
from review import services
from review.models import Candidate
from review.selectors import candidate as candidate_selectors
from review.selectors import queue
from review.selectors.governance import four_eyes_enabled

PROPOSAL_SERIALIZERS: dict[str, type[StrictSerializer]] = {
    name: proposal_serializer(spec) for name, spec in families.PROPOSAL_FAMILIES.items()
}
STATUSES = tuple(status.value for status in Candidate.Status)
CURSOR_PREFIX = "after:"


class SourceReferenceSerializer(StrictSerializer):
    name = StrictCharField()
    source_id = StrictCharField()


class EvidenceInput(StrictSerializer):
    """The evidence and rationale fields shared by propose and revise."""

    # ``many=True`` builds a ListSerializer, which takes ``max_length`` (the stubs do not know).
    source_refs = SourceReferenceSerializer(many=True, max_length=services.MAX_EVIDENCE)  # type: ignore[call-arg]
    artifact_refs = ArtifactReferenceSerializer(many=True, max_length=services.MAX_EVIDENCE)  # type: ignore[call-arg]
    target = ArtifactReferenceSerializer(required=False, allow_null=True, default=None)
    reason = StrictCharField(min_length=1, max_length=2000, required=False, allow_null=True, default=None)


def submission_of(data: dict[str, Any], proposal: dict[str, Any]) -> services.Submission:
    """The service's submission from a validated propose body and its (validated) proposal
    (shared with the thread operations, ``operations.changes``)."""
    return services.Submission(
        proposal=proposal,
        source_refs=[dict(ref) for ref in data["source_refs"]],
        artifact_refs=[dict(ref) for ref in data["artifact_refs"]],
        target=dict(data["target"]) if data.get("target") is not None else None,
        reason=data.get("reason"),
    )


def validated_proposal(family: str, proposal: Any) -> dict[str, Any]:
    """``proposal`` validated against ``family``'s schema; errors are located under
    ``body.proposal``."""
    try:
        return validate(PROPOSAL_SERIALIZERS[family], proposal)
    except InvalidRequest as exc:
        for error in (exc.details or {}).get("errors", []):
            error["loc"] = ["body", "proposal", *error["loc"][1:]]
        raise


def plausible_proposal(proposal: Any) -> None:
    """422 unless the proposal satisfies at least one family's schema (the contract's
    ``oneOf``). When it fits none, the errors reported are those of the family it came closest
    to (fewest errors; on a tie, the first family in ``PROPOSAL_FAMILIES`` order)."""
    failures: list[InvalidRequest] = []
    for family in PROPOSAL_SERIALIZERS:
        try:
            validated_proposal(family, proposal)
        except InvalidRequest as exc:
            failures.append(exc)
        else:
            return
    raise min(failures, key=lambda exc: len((exc.details or {}).get("errors", [])))


def _propose_input(spec: families.FamilySpec) -> type[StrictSerializer]:
    fields = {"scope_id": scope_field(), "proposal": PROPOSAL_SERIALIZERS[spec.family]()}
    name = f"Propose{spec.family.value.title()}Input"
    return cast(type[StrictSerializer], SerializerMetaclass(name, (EvidenceInput,), fields))


def _propose(family: str, data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    if caller.token is None and four_eyes_enabled():
        # Four-eyes review compares the proposal's writer with its approver: it must be known.
        raise Unauthorized("Four-eyes review is on: a proposal needs a token, so that its writer is known.")
    candidate = services.candidate_propose(
        scope_id=data["scope_id"],
        family=family,
        submission=submission_of(data, dict(data["proposal"])),
        proposed_by=caller.user,
    )
    return render.candidate(candidate)


@operation("propose_experience", "v1/experience/propose", _propose_input(families.EXPERIENCE), status=201)
def propose_experience(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Propose an Experience for human review (pending until a reviewer decides)."""
    return _propose(families.Family.EXPERIENCE, data, caller)


@operation("propose_skill", "v1/skill/propose", _propose_input(families.SKILL), status=201)
def propose_skill(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Propose a Skill for human review (pending until a reviewer decides)."""
    return _propose(families.Family.SKILL, data, caller)


class ListCandidatesInput(StrictSerializer):
    scope_id = scope_field()
    status = StrictChoiceField(choices=STATUSES, required=False, default="pending")
    family = StrictChoiceField(
        choices=families.PROPOSAL_FAMILY_NAMES, required=False, allow_null=True, default=None
    )
    cursor = StrictCharField(min_length=1, max_length=128, required=False, allow_null=True, default=None)
    limit = StrictIntegerField(min_value=1, max_value=100, required=False, default=50)


def _decode_cursor(cursor: str | None) -> int | None:
    if cursor is None:
        return None
    after = render.decode_cursor(cursor, CURSOR_PREFIX)
    if after is None:
        raise field_error(["cursor"], "Is not a cursor this server issued.", "cursor_invalid")
    return after


@operation(
    "list_artifact_candidates",
    "v1/artifact-candidates/list",
    ListCandidatesInput,
    read_only=True,
    idempotent=True,
)
def list_artifact_candidates(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """List a scope's candidates by status (oldest first), one page at a time."""
    page = queue.candidate_page(
        queue.candidate_rows(scope_id=data["scope_id"], status=data["status"], family=data.get("family")),
        after=_decode_cursor(data.get("cursor")),
        size=data["limit"],
    )
    return {
        "candidates": [render.candidate(c) for c in page.items],
        "next_cursor": render.encode_cursor(page.next_after, CURSOR_PREFIX) if page.next_after else None,
    }


class CandidateInput(StrictSerializer):
    scope_id = scope_field()
    candidate_id = id128_field()


@operation(
    "get_artifact_candidate", "v1/artifact-candidates/get", CandidateInput, read_only=True, idempotent=True
)
def get_artifact_candidate(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Get one candidate with its latest version."""
    return render.candidate(
        candidate_selectors.candidate_get(scope_id=data["scope_id"], candidate_id=data["candidate_id"])
    )


class DecisionInput(CandidateInput):
    expected_version = StrictIntegerField(min_value=1)


def _decided(
    decide: Callable[..., Candidate], data: dict[str, Any], caller: Caller, **extra: Any
) -> dict[str, Any]:
    candidate = decide(
        scope_id=data["scope_id"],
        candidate_id=data["candidate_id"],
        expected_version=data["expected_version"],
        reviewer=caller.user,
        **extra,
    )
    return render.candidate(candidate)


@operation("approve_artifact_candidate", "v1/artifact-candidates/approve", DecisionInput, reviewer=True)
def approve_artifact_candidate(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Approve the exact candidate version as the next Artifact revision (reviewers only)."""
    return _decided(services.candidate_approve, data, caller)


class RejectInput(DecisionInput):
    reason = StrictCharField(min_length=1, max_length=2000, pattern=NON_BLANK)


@operation("reject_artifact_candidate", "v1/artifact-candidates/reject", RejectInput, reviewer=True)
def reject_artifact_candidate(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Reject the exact candidate version with a reason (reviewers only)."""
    return _decided(services.candidate_reject, data, caller, reason=data["reason"])


class ReviseCandidateInput(EvidenceInput):
    scope_id = scope_field()
    candidate_id = id128_field()
    expected_version = StrictIntegerField(min_value=1)
    proposal = StrictObjectField()


@operation("revise_artifact_candidate", "v1/artifact-candidates/revise", ReviseCandidateInput, reviewer=True)
def revise_artifact_candidate(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Replace a pending candidate's proposal with a complete new version (reviewers only).

    The proposal is checked before the candidate is looked up, so a malformed request is 422
    whether or not the candidate exists (a 404 never hides a schema error): see
    ``plausible_proposal``. Then it must fit the candidate's own family (422 otherwise).
    """
    plausible_proposal(data["proposal"])
    family = candidate_selectors.candidate_get(
        scope_id=data["scope_id"], candidate_id=data["candidate_id"]
    ).family
    proposal = validated_proposal(family, data["proposal"])
    candidate = services.candidate_revise(
        scope_id=data["scope_id"],
        candidate_id=data["candidate_id"],
        expected_version=data["expected_version"],
        submission=submission_of(data, proposal),
        reviewer=caller.user,
    )
    return render.candidate(candidate)


class GetArtifactInput(StrictSerializer):
    scope_id = scope_field()
    artifact = ArtifactReferenceSerializer()


def _get_artifact(family: str, data: dict[str, Any]) -> dict[str, Any]:
    ref = data["artifact"]
    if ref["family"] != family:
        raise ArtifactNotFound()
    revision = candidate_selectors.artifact_revision_get(
        scope_id=data["scope_id"], family=family, artifact_id=ref["artifact_id"], revision=ref["revision"]
    )
    return render.artifact_revision(revision)


@operation("get_experience", "v1/experience/get", GetArtifactInput, read_only=True, idempotent=True)
def get_experience(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Get an exact approved Experience revision."""
    return _get_artifact(families.Family.EXPERIENCE, data)


@operation("get_skill", "v1/skill/get", GetArtifactInput, read_only=True, idempotent=True)
def get_skill(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Get an exact approved Skill revision."""
    return _get_artifact(families.Family.SKILL, data)


OPERATIONS: tuple[Operation, ...] = (
    propose_experience,
    get_experience,
    propose_skill,
    get_skill,
    list_artifact_candidates,
    get_artifact_candidate,
    approve_artifact_candidate,
    reject_artifact_candidate,
    revise_artifact_candidate,
)
