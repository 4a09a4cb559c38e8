"""Governance (issue 22): four-eyes review (single approve, bulk approve, the /v1 API; on and
off), who wrote the approved version next to who approved it, the reasons in the Rejected list,
and the reviewer's read-only way into the audit."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from powercontext.core.models import ArtifactRevision
from review import services
from review.models import Candidate, CandidateVersion, ReviewDecision
from review.selectors import governance
from tests.review.conftest import (
    DUPLICATE_REASON,
    approve,
    make_candidate,
    make_canned_reasons,
    make_user,
    reject,
    revise,
)
from tests.review.factories import assert_error, create_token, propose_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def four_eyes(settings: Any) -> None:
    settings.POWERCONTEXT_REVIEW_FOUR_EYES = True


@pytest.fixture
def second(db: None) -> User:
    """Another reviewer."""
    return make_user("second", reviewer=True)


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def written(candidate: Candidate) -> int:
    """Rows a decision writes or touches (nothing may change on a refusal)."""
    return (
        ReviewDecision.objects.filter(candidate=candidate).count()
        + ArtifactRevision.objects.count()
        + CandidateVersion.objects.filter(candidate=candidate).count()
    )


# --- the setting ----------------------------------------------------------------------------------


def test_four_eyes_is_off_by_default() -> None:
    from powercontext import settings as project_settings

    assert project_settings.POWERCONTEXT_REVIEW_FOUR_EYES is False


def test_off_a_reviewer_may_approve_her_own_revision(reviewer: User) -> None:
    candidate = revise(make_candidate(), reviewer, lesson="My own wording.")
    assert approve(candidate, reviewer).status == Candidate.Status.APPROVED


# --- the service ----------------------------------------------------------------------------------


def test_on_her_own_revision_is_refused_and_nothing_is_written(four_eyes: None, reviewer: User) -> None:
    candidate = revise(make_candidate(), reviewer, lesson="My own wording.")
    before = written(candidate)
    with pytest.raises(services.SelfApprovalForbidden) as caught:
        approve(candidate, reviewer)
    assert caught.value.status == 403 and caught.value.code == "self_approval_forbidden"
    assert caught.value.details == {"versions": [2]}
    candidate.refresh_from_db()
    assert candidate.status == Candidate.Status.PENDING and written(candidate) == before


def test_on_a_candidate_she_proposed_is_refused_even_after_another_revised_it(
    four_eyes: None, reviewer: User, second: User
) -> None:
    candidate = services.candidate_propose(
        scope_id="repo",
        family=Candidate.Family.EXPERIENCE,
        submission=services.Submission(**_submission()),
        proposed_by=reviewer,
    )
    candidate = revise(candidate, second, lesson="Sharper, by the second reviewer.")
    with pytest.raises(services.SelfApprovalForbidden) as caught:
        approve(candidate, reviewer)
    assert caught.value.details == {"versions": [1]}
    with pytest.raises(services.SelfApprovalForbidden):
        approve(candidate, second)  # she wrote version 2
    third = make_user("third", reviewer=True)
    assert approve(candidate, third).status == Candidate.Status.APPROVED


def _submission() -> dict[str, Any]:
    body = propose_body()
    return {
        "proposal": body["proposal"],
        "source_refs": body["source_refs"],
        "artifact_refs": [],
        "target": None,
        "reason": "Mine.",
    }


def test_on_another_reviewer_approves_and_the_agents_proposal_is_anyones(
    four_eyes: None, reviewer: User, second: User
) -> None:
    revised = revise(make_candidate(), reviewer, lesson="My own wording.")
    assert approve(revised, second).status == Candidate.Status.APPROVED
    untouched = make_candidate()  # the pipeline's / an unsigned agent's: no author account
    assert approve(untouched, reviewer).status == Candidate.Status.APPROVED


def test_on_bulk_approve_leaves_her_own_out_and_reports_it(four_eyes: None, reviewer: User) -> None:
    mine = revise(make_candidate(), reviewer, lesson="My own wording.")
    other = make_candidate()
    outcomes = services.candidates_decide_bulk(
        items=[(mine.pk, 2), (other.pk, 1)], decision="approved", reason=None, reviewer=reviewer
    )
    assert [(o.pk, o.outcome, o.code) for o in outcomes] == [
        (mine.pk, "conflict", "self_approval_forbidden"),
        (other.pk, "decided", None),
    ]
    mine.refresh_from_db()
    assert mine.status == Candidate.Status.PENDING
    assert not ReviewDecision.objects.filter(candidate=mine).exists()


def test_on_she_may_still_reject_her_own(four_eyes: None, reviewer: User) -> None:
    candidate = revise(make_candidate(), reviewer, lesson="My own wording.")
    rejected = reject(candidate, reviewer, "Second thoughts.")
    assert rejected.status == Candidate.Status.REJECTED


# --- the Inbox ------------------------------------------------------------------------------------


def test_on_the_approve_button_says_why_it_is_unavailable(
    four_eyes: None, reviewer: User, second: User
) -> None:
    candidate = revise(make_candidate(), reviewer, lesson="My own wording.")
    page = client_for(reviewer).get(reverse("review:candidate", args=[candidate.pk])).content.decode()
    assert "data-four-eyes" in page and "you wrote version 2 of it" in page
    assert 'disabled aria-describedby="approve-four-eyes"' in page
    other = client_for(second).get(reverse("review:candidate", args=[candidate.pk])).content.decode()
    assert "data-four-eyes" not in other and 'data-key="a"' in other


def test_off_the_approve_button_is_offered_to_the_writer(reviewer: User) -> None:
    candidate = revise(make_candidate(), reviewer, lesson="My own wording.")
    page = client_for(reviewer).get(reverse("review:candidate", args=[candidate.pk])).content.decode()
    assert "data-four-eyes" not in page and 'data-key="a"' in page


def test_on_a_posted_self_approval_is_refused_with_a_message(four_eyes: None, reviewer: User) -> None:
    candidate = revise(make_candidate(), reviewer, lesson="My own wording.")
    client = client_for(reviewer)
    url = reverse("review:approve", args=[candidate.pk])
    response = client.post(url, {"expected_version": 2})
    assert response.status_code == 303
    assert response["Location"] == reverse("review:candidate", args=[candidate.pk])
    page = client.get(response["Location"]).content.decode()
    assert "was not approved: four-eyes review is on and you wrote version 2 of it" in page
    again = client.post(url, {"expected_version": 2})
    assert again.status_code == 303
    candidate.refresh_from_db()
    assert candidate.status == Candidate.Status.PENDING


def test_on_bulk_approve_in_the_queue_reports_the_left_out_item(four_eyes: None, reviewer: User) -> None:
    mine = revise(make_candidate(), reviewer, lesson="My own wording.")
    other = make_candidate()
    client = client_for(reviewer)
    response = client.post(
        "/review/bulk/", {"decision": "approve", "item": [f"{mine.pk}:2", f"{other.pk}:1"], "seen": 1}
    )
    page = client.get(response["Location"]).content.decode()
    assert "1 approved, 1 conflict:" in page
    assert (
        "you wrote some of its text or captured its evidence: four-eyes review needs another reviewer" in page
    )
    assert Candidate.objects.get(pk=mine.pk).status == Candidate.Status.PENDING


# --- the /v1 API ----------------------------------------------------------------------------------


def _api_propose_then_approve(api: Any, token: str) -> Any:
    api.token = token
    created = api.post("/v1/experience/propose", propose_body())
    assert created.status_code == 201, created.content
    body = created.json()
    return api.post(
        "/v1/artifact-candidates/approve",
        {"scope_id": "repo", "candidate_id": body["candidate_id"], "expected_version": 1},
    )


def test_on_the_api_refuses_a_reviewer_token_approving_its_own_proposal(four_eyes: None, api: Any) -> None:
    token = create_token("alice", reviewer=True)[0]
    details = assert_error(_api_propose_then_approve(api, token), 403, "self_approval_forbidden")
    assert details == {"versions": [1]}
    assert not ReviewDecision.objects.exists() and not ArtifactRevision.objects.exists()


def test_off_the_api_lets_a_reviewer_token_approve_its_own_proposal(api: Any) -> None:
    token = create_token("alice", reviewer=True)[0]
    response = _api_propose_then_approve(api, token)
    assert response.status_code == 200 and response.json()["status"] == "approved"


# --- who wrote the approved version ------------------------------------------------------------


def test_the_candidate_page_and_history_show_the_writer_next_to_the_approver(
    reviewer: User, second: User
) -> None:
    candidate = approve(revise(make_candidate(), second, lesson="Second's wording."), reviewer)
    client = client_for(reviewer)
    page = client.get(reverse("review:candidate", args=[candidate.pk])).content.decode()
    assert "Version 2 written by <b>second</b> (reviewer), approved by <b>reviewer</b>." in page
    history = client.get(reverse("review:history", args=[candidate.pk])).content.decode()
    assert "Version 2 written by <b>second</b> (reviewer), approved by <b>reviewer</b>." in history
    assert '<span data-author="pipeline or local agent">' in history  # version 1
    assert '<span data-author="reviewer">By second (reviewer)</span>' in history


def test_an_agents_proposal_is_written_by_an_agent(reviewer: User) -> None:
    agent = User.objects.create_user(username="ci-bot")
    candidate = services.candidate_propose(
        scope_id="repo",
        family=Candidate.Family.EXPERIENCE,
        submission=services.Submission(**_submission()),
        proposed_by=agent,
    )
    approved = approve(candidate, reviewer)
    page = client_for(reviewer).get(reverse("review:candidate", args=[approved.pk])).content.decode()
    assert "Version 1 written by <b>ci-bot</b> (agent), approved by <b>reviewer</b>." in page


def test_the_author_kind_rule() -> None:
    assert governance.author_kind(None, 1, False) == governance.KIND_NO_ACCOUNT
    assert governance.author_kind(7, 1, False) == governance.KIND_AGENT
    assert governance.author_kind(7, 1, True) == governance.KIND_REVIEWER
    assert governance.author_kind(7, 2, False) == governance.KIND_REVIEWER


# --- the Rejected list and links -----------------------------------------------------------------


def test_the_rejected_list_shows_reason_canned_reason_and_who(reviewer: User) -> None:
    make_canned_reasons(DUPLICATE_REASON, "Too vague to act on.")
    candidate = make_candidate()
    reject(candidate, reviewer, f"{DUPLICATE_REASON}\nSee exp_123 from last week.")
    page = client_for(reviewer).get("/review/?status=rejected").content.decode()
    assert "Rejected by <b>reviewer</b>:" in page
    assert f'<span class="badge" data-canned-reason title="Canned reason">{DUPLICATE_REASON}</span>' in page
    assert "<span data-rejection-text>See exp_123 from last week.</span>" in page


def test_split_reason_keeps_free_text_and_each_canned_reason_once() -> None:
    canned = ["A.", "B."]
    assert governance.split_reason("A.\nwhy\nB.\nA.", canned) == (["A.", "B."], "why\nA.")
    assert governance.split_reason(None, canned) == ([], "")


def test_an_approved_candidate_links_to_its_audit_entry_and_artifact_history(db: None) -> None:
    call_command("create_reviewer", "carol", "--password-file", _password_file(), stdout=io.StringIO())
    carol = User.objects.get(username="carol")
    approved = approve(make_candidate(), carol)
    decision = ReviewDecision.objects.get(candidate=approved)
    client = client_for(carol)
    page = client.get(reverse("review:candidate", args=[approved.pk])).content.decode()
    audit_url = reverse("admin:review_reviewdecision_change", args=[decision.pk])
    assert f'<a href="{audit_url}" data-audit-link>' in page
    head = approved.result_head
    assert head is not None
    history_url = (
        reverse("admin:powercontext_artifactrevision_changelist")
        + f"?scope_id__exact=repo&amp;artifact_id__exact={head.artifact_id}"
    )
    assert f'<a href="{history_url}" data-artifact-history>' in page
    # ... and she can open both, read-only.
    audit = client.get(audit_url)
    assert audit.status_code == 200 and b"no account (pipeline or local agent)" in audit.content
    listing = client.get(history_url.replace("&amp;", "&"))
    assert listing.status_code == 200 and head.artifact_id.encode() in listing.content


def _password_file() -> str:
    import tempfile

    handle = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
    handle.write("a-long-enough-password-41\n")
    handle.close()
    return handle.name


def test_a_reviewer_without_admin_access_sees_no_audit_links(reviewer: User) -> None:
    approved = approve(make_candidate(), reviewer)
    page = client_for(reviewer).get(reverse("review:candidate", args=[approved.pk])).content.decode()
    assert "data-audit-link" not in page and "data-artifact-history" not in page


# --- the reviewer's way into the audit ------------------------------------------------------------


def test_create_reviewer_grants_the_audit_view_only(db: None) -> None:
    call_command("create_reviewer", "dave", "--password-file", _password_file(), stdout=io.StringIO())
    dave = User.objects.get(username="dave")
    assert dave.is_staff and not dave.is_superuser
    client = client_for(dave)
    for url in (
        "/admin/review/reviewdecision/",
        "/admin/review/candidate/",
        "/admin/review/reviewaction/",
        "/admin/powercontext/artifactrevision/",
    ):
        assert client.get(url).status_code == 200, url
    assert client.get("/admin/review/cannedreason/").status_code == 403
    assert client.get("/admin/auth/user/").status_code == 403
    decision_add = client.get("/admin/review/reviewdecision/add/")
    assert decision_add.status_code == 403
