"""The candidate, Experience and Skill operations over HTTP: lifecycle, rules, authorization,
the recall gate through POST /v1/context/prepare, and atomicity under an injected fault."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.forms.models import model_to_dict

from powercontext.core.models import ApiToken, Artifact, ArtifactRevision, ExperienceSearchDocument
from powercontext.core.tokens import api_token_revoke, token_digest
from powercontext.prepare.builder import CONTENT_PREFIX, CONTENT_SUFFIX
from powercontext.prepare.experience import experience_search
from powercontext.search.fulltext import analyzer
from review import services
from review.models import Candidate, CandidateVersion, ReviewDecision
from tests.powercontext.factories import make_memory
from tests.review.factories import (
    assert_error,
    assert_invalid,
    create_token,
    experience_proposal,
    make_approved,
    make_candidate,
    make_source,
    propose_body,
    skill_proposal,
)

CANDIDATE_KEYS = {
    "candidate_id",
    "version",
    "family",
    "status",
    "proposal",
    "source_refs",
    "artifact_refs",
    "target",
    "reason",
    "result_artifact",
    "decision_reason",
}
NULLABLE_KEYS = {"target", "reason", "result_artifact", "decision_reason"}
REVIEW_OPS = ("approve", "reject", "revise")


# --- helpers --------------------------------------------------------------------------------------


def propose(api: Any, family: str = "experience", **body: Any) -> Any:
    return api.post(f"/v1/{family}/propose", propose_body(family=family, **body))


def proposed(api: Any, family: str = "experience", **body: Any) -> dict[str, Any]:
    response = propose(api, family, **body)
    assert response.status_code == 201, response.content
    return response.json()


def op_body(
    op: str, candidate: dict[str, Any], *, scope_id: str = "repo", version: int | None = None, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "scope_id": scope_id,
        "candidate_id": candidate["candidate_id"],
        "expected_version": candidate["version"] if version is None else version,
    }
    if op == "reject":
        body["reason"] = "not reusable"
    if op == "revise":
        body.update(
            proposal=experience_proposal(lesson="a revised lesson")
            if candidate["family"] == "experience"
            else skill_proposal(),
            source_refs=[make_source(scope_id)],
            artifact_refs=[],
        )
    body.update(extra)
    return body


def review(api: Any, op: str, candidate: dict[str, Any], **kwargs: Any) -> Any:
    return api.post(f"/v1/artifact-candidates/{op}", op_body(op, candidate, **kwargs))


def reviewed(api: Any, op: str, candidate: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    response = review(api, op, candidate, **kwargs)
    assert response.status_code == 200, response.content
    return response.json()


def get_candidate(api: Any, candidate_id: str, scope_id: str = "repo") -> Any:
    return api.post("/v1/artifact-candidates/get", {"scope_id": scope_id, "candidate_id": candidate_id})


def list_candidates(api: Any, scope_id: str = "repo", **extra: Any) -> Any:
    return api.post("/v1/artifact-candidates/list", {"scope_id": scope_id, **extra})


def get_artifact(api: Any, family: str, ref: dict[str, Any], scope_id: str = "repo") -> Any:
    return api.post(f"/v1/{family}/get", {"scope_id": scope_id, "artifact": ref})


def prepare_items(api: Any, query: str, scope_id: str = "repo") -> list[dict[str, Any]]:
    """The items of a prepared context (``[]`` when it is empty)."""
    response = api.post("/v1/context/prepare", {"scope_id": scope_id, "query": query})
    assert response.status_code == 200, response.content
    body = response.json()
    if body["status"] == "empty":
        assert body["content"] is None and body["content_bytes"] == 0
        return []
    content = body["content"]
    assert content.startswith(CONTENT_PREFIX) and content.endswith(CONTENT_SUFFIX)
    return json.loads(content[len(CONTENT_PREFIX) : -len(CONTENT_SUFFIX)])["items"]


def prepared_text(api: Any, query: str, scope_id: str = "repo") -> str:
    response = api.post("/v1/context/prepare", {"scope_id": scope_id, "query": query})
    assert response.status_code == 200, response.content
    return response.json()["content"] or ""


def assert_candidate_shape(candidate: dict[str, Any]) -> None:
    assert set(candidate) == CANDIDATE_KEYS, candidate


def written_rows() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (
            Candidate,
            CandidateVersion,
            ReviewDecision,
            Artifact,
            ArtifactRevision,
            ExperienceSearchDocument,
        )
    }


@pytest.fixture
def reviewer_token(db: None) -> str:
    return create_token("alice", reviewer=True)[0]


@pytest.fixture
def proposer_token(db: None) -> str:
    return create_token("bob")[0]


@pytest.fixture
def reviewer_api(api: Any, reviewer_token: str) -> Any:
    api.token = reviewer_token
    return api


# --- lifecycle ----------------------------------------------------------------------------------------


def test_propose_answers_201_with_a_pending_version_one_and_every_key(api: Any) -> None:
    proposal = experience_proposal()
    source = make_source("repo")

    response = propose(api, proposal=proposal, source_refs=[source])

    assert response.status_code == 201, response.content
    assert response["X-PowerContext-Request-ID"]
    candidate = response.json()
    assert_candidate_shape(candidate)
    assert candidate["candidate_id"].startswith("cand_")
    assert (candidate["version"], candidate["family"], candidate["status"]) == (1, "experience", "pending")
    assert candidate["proposal"] == proposal
    assert (candidate["source_refs"], candidate["artifact_refs"]) == ([source], [])
    assert {key: candidate[key] for key in NULLABLE_KEYS} == dict.fromkeys(NULLABLE_KEYS)
    assert not ArtifactRevision.objects.exists()
    assert get_candidate(api, candidate["candidate_id"]).json() == candidate


def test_proposing_a_skill_answers_201(api: Any) -> None:
    proposal = skill_proposal()
    candidate = proposed(api, "skill", proposal=proposal, reason="we keep redoing this")
    assert_candidate_shape(candidate)
    assert (candidate["family"], candidate["proposal"], candidate["reason"]) == (
        "skill",
        proposal,
        "we keep redoing this",
    )


def test_proposing_needs_no_token(api: Any) -> None:
    assert api.token is None
    assert propose(api).status_code == 201


def test_a_proposers_token_is_recorded_on_the_version(api: Any, proposer_token: str) -> None:
    api.token = proposer_token
    candidate = proposed(api)
    version = CandidateVersion.objects.get(candidate__candidate_id=candidate["candidate_id"])
    assert version.created_by is not None and version.created_by.username == "bob"


def test_revise_answers_the_next_version_and_keeps_the_old_version_row(reviewer_api: Any) -> None:
    candidate = proposed(reviewer_api)
    old = CandidateVersion.objects.get(candidate__candidate_id=candidate["candidate_id"], version=1)
    old_row = model_to_dict(old)
    new_proposal = experience_proposal(lesson="cache wheels between runs")

    revised = reviewed(reviewer_api, "revise", candidate, proposal=new_proposal, reason="sharper")

    assert_candidate_shape(revised)
    assert (revised["candidate_id"], revised["version"], revised["status"]) == (
        candidate["candidate_id"],
        2,
        "pending",
    )
    assert (revised["proposal"], revised["reason"]) == (new_proposal, "sharper")
    again = CandidateVersion.objects.get(pk=old.pk)
    assert model_to_dict(again) == old_row and again.created_at == old.created_at
    assert get_candidate(reviewer_api, candidate["candidate_id"]).json() == revised


def test_revise_validates_the_proposal_against_the_candidates_family(reviewer_api: Any) -> None:
    candidate = proposed(reviewer_api, "skill")
    errors = assert_invalid(review(reviewer_api, "revise", candidate, proposal=experience_proposal()))
    assert errors[0]["loc"][:2] == ["body", "proposal"]
    assert Candidate.objects.get(candidate_id=candidate["candidate_id"]).version == 1


def test_approve_writes_the_revision_moves_the_head_and_sets_searchable_text(reviewer_api: Any) -> None:
    proposal = experience_proposal()
    candidate = proposed(reviewer_api, proposal=proposal)

    approved = reviewed(reviewer_api, "approve", candidate)

    assert_candidate_shape(approved)
    assert (approved["status"], approved["version"], approved["decision_reason"]) == ("approved", 1, None)
    result = approved["result_artifact"]
    assert result["family"] == "experience" and result["revision"] == 1
    head = Artifact.objects.get(family="experience", artifact_id=result["artifact_id"])
    assert head.current_revision == 1
    revision = ArtifactRevision.objects.get(head=head, revision=1)
    assert revision.parent_revision is None and revision.content == proposal
    assert revision.created_by is not None and revision.created_by.username == "alice"
    expected = analyzer.searchable_text(proposal[k] for k in ("situation", "action", "outcome", "lesson"))
    assert head.searchable_text == expected
    assert "Situation:" not in head.searchable_text and "situation" not in head.searchable_text.split()
    fetched = get_artifact(reviewer_api, "experience", result)
    assert fetched.status_code == 200
    assert fetched.json() == {
        "artifact": result,
        "content": proposal,
        "source_refs": candidate["source_refs"],
        "artifact_refs": [],
    }


def test_approving_a_targeted_candidate_records_the_lineage(reviewer_api: Any) -> None:
    first = reviewed(reviewer_api, "approve", proposed(reviewer_api))["result_artifact"]
    candidate = proposed(reviewer_api, artifact_refs=[first], target=first)
    assert candidate["target"] == first

    approved = reviewed(reviewer_api, "approve", candidate)

    assert approved["result_artifact"] == {**first, "revision": 2}
    revision = ArtifactRevision.objects.get(artifact_id=first["artifact_id"], revision=2)
    assert revision.parent_revision == 1
    assert Artifact.objects.get(artifact_id=first["artifact_id"]).current_revision == 2


def test_reject_records_the_reason_and_writes_no_artifact(reviewer_api: Any) -> None:
    candidate = proposed(reviewer_api)

    rejected = reviewed(reviewer_api, "reject", candidate, reason="only true on one laptop")

    assert_candidate_shape(rejected)
    assert (rejected["status"], rejected["decision_reason"], rejected["result_artifact"]) == (
        "rejected",
        "only true on one laptop",
        None,
    )
    assert not ArtifactRevision.objects.exists()


@pytest.mark.parametrize("terminal", ["approve", "reject"])
@pytest.mark.parametrize("op", REVIEW_OPS)
def test_a_terminal_candidate_answers_409_candidate_terminal(
    reviewer_api: Any, terminal: str, op: str
) -> None:
    candidate = reviewed(reviewer_api, terminal, proposed(reviewer_api))
    before = written_rows()

    details = assert_error(review(reviewer_api, op, candidate), 409, "candidate_terminal")

    assert details == {"status": candidate["status"]}
    assert written_rows() == before


@pytest.mark.parametrize("op", REVIEW_OPS)
def test_a_stale_expected_version_answers_409_candidate_conflict(reviewer_api: Any, op: str) -> None:
    candidate = reviewed(reviewer_api, "revise", proposed(reviewer_api))
    before = written_rows()

    details = assert_error(review(reviewer_api, op, candidate, version=1), 409, "candidate_conflict")

    assert details == {"expected_version": 1, "current_version": 2}
    assert written_rows() == before


# --- target rules ----------------------------------------------------------------------------------------


def test_a_stale_target_answers_409_artifact_conflict_with_the_current_revision(reviewer_api: Any) -> None:
    first = reviewed(reviewer_api, "approve", proposed(reviewer_api))["result_artifact"]
    reviewed(reviewer_api, "approve", proposed(reviewer_api, artifact_refs=[first], target=first))
    before = written_rows()

    details = assert_error(
        propose(reviewer_api, artifact_refs=[first], target=first), 409, "artifact_conflict"
    )

    assert details == {"current": {**first, "revision": 2}}
    assert written_rows() == before


def test_a_target_that_moved_before_approval_answers_409_artifact_conflict(reviewer_api: Any) -> None:
    first = reviewed(reviewer_api, "approve", proposed(reviewer_api))["result_artifact"]
    slow = proposed(reviewer_api, artifact_refs=[first], target=first)
    reviewed(reviewer_api, "approve", proposed(reviewer_api, artifact_refs=[first], target=first))

    details = assert_error(review(reviewer_api, "approve", slow), 409, "artifact_conflict")

    assert details == {"current": {**first, "revision": 2}}
    assert get_candidate(reviewer_api, slow["candidate_id"]).json() == slow


def test_a_stale_target_at_revise_answers_409_artifact_conflict(reviewer_api: Any) -> None:
    first = reviewed(reviewer_api, "approve", proposed(reviewer_api))["result_artifact"]
    reviewed(reviewer_api, "approve", proposed(reviewer_api, artifact_refs=[first], target=first))
    candidate = proposed(reviewer_api)

    details = assert_error(
        review(reviewer_api, "revise", candidate, artifact_refs=[first], target=first),
        409,
        "artifact_conflict",
    )
    assert details == {"current": {**first, "revision": 2}}


def test_a_target_must_be_listed_in_artifact_refs(api: Any) -> None:
    _, first = make_approved("repo", "experience")
    errors = assert_invalid(propose(api, target=first))
    assert errors[0]["loc"] == ["body", "target"]


def test_a_target_of_another_family_is_invalid(api: Any) -> None:
    _, skill = make_approved("repo", "skill")
    assert_invalid(propose(api, "experience", artifact_refs=[skill], target=skill))


@pytest.mark.parametrize("listed", [True, False])
def test_a_missing_target_is_invalid(api: Any, listed: bool) -> None:
    ghost = {"family": "experience", "artifact_id": "exp_ghost", "revision": 1}
    before = written_rows()
    body: dict[str, Any] = {"target": ghost}
    if listed:
        body["artifact_refs"] = [ghost]
    assert_invalid(propose(api, **body))
    assert written_rows() == before


# --- evidence rules --------------------------------------------------------------------------------------


def test_no_evidence_is_invalid(api: Any) -> None:
    assert_invalid(propose(api, source_refs=[], artifact_refs=[]))
    assert not Candidate.objects.exists()


def test_thirty_three_references_combined_are_invalid(api: Any) -> None:
    sources = [make_source("repo") for _ in range(17)]
    memory = [
        {"family": "memory", "artifact_id": "memory", "revision": make_memory("repo").revision}
        for _ in range(16)
    ]

    assert_invalid(propose(api, source_refs=sources, artifact_refs=memory))
    assert propose(api, source_refs=sources[:16], artifact_refs=memory).status_code == 201
    assert Candidate.objects.count() == 1


def test_more_than_thirty_two_of_one_kind_is_invalid(api: Any) -> None:
    source = make_source("repo")
    assert_invalid(propose(api, source_refs=[source] * 33))


def test_a_nonexistent_source_is_invalid(api: Any) -> None:
    errors = assert_invalid(propose(api, source_refs=[{"name": "content", "source_id": "never"}]))
    assert errors[0]["loc"] == ["body", "source_refs", 0]


def test_a_source_of_another_scope_is_invalid(api: Any) -> None:
    assert_invalid(propose(api, source_refs=[make_source("elsewhere")]))


def test_a_nonexistent_artifact_revision_is_invalid(api: Any) -> None:
    _, ref = make_approved("repo", "experience")
    errors = assert_invalid(propose(api, artifact_refs=[{**ref, "revision": 9}]))
    assert errors[0]["loc"] == ["body", "artifact_refs", 0]


def test_an_artifact_revision_of_another_scope_is_invalid(api: Any) -> None:
    _, foreign = make_approved("elsewhere", "experience")
    assert_invalid(propose(api, artifact_refs=[foreign]))
    assert Candidate.objects.filter(scope_id="repo").count() == 0


# --- reason rules ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reason", [None, "x", "r" * 2000])
def test_a_proposal_reason_may_be_null_or_one_to_2000_chars(api: Any, reason: str | None) -> None:
    assert proposed(api, reason=reason)["reason"] == reason


@pytest.mark.parametrize("reason", ["", "r" * 2001, 5])
def test_a_proposal_reason_outside_the_limits_is_invalid(api: Any, reason: Any) -> None:
    errors = assert_invalid(propose(api, reason=reason))
    assert errors[0]["loc"] == ["body", "reason"]


@pytest.mark.parametrize("reason", ["", "   ", "\n\t", "r" * 2001, None])
def test_a_rejection_needs_a_non_blank_reason_of_at_most_2000_chars(reviewer_api: Any, reason: Any) -> None:
    candidate = proposed(reviewer_api)
    errors = assert_invalid(review(reviewer_api, "reject", candidate, reason=reason))
    assert errors[0]["loc"] == ["body", "reason"]
    assert get_candidate(reviewer_api, candidate["candidate_id"]).json()["status"] == "pending"


def test_a_rejection_without_a_reason_is_invalid(reviewer_api: Any) -> None:
    candidate = proposed(reviewer_api)
    body = op_body("reject", candidate)
    del body["reason"]
    assert_invalid(reviewer_api.post("/v1/artifact-candidates/reject", body))
    assert not ReviewDecision.objects.exists()


def test_a_rejection_reason_of_2000_chars_is_kept(reviewer_api: Any) -> None:
    reason = "r" * 2000
    assert (
        reviewed(reviewer_api, "reject", proposed(reviewer_api), reason=reason)["decision_reason"] == reason
    )


# --- list ----------------------------------------------------------------------------------------------------


def test_the_list_defaults_to_50_pending_candidates_oldest_first(api: Any) -> None:
    source = make_source("repo")
    ids = [make_candidate("repo", source_refs=[source]).candidate_id for _ in range(51)]

    response = list_candidates(api)

    assert response.status_code == 200
    page = response.json()
    assert set(page) == {"candidates", "next_cursor"}
    assert [c["candidate_id"] for c in page["candidates"]] == ids[:50]
    for candidate in page["candidates"]:
        assert_candidate_shape(candidate)
    assert page["next_cursor"] is not None
    rest = list_candidates(api, cursor=page["next_cursor"]).json()
    assert ([c["candidate_id"] for c in rest["candidates"]], rest["next_cursor"]) == (ids[50:], None)


def test_the_list_limit_is_at_most_100(api: Any) -> None:
    source = make_source("repo")
    ids = [make_candidate("repo", source_refs=[source]).candidate_id for _ in range(101)]

    page = list_candidates(api, limit=100).json()
    assert [c["candidate_id"] for c in page["candidates"]] == ids[:100]
    assert_invalid(list_candidates(api, limit=101))
    assert_invalid(list_candidates(api, limit=0))


def test_a_cursor_round_trip_visits_every_candidate_once(api: Any) -> None:
    source = make_source("repo")
    ids = [make_candidate("repo", source_refs=[source]).candidate_id for _ in range(7)]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        body: dict[str, Any] = {"limit": 3}
        if cursor is not None:
            body["cursor"] = cursor
        page = list_candidates(api, **body).json()
        seen.extend(c["candidate_id"] for c in page["candidates"])
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids and pages == 3


def test_an_exact_final_page_has_no_next_cursor(api: Any) -> None:
    source = make_source("repo")
    for _ in range(4):
        make_candidate("repo", source_refs=[source])
    first = list_candidates(api, limit=2).json()
    second = list_candidates(api, limit=2, cursor=first["next_cursor"]).json()
    assert len(second["candidates"]) == 2 and second["next_cursor"] is None


@pytest.mark.parametrize("cursor", ["not-a-cursor", "!!!", "YmVmb3JlOjE", "YWZ0ZXI6eA", ""])
def test_an_invalid_cursor_is_invalid(api: Any, cursor: str) -> None:
    errors = assert_invalid(list_candidates(api, cursor=cursor))
    assert errors[0]["loc"] == ["body", "cursor"]


def test_the_list_filters_by_status_and_family(reviewer_api: Any) -> None:
    pending_experience = proposed(reviewer_api)
    pending_skill = proposed(reviewer_api, "skill")
    approved = reviewed(reviewer_api, "approve", proposed(reviewer_api))
    rejected = reviewed(reviewer_api, "reject", proposed(reviewer_api, "skill"))
    make_candidate("elsewhere")

    def ids(**extra: Any) -> list[str]:
        response = list_candidates(reviewer_api, **extra)
        assert response.status_code == 200, response.content
        return [c["candidate_id"] for c in response.json()["candidates"]]

    assert ids() == [pending_experience["candidate_id"], pending_skill["candidate_id"]]
    assert ids(status="pending", family=None) == ids()
    assert ids(family="skill") == [pending_skill["candidate_id"]]
    assert ids(family="experience") == [pending_experience["candidate_id"]]
    assert ids(status="approved") == [approved["candidate_id"]]
    assert ids(status="rejected") == [rejected["candidate_id"]]
    assert ids(status="rejected", family="experience") == []
    assert_invalid(list_candidates(reviewer_api, status="superseded"))
    assert_invalid(list_candidates(reviewer_api, family="memory"))


# --- exact gets and 404s --------------------------------------------------------------------------------------


def test_get_experience_returns_the_exact_revision_even_after_a_later_one(reviewer_api: Any) -> None:
    first_proposal = experience_proposal(lesson="the first lesson")
    first = reviewed(reviewer_api, "approve", proposed(reviewer_api, proposal=first_proposal))[
        "result_artifact"
    ]
    second_proposal = experience_proposal(lesson="the second lesson")
    second = reviewed(
        reviewer_api,
        "approve",
        proposed(reviewer_api, proposal=second_proposal, artifact_refs=[first], target=first),
    )["result_artifact"]

    old = get_artifact(reviewer_api, "experience", first).json()
    new = get_artifact(reviewer_api, "experience", second).json()

    assert (old["artifact"], old["content"]) == (first, first_proposal)
    assert (new["artifact"], new["content"], new["artifact_refs"]) == (second, second_proposal, [first])


def test_get_skill_returns_the_exact_revision_even_after_a_later_one(reviewer_api: Any) -> None:
    proposal = skill_proposal()
    candidate = proposed(reviewer_api, "skill", proposal=proposal)
    ref = reviewed(reviewer_api, "approve", candidate)["result_artifact"]
    later_proposal = skill_proposal(instructions="Tag, build, sign, publish, announce.")
    later = reviewed(
        reviewer_api,
        "approve",
        proposed(reviewer_api, "skill", proposal=later_proposal, artifact_refs=[ref], target=ref),
    )["result_artifact"]

    response = get_artifact(reviewer_api, "skill", ref)

    assert response.status_code == 200
    assert response.json() == {
        "artifact": ref,
        "content": proposal,
        "source_refs": candidate["source_refs"],
        "artifact_refs": [],
    }
    assert later == {**ref, "revision": 2}
    assert get_artifact(reviewer_api, "skill", later).json()["content"] == later_proposal


def test_unknown_or_mismatched_artifacts_answer_404_artifact_not_found(api: Any) -> None:
    _, experience = make_approved("repo", "experience")
    _, skill = make_approved("repo", "skill")
    assert_error(get_artifact(api, "experience", {**experience, "revision": 2}), 404, "artifact_not_found")
    assert_error(get_artifact(api, "experience", skill), 404, "artifact_not_found")
    assert_error(get_artifact(api, "skill", experience), 404, "artifact_not_found")
    assert_error(get_artifact(api, "experience", experience, scope_id="elsewhere"), 404, "artifact_not_found")
    memory = {"family": "memory", "artifact_id": "memory", "revision": make_memory("repo").revision}
    assert_error(get_artifact(api, "experience", memory), 404, "artifact_not_found")


def test_a_pending_candidate_has_no_artifact_to_get(api: Any) -> None:
    candidate = proposed(api)
    assert candidate["result_artifact"] is None
    assert not ArtifactRevision.objects.filter(family="experience").exists()


@pytest.mark.parametrize("op", REVIEW_OPS)
def test_an_unknown_candidate_answers_404_candidate_not_found(reviewer_api: Any, op: str) -> None:
    ghost = {"candidate_id": "cand_ghost", "version": 1, "family": "experience"}
    assert_error(review(reviewer_api, op, ghost), 404, "candidate_not_found")


def test_getting_an_unknown_candidate_or_one_of_another_scope_answers_404(api: Any) -> None:
    candidate = proposed(api)
    assert_error(get_candidate(api, "cand_ghost"), 404, "candidate_not_found")
    assert_error(get_candidate(api, candidate["candidate_id"], scope_id="Repo"), 404, "candidate_not_found")


# --- authorization ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", REVIEW_OPS)
def test_review_operations_without_a_token_answer_401_with_a_bearer_challenge(api: Any, op: str) -> None:
    candidate = proposed(api)
    before = written_rows()

    response = review(api, op, candidate)

    assert_error(response, 401, "unauthorized")
    assert response["WWW-Authenticate"] == "Bearer"
    assert written_rows() == before


@pytest.mark.parametrize("op", REVIEW_OPS)
def test_review_operations_with_an_unknown_token_answer_401(api: Any, op: str) -> None:
    candidate = proposed(api)
    api.token = "pct_not-a-token"
    assert_error(review(api, op, candidate), 401, "unauthorized")


@pytest.mark.parametrize("op", REVIEW_OPS)
def test_review_operations_with_a_propose_only_token_answer_403_and_write_nothing(
    api: Any, proposer_token: str, op: str
) -> None:
    api.token = proposer_token
    candidate = proposed(api)
    before = written_rows()

    assert_error(review(api, op, candidate), 403, "forbidden")

    assert written_rows() == before
    assert get_candidate(api, candidate["candidate_id"]).json() == candidate


@pytest.mark.parametrize("op", REVIEW_OPS)
def test_review_operations_with_a_reviewer_token_succeed(api: Any, reviewer_token: str, op: str) -> None:
    candidate = proposed(api)
    api.token = reviewer_token
    assert review(api, op, candidate).status_code == 200


def test_a_revoked_reviewer_token_answers_401(api: Any, reviewer_token: str) -> None:
    candidate = proposed(api)
    api.token = reviewer_token
    api_token_revoke(
        token_ids=ApiToken.objects.filter(digest=token_digest(reviewer_token)).values_list("pk", flat=True)
    )
    assert_error(review(api, "approve", candidate), 401, "unauthorized")


@pytest.mark.django_db
def test_create_api_token_prints_the_token_last_and_stores_only_its_digest() -> None:
    token, lines = create_token("carol")

    assert lines[0] == "created user carol (proposer); token:"
    assert token.startswith("pct_") and len(token) > 40
    stored = ApiToken.objects.get(user__username="carol")
    assert stored.digest == token_digest(token) and stored.prefix == token[:8]
    assert token not in stored.digest
    user = get_user_model().objects.get(username="carol")
    assert not user.has_usable_password() and not user.has_perm("review.review_candidate")


@pytest.mark.django_db
def test_create_api_token_reviewer_flag_grants_the_review_permission() -> None:
    token, lines = create_token("dave", reviewer=True)

    assert lines[0] == "created user dave (reviewer); token:"
    assert get_user_model().objects.get(username="dave").has_perm("review.review_candidate")


@pytest.mark.django_db
def test_create_api_token_reuses_an_existing_user_and_upgrades_it() -> None:
    first, _ = create_token("erin")
    user = get_user_model().objects.get(username="erin")

    second, lines = create_token("erin", reviewer=True)

    assert lines[0] == "existing user erin (reviewer); token:"
    assert first != second
    assert get_user_model().objects.filter(username="erin").count() == 1
    assert set(ApiToken.objects.filter(user=user).values_list("digest", flat=True)) == {
        token_digest(first),
        token_digest(second),
    }


def test_every_token_of_an_upgraded_user_may_review(api: Any) -> None:
    first, _ = create_token("frank")
    create_token("frank", reviewer=True)
    api.token = first
    assert review(api, "approve", proposed(api)).status_code == 200


# --- the recall gate through prepare -------------------------------------------------------------------------------


def test_a_pending_candidate_is_never_recalled(api: Any) -> None:
    proposed(api, proposal=experience_proposal(situation="the zanzibar cache melted"))
    assert prepare_items(api, "zanzibar") == []


def test_a_rejected_candidate_is_never_recalled(reviewer_api: Any) -> None:
    candidate = proposed(reviewer_api, proposal=experience_proposal(situation="the zanzibar cache melted"))
    reviewed(reviewer_api, "reject", candidate)
    assert prepare_items(reviewer_api, "zanzibar") == []


def test_a_revised_away_version_is_never_recalled_even_once_approved(reviewer_api: Any) -> None:
    candidate = proposed(reviewer_api, proposal=experience_proposal(situation="the zanzibar cache melted"))
    revised = reviewed(
        reviewer_api, "revise", candidate, proposal=experience_proposal(situation="the quokka cache froze")
    )
    reviewed(reviewer_api, "approve", revised)
    assert prepare_items(reviewer_api, "zanzibar") == []
    assert len(prepare_items(reviewer_api, "quokka")) == 1


def test_approved_skill_content_is_never_recalled(reviewer_api: Any) -> None:
    candidate = proposed(
        reviewer_api, "skill", proposal=skill_proposal(instructions="run the zanzibar release dance")
    )
    reviewed(reviewer_api, "approve", candidate)
    assert prepare_items(reviewer_api, "zanzibar") == []
    assert "zanzibar" not in prepared_text(reviewer_api, "zanzibar release")


def test_an_approved_experience_is_recalled_with_its_citation(reviewer_api: Any) -> None:
    proposal = experience_proposal(situation="the zanzibar cache melted under load")
    ref = reviewed(reviewer_api, "approve", proposed(reviewer_api, proposal=proposal))["result_artifact"]

    items = prepare_items(reviewer_api, "zanzibar")

    assert len(items) == 1
    item = items[0]
    assert item["kind"] == "experience"
    assert item["citation"] == {"artifact_ref": ref}
    assert item["truncated"] is False
    assert "zanzibar cache melted under load" in item["content"]
    assert prepare_items(reviewer_api, "zanzibar", scope_id="elsewhere") == []


def test_a_superseded_revision_is_never_recalled(reviewer_api: Any) -> None:
    old = experience_proposal(situation="the zanzibar cache melted", lesson="zanzibar needs a bigger cache")
    first = reviewed(reviewer_api, "approve", proposed(reviewer_api, proposal=old))["result_artifact"]
    new = experience_proposal(situation="the quokka cache froze")
    second = reviewed(
        reviewer_api, "approve", proposed(reviewer_api, proposal=new, artifact_refs=[first], target=first)
    )["result_artifact"]

    assert prepare_items(reviewer_api, "zanzibar") == []
    assert experience_search(scope_id="repo", query="zanzibar", limit=8) == []
    items = prepare_items(reviewer_api, "quokka zanzibar")
    assert [item["citation"] for item in items] == [{"artifact_ref": second}]
    assert "zanzibar" not in items[0]["content"]
    # The old revision stays readable by its exact reference; it is only never recalled.
    assert get_artifact(reviewer_api, "experience", first).json()["content"] == old


# --- fault injection ------------------------------------------------------------------------------------------------


def test_a_failure_inside_approval_answers_500_and_writes_nothing(
    reviewer_api: Any, monkeypatch: Any
) -> None:
    first = reviewed(
        reviewer_api,
        "approve",
        proposed(reviewer_api, proposal=experience_proposal(situation="the zanzibar cache")),
    )["result_artifact"]
    candidate = proposed(
        reviewer_api,
        proposal=experience_proposal(situation="the quokka cache"),
        artifact_refs=[first],
        target=first,
    )
    head_before = model_to_dict(Artifact.objects.get(artifact_id=first["artifact_id"]))
    before = written_rows()

    def explode() -> None:
        raise RuntimeError("injected fault")

    monkeypatch.setattr(services, "_after_revision_written", explode)
    response = review(reviewer_api, "approve", candidate)

    assert assert_error(response, 500, "internal_error") is None
    assert "injected" not in response.content.decode()
    assert written_rows() == before
    assert model_to_dict(Artifact.objects.get(artifact_id=first["artifact_id"])) == head_before
    assert not ArtifactRevision.objects.filter(artifact_id=first["artifact_id"], revision=2).exists()
    assert get_candidate(reviewer_api, candidate["candidate_id"]).json() == candidate
    assert prepare_items(reviewer_api, "quokka") == []
    assert [i["citation"] for i in prepare_items(reviewer_api, "zanzibar")] == [{"artifact_ref": first}]


def test_a_failure_inside_a_first_approval_leaves_no_head(reviewer_api: Any, monkeypatch: Any) -> None:
    candidate = proposed(reviewer_api)

    def explode() -> None:
        raise RuntimeError("injected fault")

    monkeypatch.setattr(services, "_after_revision_written", explode)
    assert_error(review(reviewer_api, "approve", candidate), 500, "internal_error")

    assert not Artifact.objects.filter(family="experience").exists()
    assert not ArtifactRevision.objects.exists()
    assert not ExperienceSearchDocument.objects.exists()
    assert not ReviewDecision.objects.exists()
    current = get_candidate(reviewer_api, candidate["candidate_id"]).json()
    assert (current["status"], current["version"], current["result_artifact"]) == ("pending", 1, None)
