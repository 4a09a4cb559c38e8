"""One Undo model (issue 22) on the server side: a decision commits at once, the page the
reviewer lands on offers its Undo once (a form that POSTs, no JavaScript needed), and the Undo
lands on the re-proposed candidate, or reports (409 / 403) why nothing was undone. Bulk approve
leaves out flagged and stale items unless included; a reject without a reason decides nothing."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from powercontext.core.models import Artifact
from review.models import Candidate, ReviewAction, ReviewDecision
from tests.review.conftest import approve, experience, make_candidate, make_update_candidate, make_user

pytestmark = pytest.mark.django_db

BIDI = "\u202e"


@pytest.fixture
def client(reviewer: User) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    return client


def csrf(client: Client) -> str:
    client.get(reverse("review:queue"))
    return str(client.cookies["csrftoken"].value)


def post(client: Client, url: str, **data: Any) -> Any:
    return client.post(url, {"csrfmiddlewaretoken": csrf(client), **data})


def decide(client: Client, candidate: Candidate, action: str, **data: Any) -> Any:
    return post(client, reverse(f"review:{action}", args=[candidate.pk]), expected_version="1", **data)


def undo_offer(body: str) -> list[int]:
    """The candidates the page's Undo toast would take back ([] without a toast)."""
    form = re.search(
        r'<form method="post" action="/review/undo/[^"]*"[^>]*data-undo-form>(.*?)</form>', body, re.S
    )
    return [int(pk) for pk in re.findall(r'name="candidate" value="(\d+)"', form.group(1))] if form else []


def test_approve_commits_at_once_and_the_next_page_offers_undo_once(client: Client) -> None:
    first, second = make_candidate(), make_candidate()

    response = decide(client, first, "approve")

    assert response.status_code == 302
    assert Candidate.objects.get(pk=first.pk).status == "approved"
    body = client.get(response["Location"]).content.decode()
    assert f"Candidate #{second.pk}" in body
    assert undo_offer(body) == [first.pk]
    assert f"Approved #{first.pk}." in body and "window.confirm" not in body
    assert undo_offer(client.get(response["Location"]).content.decode()) == []  # shown once


def test_undo_of_an_approval_lands_on_the_reproposed_candidate_and_retires_the_experience(
    client: Client, reviewer: User
) -> None:
    candidate = make_candidate()
    decide(client, candidate, "approve")
    head = Candidate.objects.get(pk=candidate.pk).result_head

    response = post(client, reverse("review:undo"), candidate=str(candidate.pk))

    copy = Candidate.objects.exclude(pk=candidate.pk).get()
    assert response.status_code == 303
    assert response["Location"] == reverse("review:candidate", args=[copy.pk])
    assert copy.status == "pending"
    assert Artifact.objects.get(pk=head.pk).state == "retired"
    assert ReviewDecision.objects.get(candidate=candidate).decision == "approved"  # insert-only
    page = client.get(response["Location"]).content.decode()
    assert "Undone: your decision on candidate" in page and f"as #{copy.pk}" in page


def test_undo_of_a_reject_as_duplicate_reopens_it(client: Client) -> None:
    candidate = make_candidate()
    decide(client, candidate, "reject", reason="Duplicate of approved Experience exp_1 (revision 1).")

    response = post(client, reverse("review:undo"), candidate=str(candidate.pk))

    copy = Candidate.objects.get(status="pending")
    assert response["Location"] == reverse("review:candidate", args=[copy.pk])
    assert ReviewAction.objects.get().action == "reopened"


def test_undo_by_another_reviewer_is_403_and_changes_nothing(client: Client) -> None:
    other = make_user("other", reviewer=True)
    candidate = make_candidate()
    approve(candidate, other)

    response = post(client, reverse("review:undo"), candidate=str(candidate.pk))

    assert response.status_code == 403
    assert "Only the reviewer who took a decision can undo it." in response.content.decode()
    assert not ReviewAction.objects.exists()


def test_undo_after_someone_else_moved_the_head_is_a_409_page(client: Client) -> None:
    other = make_user("other", reviewer=True)
    candidate = make_candidate()
    decide(client, candidate, "approve")
    approve(make_update_candidate(Candidate.objects.get(pk=candidate.pk)), other)

    response = post(client, reverse("review:undo"), candidate=str(candidate.pk))

    body = response.content.decode()
    assert response.status_code == 409
    assert "Not undone" in body and "does not revert their work" in body
    assert Candidate.objects.filter(status="pending").count() == 0


def test_a_malformed_undo_form_is_refused_without_a_500(client: Client) -> None:
    response = post(client, reverse("review:undo"), candidate="12; drop")

    assert response.status_code == 303
    assert "The Undo form was malformed" in client.get(response["Location"]).content.decode()


def test_a_viewer_cannot_undo(viewer: User) -> None:
    client = Client()
    client.force_login(viewer)

    response = client.post(reverse("review:undo"), {"candidate": "1"})

    assert response.status_code == 403


def test_bulk_approve_leaves_out_flagged_and_stale_items_and_offers_undo_of_the_batch(
    client: Client, reviewer: User
) -> None:
    plain = make_candidate()
    flagged = make_candidate(proposal=experience(lesson=f"Deploy on Fridays {BIDI}evil"))
    base = approve(make_candidate(), reviewer)
    first_update, stale = make_update_candidate(base), make_update_candidate(base)
    approve(first_update, reviewer)  # the head moves on: `stale` targets revision 1
    items = [f"{c.pk}:1" for c in (plain, flagged, stale)]

    response = post(client, reverse("review:bulk"), seen="0", item=items, decision="approve")

    assert response.status_code == 303
    body = client.get(response["Location"]).content.decode()
    statuses = dict(Candidate.objects.values_list("pk", "status"))
    assert [statuses[c.pk] for c in (plain, flagged, stale)] == ["approved", "pending", "pending"]
    assert "1 approved. Left out 2 flagged items:" in body
    assert f"#{flagged.pk}</a> (hidden characters or text)" in body
    assert f"#{stale.pk}</a> (stale: its target moved on, rebase it first)" in body
    assert undo_offer(body) == [plain.pk]


def test_bulk_approve_includes_flagged_items_when_ticked(client: Client) -> None:
    flagged = make_candidate(proposal=experience(lesson=f"Deploy on Fridays {BIDI}evil"))

    post(
        client,
        reverse("review:bulk"),
        seen="0",
        item=[f"{flagged.pk}:1"],
        decision="approve",
        include_flagged="1",
    )

    assert Candidate.objects.get(pk=flagged.pk).status == "approved"


def test_one_undo_takes_back_the_whole_batch(client: Client) -> None:
    first, second = make_candidate(), make_candidate()
    post(
        client, reverse("review:bulk"), seen="0", item=[f"{first.pk}:1", f"{second.pk}:1"], decision="approve"
    )

    response = post(client, reverse("review:undo"), candidate=[str(first.pk), str(second.pk)])

    assert response.status_code == 303 and response["Location"] == reverse("review:queue")
    assert "Undone: 2 of 2 decisions" in client.get(response["Location"]).content.decode()
    assert Candidate.objects.filter(status="pending").count() == 2


def test_a_batch_undo_reports_the_items_it_could_not_undo(client: Client, reviewer: User) -> None:
    other = make_user("other", reviewer=True)
    mine, theirs = make_candidate(), make_candidate()
    post(client, reverse("review:bulk"), seen="0", item=[f"{mine.pk}:1"], decision="approve")
    approve(theirs, other)

    response = post(client, reverse("review:undo"), candidate=[str(mine.pk), str(theirs.pk)])

    body = client.get(response["Location"]).content.decode()
    assert "Undone: 1 of 2 decisions" in body
    assert f"#{theirs.pk}</a> (Only the reviewer who took a decision can undo it.)" in body


def test_a_bulk_reject_without_a_reason_decides_nothing_and_offers_no_undo(client: Client) -> None:
    candidate = make_candidate()

    response = post(client, reverse("review:bulk"), seen="0", item=[f"{candidate.pk}:1"], decision="reject")

    body = client.get(response["Location"]).content.decode()
    assert "A reason is required to reject." in body
    assert Candidate.objects.get(pk=candidate.pk).status == "pending"
    assert not ReviewDecision.objects.exists()
    assert undo_offer(body) == []


def test_a_single_reject_without_a_reason_decides_nothing(client: Client) -> None:
    candidate = make_candidate()

    response = decide(client, candidate, "reject", reason="   ")

    assert response.status_code == 303
    assert Candidate.objects.get(pk=candidate.pk).status == "pending"
    assert undo_offer(client.get(response["Location"]).content.decode()) == []


def test_a_conflict_renders_the_conflict_page_and_offers_no_undo(client: Client, reviewer: User) -> None:
    candidate = make_candidate()
    approve(candidate, reviewer)

    response = decide(client, candidate, "approve")

    assert response.status_code == 409
    assert undo_offer(response.content.decode()) == []


def test_the_decided_candidates_page_offers_undo_to_its_reviewer_only_while_it_can_be_undone(
    client: Client, reviewer: User, settings: Any
) -> None:
    other = make_user("other", reviewer=True)
    mine, theirs = make_candidate(), make_candidate()
    decide(client, mine, "approve")
    approve(theirs, other)

    def offered(candidate: Candidate) -> bool:
        body = client.get(reverse("review:candidate", args=[candidate.pk])).content.decode()
        return 'id="undo-here"' in body

    assert offered(mine) and not offered(theirs)
    settings.POWERCONTEXT_REVIEW_UNDO_MINUTES = 0
    assert not offered(mine)  # past the window
    settings.POWERCONTEXT_REVIEW_UNDO_MINUTES = 10
    post(client, reverse("review:undo"), candidate=str(mine.pk))
    assert not offered(mine)  # already taken back
