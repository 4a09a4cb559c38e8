"""The candidate, Experience and Skill operations of the /v1 API."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.response import Response

from context_api.apis import BaseApi
from context_api.auth import authenticate, require_reviewer
from context_api.validation import (
    NON_BLANK,
    TRIMMED,
    ArtifactReferenceSerializer,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    StrictObjectField,
    StrictSerializer,
    id128_field,
    parse_json_object,
    read_body,
    scope_field,
    validate,
)
from powercontext.exceptions import ArtifactNotFound, InvalidRequest
from review import selectors, services
from review.models import Candidate

MAX_EVIDENCE = services.MAX_EVIDENCE
FAMILIES = (Candidate.Family.EXPERIENCE.value, Candidate.Family.SKILL.value)
STATUSES = tuple(status.value for status in Candidate.Status)


def _text(max_length: int, pattern: Any = NON_BLANK, full: bool = False) -> StrictCharField:
    return StrictCharField(min_length=1, max_length=max_length, pattern=pattern, full=full)


class SourceReferenceSerializer(StrictSerializer):
    name = StrictCharField()
    source_id = StrictCharField()


class ExperienceProposalSerializer(StrictSerializer):
    situation = _text(8000)
    action = _text(8000)
    outcome = _text(8000)
    lesson = _text(8000)


class SkillProposalSerializer(StrictSerializer):
    name = _text(128, TRIMMED, full=True)
    description = _text(2000, TRIMMED, full=True)
    instructions = _text(32000)
    validation = serializers.ListField(child=_text(2000, TRIMMED, full=True), min_length=1, max_length=32)


PROPOSAL_SERIALIZERS: dict[str, type[StrictSerializer]] = {
    Candidate.Family.EXPERIENCE: ExperienceProposalSerializer,
    Candidate.Family.SKILL: SkillProposalSerializer,
}


class EvidenceSerializer(StrictSerializer):
    """The evidence and rationale fields shared by propose and revise."""

    source_refs = SourceReferenceSerializer(many=True, max_length=MAX_EVIDENCE)
    artifact_refs = ArtifactReferenceSerializer(many=True, max_length=MAX_EVIDENCE)
    target = ArtifactReferenceSerializer(required=False, allow_null=True, default=None)
    reason = StrictCharField(min_length=1, max_length=2000, required=False, allow_null=True, default=None)


def _submission(data: dict[str, Any], proposal: dict[str, Any]) -> services.Submission:
    return services.Submission(
        proposal=proposal,
        source_refs=[dict(ref) for ref in data["source_refs"]],
        artifact_refs=[dict(ref) for ref in data["artifact_refs"]],
        target=dict(data["target"]) if data.get("target") is not None else None,
        reason=data.get("reason"),
    )


def _validated_proposal(family: str, proposal: Any) -> dict[str, Any]:
    try:
        return validate(PROPOSAL_SERIALIZERS[family], proposal)
    except InvalidRequest as exc:
        errors = (exc.details or {}).get("errors", [])
        for error in errors:
            error["loc"] = ["body", "proposal", *error["loc"][1:]]
        raise


class _ProposeApi(BaseApi):
    success_status = 201
    family = ""

    def post(self, request: Any) -> Any:
        token = authenticate(request)
        self.proposer = token.user if token is not None else None
        return super().post(request)

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        candidate = services.candidate_propose(
            scope_id=data["scope_id"],
            family=self.family,
            submission=_submission(data, dict(data["proposal"])),
            proposed_by=self.proposer,
        )
        return selectors.candidate_wire(candidate)


class ProposeExperienceApi(_ProposeApi):
    family = Candidate.Family.EXPERIENCE

    class InputSerializer(EvidenceSerializer):
        scope_id = scope_field()
        proposal = ExperienceProposalSerializer()


class ProposeSkillApi(_ProposeApi):
    family = Candidate.Family.SKILL

    class InputSerializer(EvidenceSerializer):
        scope_id = scope_field()
        proposal = SkillProposalSerializer()


class ListArtifactCandidatesApi(BaseApi):
    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        status = StrictChoiceField(choices=STATUSES, required=False, default="pending")
        family = StrictChoiceField(choices=FAMILIES, required=False, allow_null=True, default=None)
        cursor = StrictCharField(min_length=1, max_length=128, required=False, allow_null=True, default=None)
        limit = StrictIntegerField(min_value=1, max_value=100, required=False, default=50)

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        page = selectors.candidate_list(
            scope_id=data["scope_id"],
            status=data["status"],
            family=data.get("family"),
            cursor=data.get("cursor"),
            limit=data["limit"],
        )
        return {
            "candidates": [selectors.candidate_wire(c) for c in page.candidates],
            "next_cursor": page.next_cursor,
        }


class GetArtifactCandidateApi(BaseApi):
    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        candidate_id = id128_field()

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        return selectors.candidate_wire(
            selectors.candidate_get(scope_id=data["scope_id"], candidate_id=data["candidate_id"])
        )


class _ReviewerApi(BaseApi):
    """Approve / reject / revise: an authenticated reviewer is required in every mode."""

    def post(self, request: Any) -> Any:
        self.reviewer = require_reviewer(request)
        data = validate(self.InputSerializer, parse_json_object(read_body(request)))
        return Response(self.run(data), status=self.success_status)


class ApproveArtifactCandidateApi(_ReviewerApi):
    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        candidate_id = id128_field()
        expected_version = StrictIntegerField(min_value=1)

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        candidate = services.candidate_approve(
            scope_id=data["scope_id"],
            candidate_id=data["candidate_id"],
            expected_version=data["expected_version"],
            reviewer=self.reviewer,
        )
        return selectors.candidate_wire(candidate)


class RejectArtifactCandidateApi(_ReviewerApi):
    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        candidate_id = id128_field()
        expected_version = StrictIntegerField(min_value=1)
        reason = StrictCharField(min_length=1, max_length=2000, pattern=NON_BLANK)

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        candidate = services.candidate_reject(
            scope_id=data["scope_id"],
            candidate_id=data["candidate_id"],
            expected_version=data["expected_version"],
            reason=data["reason"],
            reviewer=self.reviewer,
        )
        return selectors.candidate_wire(candidate)


class ReviseArtifactCandidateApi(_ReviewerApi):
    class InputSerializer(EvidenceSerializer):
        scope_id = scope_field()
        candidate_id = id128_field()
        expected_version = StrictIntegerField(min_value=1)
        proposal = StrictObjectField()

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        family = selectors.candidate_get(scope_id=data["scope_id"], candidate_id=data["candidate_id"]).family
        proposal = _validated_proposal(family, data["proposal"])
        candidate = services.candidate_revise(
            scope_id=data["scope_id"],
            candidate_id=data["candidate_id"],
            expected_version=data["expected_version"],
            submission=_submission(data, proposal),
            reviewer=self.reviewer,
        )
        return selectors.candidate_wire(candidate)


class _GetArtifactApi(BaseApi):
    family = ""

    class InputSerializer(StrictSerializer):
        scope_id = scope_field()
        artifact = ArtifactReferenceSerializer()

    def run(self, data: dict[str, Any]) -> dict[str, Any]:
        ref = data["artifact"]
        if ref["family"] != self.family:
            raise ArtifactNotFound()
        revision = selectors.artifact_revision_get(
            scope_id=data["scope_id"],
            family=ref["family"],
            artifact_id=ref["artifact_id"],
            revision=ref["revision"],
        )
        return {
            "artifact": {
                "family": revision.family,
                "artifact_id": revision.artifact_id,
                "revision": revision.revision,
            },
            "content": revision.content,
            "source_refs": revision.source_refs,
            "artifact_refs": revision.artifact_refs,
        }


class GetExperienceApi(_GetArtifactApi):
    family = Candidate.Family.EXPERIENCE


class GetSkillApi(_GetArtifactApi):
    family = Candidate.Family.SKILL
