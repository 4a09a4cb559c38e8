"""revise_artifact_candidate validates the proposal before it looks the candidate up (422 before
404): a malformed request never learns whether a candidate id exists."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.helpers import assert_error, assert_invalid
from tests.review.factories import (
    create_token,
    experience_proposal,
    make_candidate,
    make_source,
    skill_proposal,
)

REVISE = "/v1/artifact-candidates/revise"


@pytest.fixture
def reviewer_api(api: Any) -> Any:
    api.token = create_token("alice", reviewer=True)[0]
    return api


def _body(candidate_id: str, proposal: Any) -> dict[str, Any]:
    return {
        "scope_id": "repo",
        "candidate_id": candidate_id,
        "expected_version": 1,
        "proposal": proposal,
        "source_refs": [make_source("repo")],
        "artifact_refs": [],
    }


@pytest.mark.parametrize(
    "proposal",
    [
        {},
        {"situation": "only one field"},
        {"name": "x"},
        {"unknown": "field"},
        experience_proposal(lesson=""),
    ],
)
def test_an_invalid_proposal_is_422_even_for_an_unknown_candidate(reviewer_api: Any, proposal: Any) -> None:
    assert_invalid(reviewer_api.post(REVISE, _body("no-such-candidate", proposal)))


def test_the_reported_errors_are_those_of_the_closest_family(reviewer_api: Any) -> None:
    # A skill with one bad field is closer to the skill schema than to the experience schema.
    errors = assert_invalid(
        reviewer_api.post(REVISE, _body("no-such-candidate", skill_proposal(validation=[])))
    )
    assert [e["loc"] for e in errors] == [["body", "proposal", "validation"]]


@pytest.mark.parametrize("proposal", [experience_proposal(), skill_proposal()])
def test_a_valid_proposal_for_an_unknown_candidate_is_404(reviewer_api: Any, proposal: Any) -> None:
    assert_error(reviewer_api.post(REVISE, _body("no-such-candidate", proposal)), 404, "candidate_not_found")


def test_a_proposal_of_the_other_family_is_still_422_for_an_existing_candidate(reviewer_api: Any) -> None:
    candidate = make_candidate("repo", "skill")
    errors = assert_invalid(reviewer_api.post(REVISE, _body(candidate.candidate_id, experience_proposal())))
    assert errors[0]["loc"][:2] == ["body", "proposal"]
