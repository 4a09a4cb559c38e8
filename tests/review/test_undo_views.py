"""Issue 13 item 9 on the server side: the candidate page offers the Undo window (no confirm()),
and a decision sent in the background (``deferred=1``: the reviewer moved on or closed the page)
is answered with a bare status while its outcome waits as a message for the next page."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from powercontext import settings as project_settings
from review.models import Candidate, ReviewDecision
from tests.review.conftest import make_candidate, revise

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(reviewer: User) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    return client


def csrf(client: Client, candidate: Candidate) -> str:
    client.get(reverse("review:candidate", args=[candidate.pk]))
    return str(client.cookies["csrftoken"].value)


def post(client: Client, candidate: Candidate, action: str, **data: Any) -> Any:
    return client.post(
        reverse(f"review:{action}", args=[candidate.pk]),
        {"csrfmiddlewaretoken": csrf(client, candidate), **data},
    )


def messages_on_next_page(client: Client) -> str:
    body = client.get(reverse("review:queue")).content.decode()
    start = body.find('<ul class="messages">')
    return "" if start < 0 else body[start : body.index("</ul>", start)]


def test_the_undo_window_is_ten_seconds_and_no_page_asks_for_confirmation(
    client: Client, settings: Any
) -> None:
    settings.POWERCONTEXT_REVIEW_UNDO_SECONDS = project_settings.POWERCONTEXT_REVIEW_UNDO_SECONDS
    candidate = make_candidate()

    body = client.get(reverse("review:candidate", args=[candidate.pk])).content.decode()

    assert project_settings.POWERCONTEXT_REVIEW_UNDO_SECONDS == 10
    assert 'data-undo-seconds="10"' in body and 'role="status"' in body
    assert f'data-undo="Approved #{candidate.pk}"' in body and f'data-undo="Rejected #{candidate.pk}"' in body
    assert "window.confirm" not in body and "data-confirm" not in body
    assert "sendBeacon" in body


def test_a_viewer_gets_no_undo_toast(viewer: User) -> None:
    client = Client()
    client.force_login(viewer)
    candidate = make_candidate()

    body = client.get(reverse("review:candidate", args=[candidate.pk])).content.decode()

    assert 'id="undo-toast"' not in body


def test_a_deferred_approve_answers_204_and_leaves_the_outcome_for_the_next_page(client: Client) -> None:
    candidate = make_candidate()

    response = post(client, candidate, "approve", expected_version="1", deferred="1")

    assert response.status_code == 204 and response.content == b""
    assert Candidate.objects.get(pk=candidate.pk).status == "approved"
    shown = messages_on_next_page(client)
    assert f"Approved candidate #{candidate.pk} (version 1)" in shown
    assert f'data-done="approve:{candidate.pk}"' in shown
    assert messages_on_next_page(client) == ""  # shown once


def test_a_deferred_reject_is_decided_with_its_reason(client: Client) -> None:
    candidate = make_candidate()

    response = post(client, candidate, "reject", expected_version="1", reason="Too vague.", deferred="1")

    assert response.status_code == 204
    assert ReviewDecision.objects.get(candidate=candidate).reason == "Too vague."
    assert f'data-done="reject:{candidate.pk}"' in messages_on_next_page(client)


def test_a_deferred_decision_that_conflicts_is_reported_on_the_next_page(
    client: Client, reviewer: User
) -> None:
    candidate = make_candidate()
    revise(candidate, reviewer, lesson="Changed while the approval was held.")

    response = post(client, candidate, "approve", expected_version="1", deferred="1")

    assert response.status_code == 409 and response.content == b""
    assert Candidate.objects.get(pk=candidate.pk).status == "pending"
    shown = messages_on_next_page(client)
    assert "msg error" in shown
    assert (
        f'Candidate <a href="/review/candidates/{candidate.pk}/">#{candidate.pk}</a> was not approved'
        in shown
    )
    assert "The Candidate version is not the current version." in shown


def test_a_refused_deferred_form_is_400_with_a_message_never_a_500(client: Client) -> None:
    candidate = make_candidate()

    response = post(client, candidate, "reject", expected_version="1", reason="   ", deferred="1")

    assert response.status_code == 400
    assert Candidate.objects.get(pk=candidate.pk).status == "pending"
    assert f"#{candidate.pk}</a> was not rejected: the form was refused." in messages_on_next_page(client)
    # The candidate page shows the form's errors once (they were kept for it).
    body = client.get(reverse("review:candidate", args=[candidate.pk])).content.decode()
    assert 'class="errorlist"' in body


def test_without_deferred_a_conflict_still_renders_the_conflict_page(client: Client, reviewer: User) -> None:
    candidate = make_candidate()
    revise(candidate, reviewer, lesson="Changed while the approval was held.")

    response = post(client, candidate, "approve", expected_version="1")

    assert response.status_code == 409
    assert "This candidate changed while you were reviewing it" in response.content.decode()
    assert messages_on_next_page(client) == ""


def test_a_deferred_post_without_the_csrf_token_is_refused(client: Client) -> None:
    candidate = make_candidate()

    response = client.post(
        reverse("review:approve", args=[candidate.pk]), {"expected_version": "1", "deferred": "1"}
    )

    assert response.status_code == 403
    assert Candidate.objects.get(pk=candidate.pk).status == "pending"


def test_a_deferred_bulk_decision_answers_204_with_the_summary_for_the_next_page(client: Client) -> None:
    first, second = make_candidate(), make_candidate()
    token = csrf(client, first)
    items = [f"{first.pk}:1", f"{second.pk}:1"]

    response = client.post(
        reverse("review:bulk"),
        {"csrfmiddlewaretoken": token, "seen": "0", "item": items, "decision": "approve", "deferred": "1"},
    )

    assert response.status_code == 204
    assert sorted(Candidate.objects.values_list("status", flat=True)) == ["approved", "approved"]
    assert "2 approved." in messages_on_next_page(client)


def test_a_refused_deferred_bulk_form_is_400(client: Client) -> None:
    candidate = make_candidate()

    response = client.post(
        reverse("review:bulk"),
        {
            "csrfmiddlewaretoken": csrf(client, candidate),
            "seen": "0",
            "item": [f"{candidate.pk}:1"],
            "decision": "reject",
            "deferred": "1",
        },
    )

    assert response.status_code == 400
    assert Candidate.objects.get(pk=candidate.pk).status == "pending"
    assert "msg error" in messages_on_next_page(client)
