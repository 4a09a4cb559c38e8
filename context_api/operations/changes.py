"""The review thread operations (issue 32; the review addendum of the contract,
``context_api/contract/powercontext-review.openapi.yaml``): a reviewer requests changes or
comments; the proposing agent reads the thread and answers with the candidate's next version.

The shared operations stay exactly as the shared contract says (closed objects: no field added to
``ArtifactCandidate`` or to the propose requests); what is new is served here, each operation
answering with an ``ArtifactCandidateThread`` (the candidate and its thread).
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from context_api import render
from context_api.operations.base import Caller, Operation, operation
from context_api.operations.review import (
    CandidateInput,
    DecisionInput,
    EvidenceInput,
    plausible_proposal,
    submission_of,
    validated_proposal,
)
from context_api.validation import (
    NON_BLANK,
    StrictCharField,
    StrictIntegerField,
    StrictObjectField,
    id128_field,
    scope_field,
)
from review.selectors import candidate as candidate_selectors
from review.selectors import thread as thread_selectors
from review.services import changes

COMMENT_MAX = changes.COMMENT_MAX


def _comment_field() -> StrictCharField:
    return StrictCharField(min_length=1, max_length=COMMENT_MAX, pattern=NON_BLANK)


class CommentInput(DecisionInput):
    comment = _comment_field()
    # {proposal field name: comment}; the names are checked against the candidate's family.
    field_comments = serializers.DictField(
        child=_comment_field(), required=False, allow_null=True, default=None
    )


def _with_thread(candidate: Any) -> dict[str, Any]:
    return render.candidate_thread(candidate, thread_selectors.thread_of(candidate))


@operation(
    "request_changes_artifact_candidate",
    "v1/artifact-candidates/request-changes",
    CommentInput,
    reviewer=True,
)
def request_changes_artifact_candidate(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Send the exact pending version back to its proposer with a comment (reviewers only)."""
    candidate = changes.candidate_request_changes(
        scope_id=data["scope_id"],
        candidate_id=data["candidate_id"],
        expected_version=data["expected_version"],
        comment=data["comment"],
        field_comments=data.get("field_comments"),
        reviewer=caller.user,
    )
    return _with_thread(candidate)


@operation("comment_artifact_candidate", "v1/artifact-candidates/comment", CommentInput, reviewer=True)
def comment_artifact_candidate(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Comment on the exact candidate version without a decision (reviewers only)."""
    candidate = changes.candidate_comment(
        scope_id=data["scope_id"],
        candidate_id=data["candidate_id"],
        expected_version=data["expected_version"],
        comment=data["comment"],
        field_comments=data.get("field_comments"),
        reviewer=caller.user,
    )
    return _with_thread(candidate)


@operation(
    "get_artifact_candidate_thread",
    "v1/artifact-candidates/thread",
    CandidateInput,
    read_only=True,
    idempotent=True,
)
def get_artifact_candidate_thread(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Get a candidate with its review thread: status, change requests and comments."""
    return _with_thread(
        candidate_selectors.candidate_get(scope_id=data["scope_id"], candidate_id=data["candidate_id"])
    )


class AnswerInput(EvidenceInput):
    scope_id = scope_field()
    candidate_id = id128_field()
    expected_version = StrictIntegerField(min_value=1)
    proposal = StrictObjectField()


@operation("answer_artifact_candidate", "v1/artifact-candidates/answer", AnswerInput, status=201)
def answer_artifact_candidate(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Answer a change request with a complete new proposal: the candidate's next version.

    As ``revise_artifact_candidate``: the proposal is checked before the candidate is looked up
    (a 404 never hides a schema error), then against the candidate's own family.
    """
    plausible_proposal(data["proposal"])
    family = candidate_selectors.candidate_get(
        scope_id=data["scope_id"], candidate_id=data["candidate_id"]
    ).family
    candidate = changes.candidate_answer(
        scope_id=data["scope_id"],
        candidate_id=data["candidate_id"],
        expected_version=data["expected_version"],
        submission=submission_of(data, validated_proposal(family, data["proposal"])),
        proposed_by=caller.user,
    )
    return _with_thread(candidate)


OPERATIONS: tuple[Operation, ...] = (
    request_changes_artifact_candidate,
    comment_artifact_candidate,
    get_artifact_candidate_thread,
    answer_artifact_candidate,
)
