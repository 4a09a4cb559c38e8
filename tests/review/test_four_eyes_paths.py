"""Four-eyes review is about who wrote the text (issue 32): the five ways around it that an
outside review found, each refused for the text's writer and allowed for another reviewer —
a Reopen or an Undo by someone else never frees the writer, an Undo or a Reopen never makes its
reviewer the writer (the audit names the writer truthfully), a Revert that brings content back
needs a second reviewer, and a proposal without a token is refused."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from powercontext.core.models import Artifact, ArtifactRevision
from review import services
from review.models import Candidate, ReviewAction
from review.selectors import governance
from review.services.undo import decision_undo
from tests.review.conftest import approve, make_candidate, make_user, reject, revise
from tests.review.factories import assert_error, create_token, propose_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def four_eyes(settings: Any) -> None:
    settings.POWERCONTEXT_REVIEW_FOUR_EYES = True


@pytest.fixture
def second(db: None) -> User:
    return make_user("second", reviewer=True)


@pytest.fixture
def third(db: None) -> User:
    return make_user("third", reviewer=True)


def _reopen(candidate: Candidate, reviewer: User) -> Candidate:
    return services.candidate_reopen(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version,
        reason="Worth another look.",
        reviewer=reviewer,
    )


def test_a_reopen_by_another_reviewer_does_not_free_the_writer(
    four_eyes: None, reviewer: User, second: User, third: User
) -> None:
    mine = revise(make_candidate(), reviewer, lesson="My own wording of the lesson.")
    reject(mine, third, "Not yet.")
    copy = _reopen(mine, second)
    assert copy.latest.created_by == reviewer  # the copied text is her revision, not the reopener's
    with pytest.raises(services.SelfApprovalForbidden) as caught:
        approve(copy, reviewer)
    assert caught.value.details == {"versions": [1]}
    # The reopener wrote nothing: she may approve it.
    assert approve(copy, second).status == Candidate.Status.APPROVED


def test_a_reopen_by_the_writer_keeps_the_writer_and_she_still_cannot_approve(
    four_eyes: None, reviewer: User, second: User
) -> None:
    proposed = services.candidate_propose(
        scope_id="repo",
        family=Candidate.Family.EXPERIENCE,
        submission=services.Submission(**_submission()),
        proposed_by=reviewer,
    )
    reject(proposed, second, "Too vague.")
    copy = _reopen(proposed, reviewer)
    assert copy.latest.created_by == reviewer  # her own text, truthfully hers
    with pytest.raises(services.SelfApprovalForbidden):
        approve(copy, reviewer)
    assert approve(copy, second).status == Candidate.Status.APPROVED


def test_undo_by_the_approver_leaves_the_agent_as_writer_so_she_may_approve_again(
    four_eyes: None, reviewer: User
) -> None:
    """The 42-item batch: after Undo, the approver was named writer of the agents' text and
    every re-approval was refused as her own."""
    approved = approve(make_candidate(), reviewer)
    copy = decision_undo(candidate_pk=approved.pk, reviewer=reviewer)
    assert copy.latest.created_by is None  # the agent's text, not the undoing reviewer's
    authors = governance.version_authors(copy)
    assert authors[1].kind == governance.KIND_NO_ACCOUNT and authors[1].name is None
    action = ReviewAction.objects.get(candidate=approved, action=ReviewAction.Action.REOPENED)
    assert action.reviewer == reviewer  # the audit names who undid
    assert approve(copy, reviewer).status == Candidate.Status.APPROVED


def test_undo_of_a_writers_rejected_text_does_not_free_her(
    four_eyes: None, reviewer: User, second: User
) -> None:
    mine = revise(make_candidate(), reviewer, lesson="My own wording again.")
    mine = revise(mine, second, lesson="The second reviewer's wording, over hers.")
    rejected = reject(mine, second, "Not a lesson.")
    copy = decision_undo(candidate_pk=rejected.pk, reviewer=second)
    # The copy is the second reviewer's latest text, yet the lineage still holds the first's.
    assert copy.latest.created_by == second
    with pytest.raises(services.SelfApprovalForbidden):
        approve(copy, reviewer)
    # A copy of a copy still remembers who wrote the text.
    again = decision_undo(candidate_pk=reject(copy, second, "Still no.").pk, reviewer=second)
    with pytest.raises(services.SelfApprovalForbidden):
        approve(again, reviewer)
    with pytest.raises(services.SelfApprovalForbidden):
        approve(again, second)
    assert approve(again, make_user("third", reviewer=True)).status == Candidate.Status.APPROVED


def _submission() -> dict[str, Any]:
    body = propose_body()
    return {
        "proposal": body["proposal"],
        "source_refs": body["source_refs"],
        "artifact_refs": [],
        "target": None,
        "reason": "Mine.",
    }


def _head(candidate: Candidate) -> Artifact:
    assert candidate.result_head is not None
    return Artifact.objects.get(pk=candidate.result_head.pk)


def test_a_revert_that_brings_content_back_is_proposed_for_a_second_reviewer(
    four_eyes: None, reviewer: User, second: User
) -> None:
    first = approve(make_candidate(), second)
    head = _head(first)
    update = approve(
        services.candidate_propose(
            scope_id="repo",
            family=Candidate.Family.EXPERIENCE,
            submission=services.Submission(
                proposal={**first.latest.proposal, "lesson": "A newer lesson that replaced the first."},
                source_refs=first.latest.source_refs,
                artifact_refs=[{"family": "experience", "artifact_id": head.artifact_id, "revision": 1}],
                target={"family": "experience", "artifact_id": head.artifact_id, "revision": 1},
                reason=None,
            ),
        ),
        second,
    )
    revisions = ArtifactRevision.objects.count()
    proposed = services.artifact_revert_propose(
        scope_id="repo",
        family="experience",
        artifact_id=head.artifact_id,
        expected_revision=2,
        to_revision=1,
        reason="The newer lesson was wrong.",
        reviewer=reviewer,
    )
    # Nothing written to the artifact: a pending update with revision 1's content, hers.
    assert ArtifactRevision.objects.count() == revisions
    assert _head(update).current_revision == 2
    assert proposed.status == Candidate.Status.PENDING and proposed.latest.created_by == reviewer
    assert proposed.latest.proposal == first.latest.proposal
    assert proposed.latest.target == {"family": "experience", "artifact_id": head.artifact_id, "revision": 2}
    assert proposed.latest.reason.startswith("Revert to revision 1: ")
    with pytest.raises(services.SelfApprovalForbidden):
        approve(proposed, reviewer)
    approved = approve(proposed, second)
    after = _head(approved)
    assert after.current_revision == 3
    assert ArtifactRevision.objects.get(head=after, revision=3).content == first.latest.proposal


def _approved_then_retired(reviewer: User) -> tuple[Candidate, Artifact]:
    """An approved Experience (revision 1) that ``reviewer`` then retired."""
    first = approve(make_candidate(), reviewer)
    head = _head(first)
    services.artifact_retire(
        scope_id="repo",
        family="experience",
        artifact_id=head.artifact_id,
        expected_revision=1,
        reason="Out of date.",
        reviewer=reviewer,
    )
    return first, head


def _restore(head: Artifact, reviewer: User) -> dict[str, Any]:
    """A revert of the retired ``head`` to its revision 1 (restoring it to recall)."""
    return {
        "scope_id": "repo",
        "family": "experience",
        "artifact_id": head.artifact_id,
        "expected_revision": 1,
        "to_revision": 1,
        "expected_state": Artifact.State.RETIRED,
        "reason": "It applies again.",
        "reviewer": reviewer,
    }


def test_a_revert_restoring_a_retired_artifact_is_proposed_too(
    four_eyes: None, reviewer: User, second: User
) -> None:
    first, head = _approved_then_retired(second)
    proposed = services.artifact_revert_propose(**_restore(head, reviewer))
    assert _head(first).state == Artifact.State.RETIRED  # still out of recall until approved
    with pytest.raises(services.SelfApprovalForbidden):
        approve(proposed, reviewer)
    restored = _head(approve(proposed, second))
    assert (restored.state, restored.current_revision) == (Artifact.State.ACTIVE, 2)


def test_off_a_revert_writes_the_revision_at_once(reviewer: User, second: User) -> None:
    first, head = _approved_then_retired(second)
    reverted = services.artifact_revert(**_restore(head, reviewer))
    assert (reverted.state, reverted.current_revision) == (Artifact.State.ACTIVE, 2)


def test_the_inbox_revert_button_proposes_under_four_eyes(
    four_eyes: None, reviewer: User, second: User, client: Any
) -> None:
    first, head = _approved_then_retired(second)
    client.force_login(reviewer)
    page = client.get(f"/review/candidates/{first.pk}/?status=approved")
    assert b"Propose the revert" in page.content
    response = client.post(
        f"/review/candidates/{first.pk}/revert/",
        {"expected_revision": 1, "expected_state": "retired", "to_revision": 1, "reason": "Applies again."},
        follow=True,
    )
    assert response.status_code == 200
    assert b"another reviewer approves it" in response.content
    assert _head(first).state == Artifact.State.RETIRED
    proposed = Candidate.objects.get(status=Candidate.Status.PENDING)
    assert proposed.latest.created_by == reviewer


def test_a_proposal_without_a_token_is_refused_under_four_eyes(four_eyes: None, api: Any) -> None:
    """Tokens optional (the embedded default) let a reviewer propose without one and approve the
    author-less candidate herself; under four-eyes review the writer must be known."""
    assert_error(api.post("/v1/experience/propose", propose_body()), 401, "unauthorized")
    assert not Candidate.objects.exists()
    api.token = create_token("agent")[0]
    assert api.post("/v1/experience/propose", propose_body()).status_code == 201


def test_four_eyes_without_tokens_refuses_to_start() -> None:
    import subprocess
    import sys

    code = "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='powercontext.settings'; django.setup()"
    env = {
        "PATH": "/usr/bin:/bin",
        "POWERCONTEXT_REVIEW_FOUR_EYES": "true",
        "POWERCONTEXT_REQUIRE_TOKEN": "false",
        "POWERCONTEXT_DATA_DIR": "/tmp/powercontext-four-eyes-start",
    }
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert run.returncode != 0
    assert "POWERCONTEXT_REVIEW_FOUR_EYES=true needs tokens" in run.stderr
    env["POWERCONTEXT_REQUIRE_TOKEN"] = "true"
    ok = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr


def test_a_reviewer_may_not_approve_what_the_pipeline_drew_from_her_own_capture(
    four_eyes: None, api: Any, reviewer: User, second: User
) -> None:
    """Her token captured the source; the pipeline proposed from it with no author account."""
    token, _ = create_token(reviewer.username, reviewer=True)
    api.token = token
    captured = api.post(
        "/v1/sources/content",
        {
            "scope_id": "repo",
            "source_id": "s-mine",
            "content": "Always pin the resolver before chasing flakes.",
        },
    )
    assert captured.status_code == 202, captured.content
    candidate = make_candidate(source_refs=[{"name": "content", "source_id": "s-mine"}])
    assert candidate.latest.created_by is None
    with pytest.raises(services.SelfApprovalForbidden) as caught:
        approve(candidate, reviewer)
    assert caught.value.details == {"sources": ["s-mine"]}
    assert "you captured the source s-mine it cites" in caught.value.message
    assert approve(candidate, second).status == Candidate.Status.APPROVED
