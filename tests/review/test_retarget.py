"""Issue 32, D1 ("approved text silently dropped"): an operation that moves a pending update to a
newer revision of its Artifact runs the Rebase's three-way merge or is refused.

The scenario: revision 1 is approved; two updates are written against it; the first is approved
as revision 2 (it adds a sentence to the outcome); the second still targets revision 1. Revising
the second with ``target`` moved to revision 2 and its old proposal used to answer 200, and
approving it then dropped revision 2's sentence. A revise never moves the target now
(``409 rebase_required``); Rebase and the conflict editor are the only ways onto a newer
revision, and both merge.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from powercontext.core.exceptions import ArtifactConflict, InvalidRequest, RebaseRequired
from powercontext.core.models import ArtifactRevision
from review import services
from review.models import Candidate, CandidateVersion
from tests.review.factories import (
    assert_error,
    create_token,
    experience_proposal,
    make_approved,
    make_candidate,
    make_reviewer,
)
from tests.review.test_inbox_views import client_for, refresh, text_of, url

pytestmark = pytest.mark.django_db

ADDED = "Revision two adds this approved sentence."


def _update(ref: dict[str, Any], proposal: dict[str, Any]) -> Candidate:
    return make_candidate(proposal=proposal, artifact_refs=[ref], target=ref, source_refs=[])


def _approve(candidate: Candidate) -> Candidate:
    return services.candidate_approve(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version,
        reviewer=make_reviewer(),
    )


def _stale(*, conflicting: bool = False) -> tuple[dict[str, Any], Candidate, dict[str, Any]]:
    """(revision 1's reference, the stale update still targeting it, revision 1's content); the
    head is at revision 2, whose outcome ends with ``ADDED``. The stale update rewrites the
    lesson (with ``conflicting``, the outcome too)."""
    proposal = experience_proposal()
    _, ref = make_approved(proposal=proposal)
    first = _update(ref, {**proposal, "outcome": f"{proposal['outcome']} {ADDED}"})
    changes = {"lesson": "the stale update's lesson"}
    if conflicting:
        changes["outcome"] = "the stale update's own outcome"
    stale = _update(ref, {**proposal, **changes})
    assert _approve(first).result_revision == 2
    return ref, stale, proposal


def _rows() -> tuple[int, int]:
    return CandidateVersion.objects.count(), ArtifactRevision.objects.count()


def _revise_body(stale: Candidate, ref: dict[str, Any], revision: int) -> dict[str, Any]:
    """The D1 request: the stale update's own proposal, the target moved to ``revision``."""
    moved = {**ref, "revision": revision}
    return {
        "scope_id": stale.scope_id,
        "candidate_id": stale.candidate_id,
        "expected_version": stale.version,
        "proposal": stale.latest.proposal,
        "source_refs": [],
        "artifact_refs": [moved],
        "target": moved,
        "reason": stale.latest.reason,
    }


# --- the REST reproduction --------------------------------------------------------------------------


def test_d1_rest_revise_onto_the_newer_revision_is_409_rebase_required_and_writes_nothing(api: Any) -> None:
    ref, stale, _ = _stale()
    api.token = create_token("alice", reviewer=True)[0]
    before = _rows()

    response = api.post("/v1/artifact-candidates/revise", _revise_body(stale, ref, 2))

    details = assert_error(response, 409, "rebase_required")
    assert details == {"target": ref, "requested": {**ref, "revision": 2}, "current": {**ref, "revision": 2}}
    assert "rebase" in response.json()["error"]["message"].lower()
    assert _rows() == before  # nothing written
    again = refresh(stale)
    assert (again.version, again.latest_id, again.latest.target) == (1, stale.latest_id, ref)
    # Rebased instead, the same update keeps revision 2's sentence when approved.
    rebased = services.candidate_rebase(
        scope_id=stale.scope_id,
        candidate_id=stale.candidate_id,
        expected_version=1,
        onto_revision=2,
        reviewer=make_reviewer(),
    )
    approved = _approve(rebased)
    content = ArtifactRevision.objects.get(head=approved.result_head, revision=3).content
    assert content["outcome"].endswith(ADDED)
    assert content["lesson"] == "the stale update's lesson"


def test_d1_rest_revise_onto_an_older_or_unknown_revision_is_refused_alike(api: Any) -> None:
    ref, stale, _ = _stale()
    api.token = create_token("alice", reviewer=True)[0]
    for revision in (3, 99):  # not the head either: still "rebase", never a write
        details = assert_error(
            api.post("/v1/artifact-candidates/revise", _revise_body(stale, ref, revision)),
            409,
            "rebase_required",
        )
        assert details["current"] == {**ref, "revision": 2}
    assert refresh(stale).version == 1


def test_a_rest_revise_keeping_the_stale_target_is_still_409_artifact_conflict(api: Any) -> None:
    ref, stale, _ = _stale()
    api.token = create_token("alice", reviewer=True)[0]
    details = assert_error(
        api.post("/v1/artifact-candidates/revise", _revise_body(stale, ref, 1)), 409, "artifact_conflict"
    )
    assert details == {"current": {**ref, "revision": 2}}
    assert refresh(stale).version == 1


def test_a_rest_revise_of_a_rebased_update_keeping_its_target_is_a_plain_revise(api: Any) -> None:
    ref, stale, _ = _stale()
    rebased = services.candidate_rebase(
        scope_id=stale.scope_id,
        candidate_id=stale.candidate_id,
        expected_version=1,
        onto_revision=2,
        reviewer=make_reviewer(),
    )
    api.token = create_token("alice", reviewer=True)[0]
    body = _revise_body(rebased, ref, 2)
    body["proposal"] = {**rebased.latest.proposal, "action": "a reviewer's sharper action"}
    response = api.post("/v1/artifact-candidates/revise", body)
    assert response.status_code == 200, response.content
    revised = response.json()
    assert revised["version"] == 3 and revised["target"] == {**ref, "revision": 2}
    assert revised["proposal"] == body["proposal"]  # stored exactly as sent
    assert revised["proposal"]["outcome"].endswith(ADDED)


def test_d1_with_a_conflict_revise_is_refused_rebase_stops_and_resolve_keeps_the_sentence(api: Any) -> None:
    ref, stale, proposal = _stale(conflicting=True)
    api.token = create_token("alice", reviewer=True)[0]
    before = _rows()
    assert_error(
        api.post("/v1/artifact-candidates/revise", _revise_body(stale, ref, 2)), 409, "rebase_required"
    )
    with pytest.raises(services.MergeConflict) as raised:
        services.candidate_rebase(
            scope_id=stale.scope_id,
            candidate_id=stale.candidate_id,
            expected_version=1,
            onto_revision=2,
            reviewer=make_reviewer(),
        )
    assert raised.value.details == {"fields": ["outcome"], "onto": 2}
    assert _rows() == before and refresh(stale).version == 1
    # The conflict editor's choice "take the current revision's" for the one conflicting field.
    resolved = _resolve(stale, {"outcome": f"{proposal['outcome']} {ADDED}"})
    content = ArtifactRevision.objects.get(head=_approve(resolved).result_head, revision=3).content
    assert content["outcome"].endswith(ADDED) and content["lesson"] == "the stale update's lesson"


# --- the service -----------------------------------------------------------------------------------------


def test_the_revise_service_refuses_to_move_the_target_and_writes_nothing() -> None:
    ref, stale, _ = _stale()
    before = _rows()
    moved = {**ref, "revision": 2}
    with pytest.raises(RebaseRequired) as raised:
        services.candidate_revise(
            scope_id=stale.scope_id,
            candidate_id=stale.candidate_id,
            expected_version=1,
            submission=services.Submission(
                proposal=stale.latest.proposal,
                source_refs=[],
                artifact_refs=[moved],
                target=moved,
                reason=None,
            ),
            reviewer=make_reviewer(),
        )
    assert raised.value.status == 409 and raised.value.code == "rebase_required"
    assert _rows() == before
    assert refresh(stale).version == 1


def test_a_revise_may_still_drop_the_target_or_keep_it() -> None:
    """Only a move to another revision of the same Artifact needs a rebase: keeping the target is
    a plain revise, dropping it makes the update a proposal of a new Artifact (nothing of the old
    one is replaced)."""
    proposal = experience_proposal()
    _, ref = make_approved(proposal=proposal)
    update = _update(ref, {**proposal, "lesson": "kept target"})
    reviewer = make_reviewer()
    kept = services.candidate_revise(
        scope_id=update.scope_id,
        candidate_id=update.candidate_id,
        expected_version=1,
        submission=services.Submission(
            proposal={**proposal, "lesson": "still kept"},
            source_refs=[],
            artifact_refs=[ref],
            target=ref,
            reason=None,
        ),
        reviewer=reviewer,
    )
    assert kept.version == 2 and kept.latest.target == ref
    dropped = services.candidate_revise(
        scope_id=update.scope_id,
        candidate_id=update.candidate_id,
        expected_version=2,
        submission=services.Submission(
            proposal=proposal, source_refs=[], artifact_refs=[ref], target=None, reason=None
        ),
        reviewer=reviewer,
    )
    assert dropped.version == 3 and dropped.latest.target is None


# --- the conflict editor's save: the same merge, in the service -----------------------------------------


def _resolve(stale: Candidate, resolutions: dict[str, Any], *, onto: int = 2) -> Candidate:
    return services.candidate_resolve(
        scope_id=stale.scope_id,
        candidate_id=stale.candidate_id,
        expected_version=stale.version,
        onto_revision=onto,
        resolutions=resolutions,
        reviewer=make_reviewer(),
    )


def test_resolve_merges_like_rebase_and_takes_only_the_conflicting_fields() -> None:
    ref, stale, proposal = _stale(conflicting=True)
    resolved = _resolve(stale, {"outcome": f"the stale update's own outcome {ADDED}"})
    assert resolved.version == 2 and resolved.latest.target == {**ref, "revision": 2}
    assert resolved.latest.artifact_refs == [{**ref, "revision": 2}]
    assert resolved.latest.proposal == {
        **proposal,
        "lesson": "the stale update's lesson",  # the clean field merges as Rebase merges it
        "outcome": f"the stale update's own outcome {ADDED}",  # the reviewer's resolution
    }


@pytest.mark.parametrize(
    "resolutions",
    [{}, {"outcome": "x", "lesson": "a clean field is not the reviewer's to set"}, {"situation": "x"}],
)
def test_resolve_refuses_resolutions_that_are_not_exactly_the_conflicts(resolutions: dict[str, Any]) -> None:
    _, stale, _ = _stale(conflicting=True)
    before = _rows()
    with pytest.raises(InvalidRequest) as raised:
        _resolve(stale, resolutions)
    assert raised.value.details["errors"][0]["type"] == "resolution_mismatch"
    assert "outcome" in raised.value.details["errors"][0]["msg"]
    assert _rows() == before and refresh(stale).version == 1


def test_resolve_of_a_clean_merge_is_refused_as_nothing_to_resolve() -> None:
    _, stale, _ = _stale()
    with pytest.raises(InvalidRequest) as raised:
        _resolve(stale, {"outcome": "anything"})
    assert raised.value.details["errors"][0]["type"] == "no_conflict"
    assert refresh(stale).version == 1


def test_resolve_onto_a_revision_that_is_no_longer_the_head_is_an_artifact_conflict() -> None:
    ref, stale, proposal = _stale(conflicting=True)
    _approve(_update({**ref, "revision": 2}, {**proposal, "situation": "revision three"}))
    before = _rows()
    with pytest.raises(ArtifactConflict) as raised:
        _resolve(stale, {"outcome": "x"}, onto=2)
    assert raised.value.details == {"current": {**ref, "revision": 3}}
    assert _rows() == before and refresh(stale).version == 1


# --- the Inbox: the ``?onto=`` revise page is gone ------------------------------------------------------


def test_d1_the_onto_revise_page_no_longer_retargets(reviewer: User) -> None:
    ref, stale, proposal = _stale()
    client = client_for(reviewer)
    body = text_of(client.get(url("revise", stale) + "?onto=2&conflicts=outcome"))
    assert "onto_revision" not in body and "Merge conflict with revision" not in body
    before = _rows()
    # The old form's POST (its hidden onto_revision) keeps the target: the stale update is 409.
    response = client.post(
        url("revise", stale),
        {"expected_version": 1, "onto_revision": 2, "reason": "", **stale.latest.proposal},
    )
    assert response.status_code == 409 and "The target moved on" in text_of(response)
    assert "rebase it onto revision 2" in text_of(response)
    assert _rows() == before
    again = refresh(stale)
    assert again.version == 1 and again.latest.target == ref


def test_no_inbox_page_links_a_revise_with_onto(reviewer: User) -> None:
    _, stale, _ = _stale(conflicting=True)
    client = client_for(reviewer)
    for page in (url("candidate", stale), url("merge", stale), url("revise", stale)):
        assert "onto=" not in text_of(client.get(page))
