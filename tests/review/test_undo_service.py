"""Undo (issue 22, "One Undo model"): ``review.services.undo`` takes one's own decision back within
the window by reopen / retire / revert, re-proposing the content as a new pending candidate; it
never edits or deletes a decision, and refuses (changing nothing) when the head moved, for another
reviewer, after the window, or twice."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from powercontext.core.exceptions import ArtifactConflict, CandidateConflict, CandidateNotFound
from powercontext.core.models import Artifact, ArtifactRevision
from powercontext.prepare.selection import context_candidates
from review import services
from review.models import Candidate, ReviewAction, ReviewDecision
from review.services import undo
from tests.powercontext.test_concurrency import run_together
from tests.review.conftest import approve as _approve
from tests.review.conftest import reject
from tests.review.factories import experience_proposal, make_approved, make_candidate, make_reviewer

pytestmark = pytest.mark.django_db


def _recalled(query: str) -> list[tuple[str, int]]:
    found = context_candidates(scope_id="repo", query=query, memory_limit=4, experience_limit=4)
    return [(h.artifact_ref.artifact_id, h.artifact_ref.revision) for h in found.experience_hits]


def _decisions() -> list[tuple[int, str, int, int | None]]:
    return list(
        ReviewDecision.objects.order_by("pk").values_list(
            "candidate_id", "decision", "version", "result_revision"
        )
    )


def test_undo_of_a_rejection_reopens_it_as_a_new_pending_candidate() -> None:
    reviewer = make_reviewer()
    rejected = reject(make_candidate(), reviewer)
    before = _decisions()

    copy = undo.decision_undo(candidate_pk=rejected.pk, reviewer=reviewer)

    assert copy.status == Candidate.Status.PENDING and copy.pk != rejected.pk
    assert copy.latest is not None and rejected.latest is not None
    assert copy.latest.proposal == rejected.latest.proposal
    assert _decisions() == before  # insert-only: the rejection stays as it was
    assert Candidate.objects.get(pk=rejected.pk).status == Candidate.Status.REJECTED
    (action,) = ReviewAction.objects.all()
    assert (action.action, action.reopened_as_id, action.reviewer) == ("reopened", copy.pk, reviewer)
    assert action.reason.startswith("Undo of the rejected decision")


def test_undo_of_a_new_experience_retires_it_out_of_recall_and_reproposes_it() -> None:
    reviewer = make_reviewer()
    approved, ref = make_approved(
        reviewer=reviewer, proposal=experience_proposal(lesson="quarantine the axolotl fixtures")
    )
    assert _recalled("axolotl fixtures") == [(ref["artifact_id"], 1)]
    before = _decisions()

    copy = undo.decision_undo(candidate_pk=approved.pk, reviewer=reviewer)

    assert _recalled("axolotl fixtures") == []
    head = Artifact.objects.get(artifact_id=ref["artifact_id"])
    assert (head.state, head.current_revision) == (Artifact.State.RETIRED, 1)
    assert copy.status == "pending" and copy.latest is not None and copy.latest.target is None
    assert copy.latest.proposal["lesson"] == "quarantine the axolotl fixtures"
    assert _decisions() == before
    actions = sorted(ReviewAction.objects.values_list("action", "candidate_id", "reopened_as_id"))
    assert actions == [("reopened", approved.pk, copy.pk), ("retired", approved.pk, None)]


def test_undo_of_an_approved_update_reverts_the_head_and_reproposes_the_update_on_it() -> None:
    reviewer = make_reviewer()
    proposal = experience_proposal(lesson="first lesson about the quokka cache")
    _, ref = make_approved(reviewer=reviewer, proposal=proposal)
    update = make_candidate(
        proposal={**proposal, "lesson": "second lesson about the quokka cache"},
        artifact_refs=[ref],
        target=ref,
        source_refs=[],
    )
    approved = _approve(update, reviewer)
    assert approved.result_revision == 2

    copy = undo.decision_undo(candidate_pk=approved.pk, reviewer=reviewer)

    head = Artifact.objects.get(artifact_id=ref["artifact_id"])
    assert (head.state, head.current_revision) == ("active", 3)
    revision3 = ArtifactRevision.objects.get(head=head, revision=3)
    assert revision3.content["lesson"] == "first lesson about the quokka cache"
    assert _recalled("quokka cache") == [(ref["artifact_id"], 3)]
    assert copy.latest is not None
    assert copy.latest.target == {**ref, "revision": 3}
    assert copy.latest.proposal["lesson"] == "second lesson about the quokka cache"
    # The re-proposed update is approvable as it stands: its target is the head.
    again = _approve(copy, reviewer)
    assert again.result_revision == 4


def test_undo_is_refused_when_the_head_moved_since_and_nothing_changes() -> None:
    reviewer, other = make_reviewer(), make_reviewer("other")
    proposal = experience_proposal()
    approved, ref = make_approved(reviewer=reviewer, proposal=proposal)
    # Someone else approves an update of it: the head is at revision 2 now.
    _approve(
        make_candidate(
            proposal={**proposal, "lesson": "theirs"}, artifact_refs=[ref], target=ref, source_refs=[]
        ),
        other,
    )
    pending_before = Candidate.objects.filter(status="pending").count()

    with pytest.raises(undo.UndoHeadMoved) as raised:
        undo.decision_undo(candidate_pk=approved.pk, reviewer=reviewer)

    assert "does not revert their work" in raised.value.message
    head = Artifact.objects.get(artifact_id=ref["artifact_id"])
    assert (head.state, head.current_revision) == ("active", 2)
    assert not ReviewAction.objects.exists()
    assert Candidate.objects.filter(status="pending").count() == pending_before


def test_only_the_reviewer_who_decided_may_undo() -> None:
    reviewer, other = make_reviewer(), make_reviewer("other")
    rejected = reject(make_candidate(), reviewer)

    with pytest.raises(undo.UndoForbidden):
        undo.decision_undo(candidate_pk=rejected.pk, reviewer=other)

    assert not ReviewAction.objects.exists()
    assert Candidate.objects.filter(status="pending").count() == 0


def test_undo_is_bounded_by_the_window_setting(settings: Any) -> None:
    settings.POWERCONTEXT_REVIEW_UNDO_MINUTES = 10
    reviewer = make_reviewer()
    rejected = reject(make_candidate(), reviewer)
    decided_at = ReviewDecision.objects.get(candidate=rejected).decided_at

    with pytest.raises(undo.UndoExpired) as raised:
        undo.decision_undo(
            candidate_pk=rejected.pk, reviewer=reviewer, now=decided_at + timedelta(minutes=11)
        )
    assert "10 minutes" in raised.value.message
    assert not ReviewAction.objects.exists()

    copy = undo.decision_undo(
        candidate_pk=rejected.pk, reviewer=reviewer, now=decided_at + timedelta(minutes=9)
    )
    assert copy.status == "pending"


def test_a_decision_is_undone_once() -> None:
    reviewer = make_reviewer()
    approved, _ = make_approved(reviewer=reviewer)
    undo.decision_undo(candidate_pk=approved.pk, reviewer=reviewer)

    with pytest.raises(CandidateConflict):
        undo.decision_undo(candidate_pk=approved.pk, reviewer=reviewer)
    assert ReviewAction.objects.count() == 2


def test_a_pending_candidate_has_nothing_to_undo() -> None:
    with pytest.raises(CandidateNotFound):
        undo.decision_undo(candidate_pk=make_candidate().pk, reviewer=make_reviewer())


def test_a_batch_is_undone_item_by_item_and_reports_what_could_not_be() -> None:
    reviewer, other = make_reviewer(), make_reviewer("other")
    mine = [reject(make_candidate(), reviewer) for _ in range(2)]
    theirs = reject(make_candidate(), other)

    outcomes = undo.decisions_undo(candidate_pks=[mine[0].pk, theirs.pk, mine[1].pk], reviewer=reviewer)

    assert [(o.candidate_pk, o.reproposed is not None, o.code) for o in outcomes] == [
        (mine[0].pk, True, None),
        (theirs.pk, False, "undo_forbidden"),
        (mine[1].pk, True, None),
    ]
    assert Candidate.objects.filter(status="pending").count() == 2


def test_the_window_defaults_to_ten_minutes() -> None:
    from powercontext import settings as project_settings

    assert project_settings.POWERCONTEXT_REVIEW_UNDO_MINUTES == 10


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_undos_of_one_decision_at_once_leave_one_copy_on_postgres() -> None:
    reviewer = make_reviewer()
    approved, ref = make_approved(reviewer=reviewer)

    results = run_together([lambda: undo.decision_undo(candidate_pk=approved.pk, reviewer=reviewer)] * 2)

    winners = [r for r in results if isinstance(r, Candidate)]
    losers = [r for r in results if isinstance(r, (CandidateConflict, undo.UndoHeadMoved))]
    assert len(winners) == 1 and len(losers) == 1, results
    assert Candidate.objects.filter(status="pending").count() == 1
    assert Artifact.objects.get(artifact_id=ref["artifact_id"]).state == "retired"
    assert sorted(ReviewAction.objects.values_list("action", flat=True)) == ["reopened", "retired"]


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_undo_racing_another_reviewers_retire_never_reverts_their_work_on_postgres() -> None:
    reviewer, other = make_reviewer(), make_reviewer("other")
    proposal = experience_proposal()
    _, ref = make_approved(reviewer=reviewer, proposal=proposal)
    update = make_candidate(
        proposal={**proposal, "lesson": "mine"}, artifact_refs=[ref], target=ref, source_refs=[]
    )
    approved = _approve(update, reviewer)

    def their_retire() -> Artifact:
        return services.artifact_retire(
            scope_id="repo",
            family=ref["family"],
            artifact_id=ref["artifact_id"],
            expected_revision=2,
            reason="wrong lesson",
            reviewer=other,
        )

    results = run_together(
        [lambda: undo.decision_undo(candidate_pk=approved.pk, reviewer=reviewer), their_retire]
    )

    assert sum(isinstance(r, (Candidate, Artifact)) for r in results) == 1, results
    head = Artifact.objects.get(artifact_id=ref["artifact_id"])
    if isinstance(results[0], Candidate):  # the undo won: reverted to revision 1's content
        assert (head.current_revision, head.state) == (3, "active")
        assert isinstance(results[1], ArtifactConflict)
    else:  # their retire won and stays
        assert isinstance(results[0], undo.UndoHeadMoved)
        assert (head.current_revision, head.state) == (2, "retired")
        assert Candidate.objects.filter(status="pending").count() == 0


def test_undo_is_offered_only_while_it_would_succeed() -> None:
    reviewer, other = make_reviewer(), make_reviewer("other")
    proposal = experience_proposal()
    approved, ref = make_approved(reviewer=reviewer, proposal=proposal)
    assert undo.undo_offered(approved, reviewer) and not undo.undo_offered(approved, other)
    _approve(
        make_candidate(
            proposal={**proposal, "lesson": "theirs"}, artifact_refs=[ref], target=ref, source_refs=[]
        ),
        other,
    )
    assert not undo.undo_offered(approved, reviewer)  # the head moved on
    assert not undo.undo_offered(make_candidate(), reviewer)  # nothing decided
