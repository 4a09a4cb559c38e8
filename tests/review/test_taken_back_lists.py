"""The Approved and Rejected lists leave out decisions taken back (issue 32): a decided candidate
that Undo or Reopen superseded with its pending copy is not listed nor counted by default; a
"n taken back" note lists them on demand (``taken_back=only``), keyset paging skips them, and the
candidate's own page stays reachable by URL and links to its copy."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from review import services
from review.models import Candidate
from review.selectors import queue as queue_selectors
from review.services.undo import decision_undo
from tests.review.conftest import approve, make_candidate, reject
from tests.review.test_inbox_views import client_for, rows_of, text_of, url

pytestmark = pytest.mark.django_db


def _reopen(candidate: Candidate, reviewer: User) -> Candidate:
    return services.candidate_reopen(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version,
        reason="Worth another look.",
        reviewer=reviewer,
    )


def _count(body: str, name: str) -> str | None:
    found = re.search(rf'<b data-count="{name}">([^<]*)</b>', body)
    return found.group(1) if found else None


def test_the_approved_list_leaves_out_an_undone_approval_and_says_how_many(reviewer: User) -> None:
    kept = approve(make_candidate(), reviewer)
    undone = approve(make_candidate(), reviewer)
    copy = decision_undo(candidate_pk=undone.pk, reviewer=reviewer)
    client = client_for(reviewer)

    body = text_of(client.get(url("queue") + "?status=approved"))
    assert rows_of_body(body) == [kept.pk]
    assert _count(body, "matching") == "1"
    assert _count(body, "experience") == "1"
    assert _count(body, "taken-back") == "1"
    assert 'href="/review/?status=approved&amp;taken_back=only" data-taken-back' in body

    only = client.get(url("queue") + "?status=approved&taken_back=only")
    assert rows_of(only) == [undone.pk]
    assert _count(text_of(only), "matching") == "1"
    assert _count(text_of(only), "taken-back") is None  # nothing hidden: no note, a "hide them" link
    assert 'href="/review/?status=approved" data-taken-back>hide them' in text_of(only)
    assert rows_of(client.get(url("queue") + "?status=approved&taken_back=include")) == [undone.pk, kept.pk]

    # The superseded candidate stays reachable by URL and links to its pending copy.
    page = client.get(url("candidate", undone))
    assert page.status_code == 200
    assert f'<a href="/review/candidates/{copy.pk}/">candidate #{copy.pk}</a>, now pending' in text_of(page)


def rows_of_body(body: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<td class="num">(\d+)</td>', body)]


def test_the_rejected_list_leaves_out_a_reopened_rejection_and_the_pending_queue_shows_the_copy(
    reviewer: User,
) -> None:
    kept = reject(make_candidate(), reviewer)
    reopened = reject(make_candidate(), reviewer)
    copy = _reopen(reopened, reviewer)
    client = client_for(reviewer)
    body = text_of(client.get(url("queue") + "?status=rejected"))
    assert rows_of_body(body) == [kept.pk]
    assert (_count(body, "matching"), _count(body, "taken-back")) == ("1", "1")
    assert rows_of(client.get(url("queue") + "?status=rejected&taken_back=only")) == [reopened.pk]
    assert rows_of(client.get(url("queue"))) == [copy.pk]  # the pending copy, in the queue


def test_a_list_with_nothing_taken_back_shows_no_note(reviewer: User) -> None:
    approve(make_candidate(), reviewer)
    body = text_of(client_for(reviewer).get(url("queue") + "?status=approved"))
    assert not re.search(r"<a [^>]*data-taken-back", body)
    pending = text_of(client_for(reviewer).get(url("queue") + "?taken_back=only"))
    assert not re.search(r"<a [^>]*data-taken-back", pending)  # the choice means nothing for pending work


def test_the_rejected_list_pages_by_keyset_past_decisions_taken_back(
    reviewer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queue_selectors, "PAGE_SIZE", 2)
    rejected = [reject(make_candidate(), reviewer) for _ in range(7)]
    for n in (1, 2, 5):
        _reopen(rejected[n], reviewer)
    newest = [c.pk for c in reversed(rejected)]  # decided most recently first
    listed = [pk for pk in newest if pk not in {rejected[n].pk for n in (1, 2, 5)}]
    client = client_for(reviewer)
    seen: list[int] = []
    path = url("queue") + "?status=rejected"
    for _ in range(5):
        body = text_of(client.get(path))
        seen += rows_of_body(body)
        found = re.search(r'rel="next" href="\?([^"]+)"', body)
        if found is None:
            break
        path = url("queue") + "?" + found.group(1).replace("&amp;", "&")
    assert seen == listed
    back = client.get(url("queue") + f"?status=rejected&before={listed[2]}")
    assert rows_of(back) == listed[:2]


def test_a_bad_taken_back_value_is_a_filter_error_not_a_500(reviewer: User) -> None:
    response = client_for(reviewer).get(url("queue") + "?status=approved&taken_back=everything")
    assert response.status_code == 200
    assert "Taken back: Select a valid choice" in text_of(response)
