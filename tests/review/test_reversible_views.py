"""The Inbox's take-back actions (issue 22): reopen, retire, revert on a decided candidate's page."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from powercontext.core.models import Artifact, ArtifactRevision
from powercontext.prepare.selection import context_candidates
from review import services
from review.models import Candidate, ReviewAction
from tests.review.conftest import approve, experience, make_candidate, make_update_candidate
from tests.review.test_inbox_views import client_for, refresh, text_of, url

pytestmark = pytest.mark.django_db


def _rejected(reviewer: User) -> Candidate:
    candidate = make_candidate()
    return services.candidate_reject(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=1,
        reason="wrong scope",
        reviewer=reviewer,
    )


def _lessons(query: str) -> list[str]:
    found = context_candidates(scope_id="repo", query=query, memory_limit=4, experience_limit=4)
    return [hit.content.lesson for hit in found.experience_hits]


def test_a_rejected_candidate_offers_reopen_and_reopening_proposes_it_again(reviewer: User) -> None:
    candidate = _rejected(reviewer)
    client = client_for(reviewer)
    body = text_of(client.get(url("candidate", candidate)))
    assert 'id="reopen-form"' in body and 'id="retire-form"' not in body
    response = client.post(
        url("reopen", candidate), {"expected_version": 1, "reason": "right scope after all"}
    )
    assert response.status_code == 302 and response["Location"] == url("candidate", candidate)
    assert refresh(candidate).status == "rejected"  # the rejection stays as it was
    action = ReviewAction.objects.get()
    assert (action.action, action.reviewer, action.reason) == ("reopened", reviewer, "right scope after all")
    body = text_of(client.get(response["Location"]))
    assert "Reopened candidate" in body and "right scope after all" in body
    assert f"candidate #{action.reopened_as_id}" in body and 'id="reopen-form"' not in body
    reopened = text_of(client.get(url("candidate", action.reopened_as)))
    assert 'id="approve-form"' in reopened


def test_reopen_needs_a_reason_and_a_reviewer_and_a_post(reviewer: User, viewer: User) -> None:
    candidate = _rejected(reviewer)
    client = client_for(reviewer)
    response = client.post(url("reopen", candidate), {"expected_version": 1, "reason": ""})
    assert response.status_code == 302 and "Not done (reopen)" in text_of(client.get(response["Location"]))
    viewer_client = client_for(viewer)
    assert (
        viewer_client.post(url("reopen", candidate), {"expected_version": 1, "reason": "x"}).status_code
        == 403
    )
    assert 'id="reopen-form"' not in text_of(viewer_client.get(url("candidate", candidate)))
    assert client.get(url("reopen", candidate)).status_code == 302  # a GET changes nothing
    assert refresh(candidate).status == "rejected" and not ReviewAction.objects.exists()


def test_reopen_is_csrf_protected(reviewer: User) -> None:
    candidate = _rejected(reviewer)
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    assert client.post(url("reopen", candidate), {"expected_version": 1, "reason": "x"}).status_code == 403
    assert refresh(candidate).status == "rejected"


def test_a_stale_reopen_is_a_409(reviewer: User) -> None:
    candidate = _rejected(reviewer)
    client = client_for(reviewer)
    assert client.post(url("reopen", candidate), {"expected_version": 1, "reason": "one"}).status_code == 302
    response = client.post(url("reopen", candidate), {"expected_version": 1, "reason": "two"})
    assert response.status_code == 409
    assert ReviewAction.objects.count() == 1


def test_retire_from_the_candidate_page_removes_it_from_recall(reviewer: User, viewer: User) -> None:
    candidate = approve(make_candidate(proposal=experience(lesson="grease the okapi bearings")), reviewer)
    assert _lessons("okapi bearings") == ["grease the okapi bearings"]
    client = client_for(reviewer)
    body = text_of(client.get(url("candidate", candidate)))
    assert 'id="retire-form"' in body and 'id="revert-form"' not in body  # one revision: nothing to revert to
    assert (
        client_for(viewer).post(url("retire", candidate), {"expected_revision": 1, "reason": "x"}).status_code
        == 403
    )
    response = client.post(
        url("retire", candidate), {"expected_revision": 1, "reason": "the lesson is wrong"}
    )
    assert response.status_code == 302
    assert _lessons("okapi bearings") == []
    head = Artifact.objects.get(pk=candidate.result_head_id)
    assert head.state == "retired" and ArtifactRevision.objects.filter(head=head).count() == 1
    body = text_of(client.get(response["Location"]))
    assert "no longer recalled" in body and "the lesson is wrong" in body and 'data-action="retired"' in body
    # Restoring: revert to the current revision of the retired head.
    assert 'id="revert-form"' in body and 'id="retire-form"' not in body
    stale = {"expected_revision": 1, "to_revision": 1, "reason": "restore", "expected_state": "active"}
    assert client.post(url("revert", candidate), stale).status_code == 409  # it saw it active
    assert 'name="expected_state" value="retired"' in body
    client.post(url("revert", candidate), {**stale, "expected_state": "retired"})
    assert _lessons("okapi bearings") == ["grease the okapi bearings"]


def test_retire_or_revert_on_a_stale_revision_is_a_409(reviewer: User) -> None:
    base = approve(make_candidate(proposal=experience(lesson="first")), reviewer)
    approve(make_update_candidate(base, experience(lesson="second")), reviewer)  # head at 2
    client = client_for(reviewer)
    response = client.post(url("retire", base), {"expected_revision": 1, "reason": "x"})
    assert response.status_code == 409
    assert "The artifact changed since you saw it" in text_of(response) and "revision 2" in text_of(response)
    response = client.post(
        url("revert", base),
        {"expected_revision": 1, "to_revision": 1, "reason": "x", "expected_state": "active"},
    )
    assert response.status_code == 409
    assert Artifact.objects.get(pk=base.result_head_id).current_revision == 2
    assert not ReviewAction.objects.exists()


def test_revert_from_the_candidate_page_is_recalled_with_the_old_content(reviewer: User) -> None:
    base = approve(make_candidate(proposal=experience(lesson="feed the capybara at noon")), reviewer)
    update = approve(
        make_update_candidate(base, experience(lesson="feed the capybara at midnight")), reviewer
    )
    assert _lessons("capybara") == ["feed the capybara at midnight"]
    client = client_for(reviewer)
    body = text_of(client.get(url("candidate", update)))
    assert '<option value="1">1</option>' in body
    response = client.post(
        url("revert", update),
        {"expected_revision": 2, "to_revision": 1, "reason": "noon was right", "expected_state": "active"},
    )
    assert response.status_code == 302
    assert _lessons("capybara") == ["feed the capybara at noon"]
    head = Artifact.objects.get(pk=update.result_head_id)
    assert head.current_revision == 3
    action = ReviewAction.objects.get()
    assert (action.action, action.candidate_id, action.reverted_to, action.reviewer) == (
        "reverted",
        update.pk,
        1,
        reviewer,
    )
    assert "has the content of revision 1" in text_of(client.get(response["Location"]))


def test_retire_is_refused_on_a_rejected_candidate(reviewer: User) -> None:
    candidate = _rejected(reviewer)
    client = client_for(reviewer)
    response = client.post(url("retire", candidate), {"expected_revision": 1, "reason": "x"})
    assert response.status_code == 302
    assert "Only an approved candidate" in text_of(client.get(response["Location"]))
    assert not ReviewAction.objects.exists()
