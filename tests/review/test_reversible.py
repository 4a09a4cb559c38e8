"""Reversible decisions (issue 22): rebase by three-way merge, reopen, retire, revert — services,
their audit rows, compare-and-swap conflicts, and what recall returns afterwards."""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.core.exceptions import (
    ArtifactConflict,
    ArtifactNotFound,
    CandidateConflict,
    CandidateTerminal,
    InvalidRequest,
)
from powercontext.core.models import Artifact, ArtifactRevision
from powercontext.prepare.selection import context_candidates
from review import services
from review.models import Candidate, ReviewAction, ReviewDecision
from tests.powercontext.test_concurrency import run_together
from tests.review.factories import (
    experience_proposal,
    make_approved,
    make_candidate,
    make_reviewer,
    skill_proposal,
)

pytestmark = pytest.mark.django_db

EXPERIENCE = Candidate.Family.EXPERIENCE


def _update(ref: dict[str, Any], proposal: dict[str, Any]) -> Candidate:
    return make_candidate(proposal=proposal, artifact_refs=[ref], target=ref, source_refs=[])


def _approve(candidate: Candidate) -> Candidate:
    return services.candidate_approve(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version,
        reviewer=make_reviewer(),
    )


def _rebase(candidate: Candidate, onto: int) -> Candidate:
    return services.candidate_rebase(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version,
        onto_revision=onto,
        reviewer=make_reviewer(),
    )


def _content(artifact_id: str, revision: int) -> dict[str, Any]:
    return dict(ArtifactRevision.objects.get(artifact_id=artifact_id, revision=revision).content)


# --- rebase: the scenario -----------------------------------------------------------------


def test_two_updates_of_revision_one_the_second_rebased_keeps_revision_twos_sentences() -> None:
    proposal = experience_proposal()
    _, ref = make_approved(proposal=proposal)
    first = _update(ref, {**proposal, "lesson": proposal["lesson"] + ". Revision two adds this sentence."})
    second = _update(ref, {**proposal, "action": "pinned the resolver, then bisected the lockfile"})
    _approve(first)
    rebased = _rebase(second, 2)
    assert rebased.version == 2 and rebased.latest.target == {**ref, "revision": 2}
    assert rebased.latest.proposal["lesson"].endswith("Revision two adds this sentence.")
    approved = _approve(rebased)
    assert approved.result_revision == 3
    third = _content(ref["artifact_id"], 3)
    assert third["lesson"].endswith("Revision two adds this sentence.")  # revision 2's text kept
    assert third["action"] == "pinned the resolver, then bisected the lockfile"  # the update's change
    found = context_candidates(scope_id="repo", query="bisected lockfile", memory_limit=4, experience_limit=4)
    assert [h.content.lesson for h in found.experience_hits] == [third["lesson"]]


def test_a_rebase_with_both_sides_changing_one_field_stops_at_a_conflict_and_writes_nothing() -> None:
    proposal = experience_proposal()
    _, ref = make_approved(proposal=proposal)
    first = _update(ref, {**proposal, "lesson": "Revision two's lesson."})
    second = _update(ref, {**proposal, "lesson": "Another lesson.", "outcome": "changed only here"})
    _approve(first)
    with pytest.raises(services.MergeConflict) as raised:
        _rebase(second, 2)
    assert raised.value.details == {"fields": ["lesson"], "onto": 2}
    second.refresh_from_db()
    assert second.version == 1 and second.latest.target == ref
    with pytest.raises(ArtifactConflict):  # still stale: approving it is refused
        _approve(second)


def test_the_same_change_on_both_sides_is_not_a_conflict() -> None:
    proposal = experience_proposal()
    _, ref = make_approved(proposal=proposal)
    same = {**proposal, "lesson": "Both wrote this."}
    first, second = _update(ref, same), _update(ref, same)
    _approve(first)
    assert _rebase(second, 2).latest.proposal == same


# --- reopen -------------------------------------------------------------------------------------


def _reject(candidate: Candidate) -> Candidate:
    return services.candidate_reject(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version,
        reason="looked like a duplicate",
        reviewer=make_user_named("rita"),
    )


def make_user_named(name: str) -> Any:
    return make_reviewer(name)


def _reopen(candidate: Candidate, version: int, reason: str = "not a duplicate after all") -> Candidate:
    return services.candidate_reopen(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=version,
        reason=reason,
        reviewer=make_reviewer("olga"),
    )


def test_reopen_proposes_the_rejected_content_again_and_keeps_the_rejection_as_it_was() -> None:
    candidate = _reject(make_candidate())
    decision = ReviewDecision.objects.get(candidate=candidate)
    reopened = _reopen(candidate, 1)
    assert reopened.pk != candidate.pk
    assert reopened.status == Candidate.Status.PENDING and reopened.version == 1
    assert reopened.latest.proposal == candidate.latest.proposal
    assert reopened.latest.source_refs == candidate.latest.source_refs
    # Authorship follows the text (issue 32): the copy is written by who wrote the rejected version.
    assert reopened.latest.created_by == candidate.latest.created_by
    # Decisions are insert-only: the rejection, its reviewer and reason are untouched.
    candidate.refresh_from_db()
    assert candidate.status == Candidate.Status.REJECTED and candidate.version == 1
    assert ReviewDecision.objects.get(candidate=candidate) == decision
    assert (decision.reviewer.username, decision.reason) == ("rita", "looked like a duplicate")
    action = ReviewAction.objects.get(candidate=candidate)
    assert (action.action, action.reviewer.username, action.reason) == (
        "reopened",
        "olga",
        "not a duplicate after all",
    )
    assert action.reopened_as == reopened and action.candidate_version == 1
    # It can be decided like any pending candidate.
    assert _approve(reopened).status == Candidate.Status.APPROVED


def test_reopen_checks_the_version_the_state_the_reason_and_reopens_once() -> None:
    candidate = _reject(make_candidate())
    with pytest.raises(CandidateConflict):
        _reopen(candidate, 2)
    with pytest.raises(InvalidRequest):
        _reopen(candidate, 1, reason="  ")
    _reopen(candidate, 1)
    with pytest.raises(CandidateConflict):  # the same rejection, reopened from a stale page
        _reopen(candidate, 1)
    approved, _ = make_approved()
    with pytest.raises(CandidateTerminal):
        _reopen(approved, approved.version)
    assert ReviewAction.objects.count() == 1
    assert Candidate.objects.filter(status=Candidate.Status.PENDING).count() == 1


# --- retire and revert --------------------------------------------------------------------------


def _retire(ref: dict[str, Any], expected: int, family: str = EXPERIENCE) -> Artifact:
    return services.artifact_retire(
        scope_id="repo",
        family=family,
        artifact_id=ref["artifact_id"],
        expected_revision=expected,
        reason="wrong lesson",
        reviewer=make_reviewer("olga"),
    )


def _revert(ref: dict[str, Any], expected: int, to: int, state: str = "active") -> Artifact:
    return services.artifact_revert(
        expected_state=state,
        scope_id="repo",
        family=EXPERIENCE,
        artifact_id=ref["artifact_id"],
        expected_revision=expected,
        to_revision=to,
        reason="revision 2 was wrong",
        reviewer=make_reviewer("olga"),
    )


def _recalled(query: str) -> list[tuple[str, int, str]]:
    found = context_candidates(scope_id="repo", query=query, memory_limit=4, experience_limit=4)
    return [
        (h.artifact_ref.artifact_id, h.artifact_ref.revision, h.content.lesson) for h in found.experience_hits
    ]


def test_a_retired_experience_is_no_longer_recalled_and_its_history_is_kept() -> None:
    _, ref = make_approved(proposal=experience_proposal(lesson="quarantine the zebrafish fixtures"))
    assert [r[0] for r in _recalled("zebrafish fixtures")] == [ref["artifact_id"]]
    head = _retire(ref, 1)
    assert head.state == Artifact.State.RETIRED and head.recallable is False
    assert _recalled("zebrafish fixtures") == []
    assert ArtifactRevision.objects.filter(artifact_id=ref["artifact_id"]).count() == 1
    action = ReviewAction.objects.get()
    assert (action.action, action.artifact_id, action.revision, action.reason) == (
        "retired",
        head.pk,
        1,
        "wrong lesson",
    )
    with pytest.raises(ArtifactConflict):  # already retired
        _retire(ref, 1)
    with pytest.raises(ArtifactConflict):  # a revert from a page that saw it active
        _revert(ref, 1, 1)
    # Reverting a retired head to its current revision restores it to recall.
    _revert(ref, 1, 1, state="retired")
    assert _recalled("zebrafish fixtures") == [(ref["artifact_id"], 2, "quarantine the zebrafish fixtures")]


def test_retire_and_revert_refuse_a_stale_revision_and_change_nothing() -> None:
    proposal = experience_proposal()
    _, ref = make_approved(proposal=proposal)
    _approve(_update(ref, {**proposal, "lesson": "second"}))
    with pytest.raises(ArtifactConflict) as raised:
        _retire(ref, 1)
    assert raised.value.details["current"]["revision"] == 2
    with pytest.raises(ArtifactConflict):
        _revert(ref, 1, 1)
    head = Artifact.objects.get(artifact_id=ref["artifact_id"])
    assert (head.current_revision, head.state, head.recallable) == (2, "active", True)
    assert not ReviewAction.objects.exists()


def test_a_reverted_experience_is_recalled_with_the_old_content() -> None:
    proposal = experience_proposal(lesson="always pin the walrus resolver")
    _, ref = make_approved(proposal=proposal)
    _approve(_update(ref, {**proposal, "lesson": "never pin the walrus resolver"}))
    assert _recalled("walrus resolver") == [(ref["artifact_id"], 2, "never pin the walrus resolver")]
    head = _revert(ref, 2, 1)
    assert head.current_revision == 3
    assert _content(ref["artifact_id"], 3) == _content(ref["artifact_id"], 1)
    third = ArtifactRevision.objects.get(artifact_id=ref["artifact_id"], revision=3)
    assert third.parent_revision == 2 and third.created_by.username == "olga"
    assert third.artifact_refs == [{**ref, "revision": 1}]
    assert _recalled("walrus resolver") == [(ref["artifact_id"], 3, "always pin the walrus resolver")]
    action = ReviewAction.objects.get()
    assert (action.action, action.revision, action.reverted_to) == ("reverted", 3, 1)


def test_revert_needs_an_earlier_revision_and_a_reviewed_family() -> None:
    _, ref = make_approved()
    with pytest.raises(InvalidRequest):
        _revert(ref, 1, 1)  # the current revision of an active head
    with pytest.raises(InvalidRequest):
        _revert(ref, 1, 0)
    with pytest.raises(ArtifactNotFound):
        _revert({"artifact_id": "exp_missing"}, 1, 1)
    with pytest.raises(InvalidRequest):
        services.artifact_retire(
            scope_id="repo",
            family="memory",
            artifact_id=ref["artifact_id"],
            expected_revision=1,
            reason="x",
            reviewer=make_reviewer(),
        )


def test_a_skill_can_be_retired_and_reverted() -> None:
    proposal = skill_proposal()
    _, ref = make_approved(family=Candidate.Family.SKILL, proposal=proposal)
    _retire(ref, 1, family=Candidate.Family.SKILL)
    head = Artifact.objects.get(artifact_id=ref["artifact_id"])
    assert head.state == Artifact.State.RETIRED and not head.recallable
    restored = services.artifact_revert(
        scope_id="repo",
        family=Candidate.Family.SKILL,
        artifact_id=ref["artifact_id"],
        expected_revision=1,
        to_revision=1,
        reason="retired by mistake",
        reviewer=make_reviewer(),
        expected_state="retired",
    )
    assert (restored.state, restored.current_revision) == (Artifact.State.ACTIVE, 2)
    assert _content(ref["artifact_id"], 2) == proposal


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_retire_racing_a_revert_of_the_same_revision_leaves_one_winner_on_postgres() -> None:
    proposal = experience_proposal()
    _, ref = make_approved("repo", proposal=proposal)
    _approve(_update(ref, {**proposal, "lesson": "second"}))
    make_reviewer("olga")

    results = run_together([lambda: _retire(ref, 2), lambda: _revert(ref, 2, 1)])

    winners = [r for r in results if isinstance(r, Artifact)]
    losers = [r for r in results if isinstance(r, ArtifactConflict)]
    assert len(winners) == 1 and len(losers) == 1, results
    head = Artifact.objects.get(artifact_id=ref["artifact_id"])
    assert ReviewAction.objects.count() == 1
    if ReviewAction.objects.get().action == "retired":
        assert (head.current_revision, head.state, head.recallable) == (2, "retired", False)
    else:
        assert (head.current_revision, head.state) == (3, "active")
