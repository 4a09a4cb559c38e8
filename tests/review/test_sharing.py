"""Sharing a queue between reviewers (issue 22): the "viewing" marker (services, compare-and-swap,
expiry), Next / Previous / the page after a decision skipping items others are on and taking the
one they land on, the queue's marks and "Show items others are on", the page's renewal POST, the
collision page, and "Assign to me" from the queue without leaving the page. The PostgreSQL tests
race real connections."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.test import Client
from django.utils import timezone

from review import services
from review.models import Candidate, CandidateClaim, ReviewDecision
from review.selectors import queue as queue_selectors
from review.services import viewing
from tests.review.conftest import approve, make_candidate, make_user, revise
from tests.review.test_claims import client_for, text_of
from tests.review.test_inbox_views import _queries

pytestmark = pytest.mark.django_db

WAITING = queue_selectors.SORTS["waiting"]


@pytest.fixture
def bob(db: None) -> User:
    return make_user("bob", reviewer=True)


def url(name: str, candidate: Candidate | int | None = None) -> str:
    from django.urls import reverse

    pk = candidate.pk if isinstance(candidate, Candidate) else candidate
    return reverse(f"review:{name}", args=[pk] if pk is not None else [])


def holder(candidate: Candidate) -> str | None:
    found = Candidate.objects.select_related("viewing_by").get(pk=candidate.pk)
    live = found.viewing_until is not None and found.viewing_until > timezone.now()
    return found.viewing_by.username if found.viewing_by is not None and live else None


def claim(candidate: Candidate, user: User) -> None:
    services.candidate_claim(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        reviewer=user,
        expected_claimant=None,
    )


def pending() -> QuerySet[Candidate]:
    return Candidate.objects.filter(status=Candidate.Status.PENDING)


def neighbour(rows: QuerySet[Candidate], at: int) -> int | None:
    return queue_selectors.neighbour(rows, at, sort=WAITING)


def take_next(start: Candidate | int, user: User, **kwargs: Any) -> viewing.Taken:
    pk = start.pk if isinstance(start, Candidate) else start
    return viewing.viewing_take_next(pending(), start=pk, reviewer=user, neighbour=neighbour, **kwargs)


# --- services -----------------------------------------------------------------------------------


def test_the_first_to_open_holds_the_marker_until_it_expires(
    reviewer: User, bob: User, settings: Any
) -> None:
    settings.POWERCONTEXT_REVIEW_VIEWING_SECONDS = 120
    candidate = make_candidate()
    assert viewing.viewing_mark(pk=candidate.pk, reviewer=reviewer) is True
    assert viewing.viewing_mark(pk=candidate.pk, reviewer=bob) is False  # never overwritten while live
    assert viewing.viewing_mark(pk=candidate.pk, reviewer=reviewer) is True  # renewing one's own
    assert holder(candidate) == "reviewer"
    with time_machine.travel(timezone.now() + timedelta(seconds=121), tick=False):
        assert viewing.viewing_mark(pk=candidate.pk, reviewer=bob) is True  # expired: free again
    found = Candidate.objects.get(pk=candidate.pk)
    assert found.viewing_by_id == bob.pk
    assert found.viewing_until is not None and found.viewing_until > timezone.now() + timedelta(seconds=119)


def test_a_decided_candidate_is_never_marked_and_release_touches_only_your_own(
    reviewer: User, bob: User
) -> None:
    decided = approve(make_candidate(), reviewer)
    assert viewing.viewing_mark(pk=decided.pk, reviewer=reviewer) is False
    open_one = make_candidate()
    viewing.viewing_mark(pk=open_one.pk, reviewer=reviewer)
    assert viewing.viewing_release(pk=open_one.pk, reviewer=bob) is False
    assert holder(open_one) == "reviewer"
    assert viewing.viewing_release(pk=open_one.pk, reviewer=reviewer) is True
    assert holder(open_one) is None
    assert viewing.viewing_mark(pk=open_one.pk, reviewer=bob) is True


def test_next_skips_items_others_view_or_claimed_and_takes_the_one_it_lands_on(
    reviewer: User, bob: User
) -> None:
    start, viewed, claimed, free, last = (make_candidate() for _ in range(5))
    viewing.viewing_mark(pk=start.pk, reviewer=reviewer)
    viewing.viewing_mark(pk=viewed.pk, reviewer=bob)
    claim(claimed, bob)
    taken = take_next(start, reviewer)
    assert taken == viewing.Taken(free.pk, 0)
    assert holder(free) == "reviewer"
    assert holder(start) is None  # the item reviewer moved on from is free for others at once
    assert holder(viewed) == "bob"
    # Your own claim and your own marker do not make you skip an item.
    claim(last, reviewer)
    assert take_next(free, reviewer).pk == last.pk
    assert take_next(last, reviewer).pk is None
    # "Show items others are on": the neighbour, whoever is on it (bob's marker is kept).
    assert take_next(start, reviewer, skip_others=False).pk == viewed.pk
    assert holder(viewed) == "bob"
    # Previous goes the other way, with the same skipping.
    back = viewing.viewing_take_next(
        pending(),
        start=last.pk,
        reviewer=reviewer,
        neighbour=lambda rows, at: queue_selectors.neighbour(rows, at, sort=WAITING, forward=False),
    )
    assert back.pk == free.pk


def test_next_tries_the_following_item_when_another_reviewer_takes_it_first(
    reviewer: User, bob: User
) -> None:
    start, contested, after = (make_candidate() for _ in range(3))
    seen: list[int] = []

    def bob_gets_there_first(rows: QuerySet[Candidate], at: int) -> int | None:
        found = neighbour(rows, at)
        if found == contested.pk and not seen:
            assert viewing.viewing_mark(pk=found, reviewer=bob)  # between reviewer's choice and her mark
        seen.append(found or 0)
        return found

    taken = viewing.viewing_take_next(
        pending(), start=start.pk, reviewer=reviewer, neighbour=bob_gets_there_first
    )
    assert taken == viewing.Taken(after.pk, 1)
    assert seen == [contested.pk, after.pk]
    assert holder(contested) == "bob" and holder(after) == "reviewer"


# --- concurrency (PostgreSQL: separate connections, real row locks) ----------------------------


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_eight_reviewers_opening_one_candidate_at_once_exactly_one_holds_it() -> None:
    from tests.powercontext.test_concurrency import run_together

    users = [make_user(f"opener{n}", reviewer=True) for n in range(8)]
    for round_ in range(3):
        candidate = make_candidate("race-view")
        results = run_together(
            [lambda u=user, c=candidate: viewing.viewing_mark(pk=c.pk, reviewer=u) for user in users]  # type: ignore[misc]
        )
        assert results.count(True) == 1 and results.count(False) == 7, (round_, results)
        winner = users[results.index(True)]
        assert Candidate.objects.get(pk=candidate.pk).viewing_by_id == winner.pk


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_reviewers_pressing_next_at_once_never_land_on_the_same_item() -> None:
    from tests.powercontext.test_concurrency import run_together

    first, second = make_user("first", reviewer=True), make_user("second", reviewer=True)
    start = make_candidate("race-next")
    made = {make_candidate("race-next").pk: n for n in range(30)}

    def work(user: User, at: int, decide: bool) -> viewing.Taken:
        """Approve the item the reviewer is on (as the page after a decision does), then Next."""
        if decide:
            approve(Candidate.objects.get(pk=at), user)
        return take_next(at, user)

    landed: list[tuple[int | None, int | None]] = []
    at_first = at_second = start.pk
    for round_ in range(10):  # each round both act at the same instant, from where they are
        results = run_together(
            [
                lambda a=at_first, d=round_ > 0: work(first, a, d),  # type: ignore[misc]
                lambda b=at_second, d=round_ > 0: work(second, b, d),  # type: ignore[misc]
            ]
        )
        assert all(isinstance(r, viewing.Taken) for r in results), results
        a, b = results[0].pk, results[1].pk
        landed.append((a, b))
        assert a is not None and b is not None and a != b, landed
        assert Candidate.objects.get(pk=a).viewing_by_id == first.pk
        assert Candidate.objects.get(pk=b).viewing_by_id == second.pk
        at_first, at_second = a, b
    visited = [pk for pair in landed for pk in pair]
    assert len(visited) == len(set(visited)) == 20 and set(visited) <= set(made)
    decided = ReviewDecision.objects.filter(candidate_id__in=made)
    assert decided.count() == 18 == len({d.candidate_id for d in decided})  # no item decided twice


def _live_markers(user: User) -> list[int]:
    return list(
        Candidate.objects.filter(viewing_by=user, viewing_until__gt=timezone.now())
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def test_one_reviewer_marking_fifty_items_hides_at_most_the_cap_from_another(
    reviewer: User, bob: User, settings: Any
) -> None:
    """A script renewing markers on every item (the page's renewal POST, any pk) would hide the
    whole queue from everyone else; the cap keeps her newest few and frees the rest."""
    settings.POWERCONTEXT_REVIEW_VIEWING_MAX = 3
    candidates = [make_candidate() for _ in range(50)]
    client = client_for(reviewer)
    for candidate in candidates:
        assert client.post(url("viewing", candidate)).status_code == 204
    assert _live_markers(reviewer) == [c.pk for c in candidates[-3:]]
    assert pending().count() - viewing.free_rows(pending(), bob).count() == 3
    page = text_of(client_for(bob).get(url("queue")))
    assert len(re.findall(r"<tr data-queue-row [^>]*data-skip", page)) == 3
    # Bob's Next goes through everything else.
    walked, at = [], candidates[0].pk
    for _ in range(50):
        taken = take_next(at, bob)
        if taken.pk is None:
            break
        walked.append(taken.pk)
        at = taken.pk
    assert walked == [c.pk for c in candidates[1:-3]]


def test_opening_one_more_releases_the_oldest_marker_and_renewing_keeps_it_young(
    reviewer: User, bob: User, settings: Any
) -> None:
    settings.POWERCONTEXT_REVIEW_VIEWING_MAX = 3
    settings.POWERCONTEXT_REVIEW_VIEWING_SECONDS = 120
    a, b, c, d, e = (make_candidate() for _ in range(5))
    start = timezone.now()
    for n, candidate in enumerate((a, b, c)):
        with time_machine.travel(start + timedelta(seconds=n), tick=False):
            assert viewing.viewing_mark(pk=candidate.pk, reviewer=reviewer)
    with time_machine.travel(start + timedelta(seconds=10), tick=False):
        assert viewing.viewing_mark(pk=a.pk, reviewer=reviewer)  # renewed: now the newest
        assert viewing.viewing_mark(pk=d.pk, reviewer=reviewer)
        assert _live_markers(reviewer) == [a.pk, c.pk, d.pk]  # b, the oldest, released
        assert viewing.viewing_mark(pk=b.pk, reviewer=bob)  # free for others at once
        # A marker that could not be taken releases nothing.
        assert not viewing.viewing_mark(pk=b.pk, reviewer=reviewer)
        assert _live_markers(reviewer) == [a.pk, c.pk, d.pk]
        # Others' markers are never touched by her cap.
        assert viewing.viewing_mark(pk=e.pk, reviewer=reviewer)
        assert _live_markers(bob) == [b.pk]
        assert _live_markers(reviewer) == [a.pk, d.pk, e.pk]


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_marks_sent_at_once_by_one_reviewer_never_hold_more_than_the_cap(settings: Any) -> None:
    from tests.powercontext.test_concurrency import run_together

    settings.POWERCONTEXT_REVIEW_VIEWING_MAX = 2
    user = make_user("scripted", reviewer=True)
    candidates = [make_candidate("race-cap") for _ in range(8)]
    results = run_together(
        [lambda c=candidate: viewing.viewing_mark(pk=c.pk, reviewer=user) for candidate in candidates]  # type: ignore[misc]
    )
    assert results == [True] * 8
    assert len(_live_markers(user)) == 2


# --- views: the candidate page, Next, Previous, after a decision ----------------------------------


def test_opening_a_candidate_marks_it_and_others_see_who_is_reviewing_it(reviewer: User, bob: User) -> None:
    candidate = make_candidate()
    mine = text_of(client_for(reviewer).get(url("candidate", candidate)))
    assert holder(candidate) == "reviewer"
    assert "You are reviewing this" in mine
    theirs = client_for(bob).get(url("candidate", candidate))
    assert "<b>reviewer</b> is reviewing this" in text_of(theirs)
    assert holder(candidate) == "reviewer"  # bob's visit does not take it
    # ... and never blocks: bob may still decide it.
    response = client_for(bob).post(url("approve", candidate), {"expected_version": 1})
    assert response.status_code == 302
    assert ReviewDecision.objects.get(candidate_id=candidate.pk).reviewer == bob


def test_viewers_see_who_is_reviewing_but_never_mark_a_candidate(reviewer: User, viewer: User) -> None:
    candidate = make_candidate()
    page = text_of(client_for(viewer).get(url("candidate", candidate)))
    assert holder(candidate) is None and 'data-viewing-url="' not in page
    client_for(reviewer).get(url("candidate", candidate))
    page = text_of(client_for(viewer).get(url("candidate", candidate)))
    assert "<b>reviewer</b> is reviewing this." in page and 'data-viewing-url="' not in page
    assert holder(candidate) == "reviewer"


def test_next_previous_and_the_page_after_a_decision_skip_items_others_are_on(
    reviewer: User, bob: User
) -> None:
    first, viewed, claimed, free, last = (make_candidate() for _ in range(5))
    client_for(bob).get(url("candidate", viewed))
    claim(claimed, bob)
    client = client_for(reviewer)
    page = text_of(client.get(url("candidate", first) + "?family=experience"))
    assert f'href="{url("next", first)}?family=experience" data-key="n"' in page
    response = client.get(url("next", first) + "?family=experience")
    assert response.status_code == 302
    assert response["Location"] == url("candidate", free) + "?family=experience"
    assert holder(free) == "reviewer" and holder(first) is None
    assert client.get(url("previous", free))["Location"] == url("candidate", first)
    # The page after a decision.
    decided = client.post(url("approve", first), {"expected_version": 1})
    assert decided["Location"] == url("candidate", free)
    # With "Show items others are on", Next goes through them.
    shown = client.get(url("next", first) + "?others=True")
    assert shown["Location"] == url("candidate", viewed) + "?others=True"
    assert holder(viewed) == "bob"
    # Nothing free past the last: back to the queue, at the row, saying why.
    client.get(url("candidate", last))
    end = client.get(url("next", last))
    assert end["Location"] == url("queue") + f"#c{last.pk}"
    assert "is free" in text_of(client.get(end["Location"]))


def test_the_queue_marks_rows_others_are_on_and_j_k_skip_them_unless_shown(reviewer: User, bob: User) -> None:
    viewed, claimed, mine, free = (make_candidate() for _ in range(4))
    client_for(bob).get(url("candidate", viewed))
    claim(claimed, bob)
    client_for(reviewer).get(url("candidate", mine))
    page = text_of(client_for(reviewer).get(url("queue")))
    rows = dict(re.findall(r'<tr data-queue-row data-pk="(\d+)"[^>]*?( data-skip)?>', page))
    assert rows == {
        str(viewed.pk): " data-skip",
        str(claimed.pk): " data-skip",
        str(mine.pk): "",
        str(free.pk): "",
    }
    assert page.count('data-flag="viewing"') == 1 and "bob is reviewing" in page
    shown = text_of(client_for(reviewer).get(url("queue") + "?others=on"))
    assert re.findall(r"<tr data-queue-row [^>]*>", shown) and not re.findall(
        r"<tr data-queue-row [^>]*data-skip", shown
    )
    assert re.search(r'name="others"[^>]*checked', shown)
    assert f'href="{url("candidate", viewed)}?others=True"' in shown  # the choice travels


def test_markers_keep_the_queue_at_a_constant_query_count(reviewer: User, bob: User) -> None:
    client = client_for(reviewer)
    for n in range(10):
        viewing.viewing_mark(pk=make_candidate().pk, reviewer=bob if n % 2 else reviewer)
    small = _queries(client, url("queue"))
    for n in range(190):
        viewing.viewing_mark(pk=make_candidate().pk, reviewer=bob if n % 3 else reviewer)
    assert _queries(client, url("queue")) == small


# --- views: the page's renewal POST ----------------------------------------------------------------


def test_the_open_page_renews_its_marker_with_a_csrf_checked_bodiless_post(
    reviewer: User, bob: User, viewer: User
) -> None:
    candidate = make_candidate()
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    page = text_of(client.get(url("candidate", candidate)))
    assert f'data-viewing-url="{url("viewing", candidate)}"' in page
    assert client.post(url("viewing", candidate)).status_code == 403  # no CSRF token
    token = client.cookies["csrftoken"].value
    with time_machine.travel(timezone.now() + timedelta(seconds=100), tick=False):
        renewed = client.post(url("viewing", candidate), HTTP_X_CSRFTOKEN=token)
        assert renewed.status_code == 204 and renewed.content == b""
    with time_machine.travel(timezone.now() + timedelta(seconds=200), tick=False):
        assert holder(candidate) == "reviewer"  # renewed at +100 s: still live at +200 s
        bob_client = client_for(bob)
        taken = bob_client.post(url("viewing", candidate))
        assert taken.status_code == 409 and json.loads(taken.content) == {"viewer": "reviewer"}
    assert client.get(url("viewing", candidate)).status_code == 405
    assert client_for(viewer).post(url("viewing", candidate)).status_code == 403
    assert client_for(reviewer).post(url("viewing", 987654)).status_code == 404
    approve(candidate, bob)
    assert client_for(reviewer).post(url("viewing", candidate)).status_code == 410


# --- views: the collision page ---------------------------------------------------------------------


def test_the_collision_page_says_who_decided_how_and_why_and_offers_next(reviewer: User, bob: User) -> None:
    rejected, approved, revised, after = (make_candidate() for _ in range(4))
    bob_rejects = client_for(bob).post(
        url("reject", rejected), {"expected_version": 1, "reason": "Already covered by the runbook."}
    )
    assert bob_rejects.status_code == 302
    approve(approved, bob)
    revise(revised, bob, lesson="Reworded by bob.")
    client = client_for(reviewer)

    page = client.post(url("approve", rejected) + "?family=experience", {"expected_version": 1})
    assert page.status_code == 409
    body = text_of(page)
    assert re.search(r"<b data-decided-by>bob</b> <span data-decided-how>rejected</span> version 1", body)
    assert "Already covered by the runbook." in body
    assert f'href="{url("next", rejected)}?family=experience" data-key="n"' in body

    body = text_of(client.post(url("reject", approved), {"expected_version": 1, "reason": "No."}))
    assert re.search(r"<b data-decided-by>bob</b> <span data-decided-how>approved</span> version 1", body)
    assert "They gave no reason." in body

    body = text_of(client.post(url("approve", revised), {"expected_version": 1}))
    assert re.search(
        r"<b data-decided-by>bob</b> <span data-decided-how>revised</span> it to version 2", body
    )
    assert "Seen twice this week." in body  # the reason of bob's version
    # Next from the collision page lands on the next free item.
    assert client.get(url("next", revised))["Location"] == url("candidate", after)


# --- views: "Assign to me" from the queue keeps the page --------------------------------------------


def test_assign_to_me_in_the_background_answers_json_and_leaves_no_message(reviewer: User, bob: User) -> None:
    free, taken = make_candidate(), make_candidate()
    claim(taken, bob)
    client = client_for(reviewer)
    answer = client.post(url("claim", free) + "?back=queue", {"expected_claimant": 0, "async": "1"})
    assert answer.status_code == 200
    assert json.loads(answer.content) == {"message": f"Candidate #{free.pk} is assigned to you."}
    assert CandidateClaim.objects.get(candidate_id=free.pk).claimed_by == reviewer
    refused = client.post(url("claim", taken) + "?back=queue", {"expected_claimant": 0, "async": "1"})
    assert refused.status_code == 409 and "changed since you looked" in json.loads(refused.content)["message"]
    assert "assigned to you" not in text_of(client.get(url("queue")))  # no message was left behind


def test_assign_to_me_without_javascript_returns_to_the_same_page_and_row(reviewer: User) -> None:
    made = [make_candidate() for _ in range(3)]
    client = client_for(reviewer)
    page = text_of(client.get(url("queue") + f"?family=experience&after={made[0].pk}"))
    action = f'formaction="{url("claim", made[2])}?back=queue&family=experience&after={made[0].pk}"'
    assert action in page
    back = client.post(
        url("claim", made[2]) + f"?back=queue&family=experience&after={made[0].pk}", {"expected_claimant": 0}
    )
    assert back.status_code == 303
    assert back["Location"] == url("queue") + f"?family=experience&after={made[0].pk}#c{made[2].pk}"
