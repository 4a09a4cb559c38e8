"""Issue 22, "Sharing a queue", in Debian's Chromium: two reviewers (two browser contexts) work the
default queue side by side, both deciding at the same moment, for 20 decisions, and never land on
the same candidate (no collision page, every decision recorded once); "Assign to me" in the queue
keeps the bulk selection and the scroll position. Rows are written before the browser opens and
checked after it closes (see ``chromium`` in test_inbox_browser). No sleeps: every step waits on
a condition."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from review.models import Candidate, CandidateClaim, ReviewDecision
from tests.review.conftest import experience, make_candidate, make_user
from tests.review.test_inbox_browser import SCOPE, _log_in, _shot, chromium

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DECISIONS = 20


def _on(page: Any) -> int:
    found = re.search(r"/review/candidates/(\d+)/", page.url)
    assert found, page.url
    return int(found.group(1))


def test_two_reviewers_work_the_default_queue_for_20_decisions_without_a_collision(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    make_user("bob", reviewer=True)
    made = [
        make_candidate(SCOPE, proposal=experience(lesson=f"Shared-queue lesson number {n}."))
        for n in range(DECISIONS + 4)
    ]
    refused: list[str] = []

    with chromium() as browser:
        ana = _log_in(browser, live_server.url, "reviewer")
        bob = _log_in(browser, live_server.url, "bob")
        for page in (ana, bob):
            page.on(
                "response",
                lambda r: refused.append(r.url) if r.status >= 400 and "/review/" in r.url else None,
            )

        # Ana opens the first candidate from the queue (j, o): opening it marks it hers.
        ana.keyboard.press("j")
        ana.keyboard.press("o")
        expect(ana.locator("[data-viewing]")).to_contain_text("You are reviewing this")
        first = _on(ana)
        # Bob's queue shows it as Ana's, and j passes it by.
        bob.goto("/review/")
        ana_row = bob.locator(f'tr[data-queue-row][data-pk="{first}"]')
        expect(ana_row.locator('[data-flag="viewing"]')).to_have_text("reviewer is reviewing")
        expect(ana_row).to_have_attribute("data-skip", "")
        bob.keyboard.press("j")
        expect(bob.locator("tr[data-queue-row].selected")).not_to_have_attribute("data-pk", str(first))
        _shot(bob, "40-shared-queue-bob")
        bob.keyboard.press("o")
        expect(bob.locator("[data-viewing]")).to_contain_text("You are reviewing this")

        # Both approve at the same moment (a), again and again: the page after each decision is
        # the next candidate nobody else is on.
        landed: list[tuple[int, int]] = []
        while 2 * len(landed) < DECISIONS:
            on_ana, on_bob = _on(ana), _on(bob)
            assert on_ana != on_bob, landed
            landed.append((on_ana, on_bob))
            ana.keyboard.press("a")
            bob.keyboard.press("a")
            expect(ana.locator(".messages")).to_contain_text(f"Approved candidate #{on_ana} ")
            expect(bob.locator(".messages")).to_contain_text(f"Approved candidate #{on_bob} ")
            for page in (ana, bob):
                expect(page.get_by_role("heading", name=re.compile("already|changed"))).to_have_count(0)
                expect(page).to_have_url(re.compile(r"/review/candidates/\d+/$"))
        assert _on(ana) != _on(bob)
        _shot(ana, "41-shared-queue-ana-after-20")

    decided = [pk for pair in landed for pk in pair]
    assert len(decided) == len(set(decided)) == DECISIONS
    decisions = ReviewDecision.objects.filter(candidate_id__in=[c.pk for c in made])
    assert decisions.count() == DECISIONS
    assert sorted(d.candidate_id for d in decisions) == sorted(decided)  # each recorded once
    by = {d.candidate_id: d.reviewer.username for d in decisions}
    assert [by[a] for a, _ in landed] == ["reviewer"] * (DECISIONS // 2)
    assert [by[b] for _, b in landed] == ["bob"] * (DECISIONS // 2)
    assert refused == []  # no 409 collision page, no other refusal


def test_assign_to_me_in_the_queue_keeps_the_selection_and_the_scroll(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    made = [make_candidate(SCOPE, proposal=experience(lesson=f"Scrolled lesson {n}.")) for n in range(40)]
    low = made[-2]

    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.locator(f'input[data-select][value="{made[1].pk}:1"]').check()
        expect(page.locator("[data-selected-count]")).to_have_text("1 selected")
        row = page.locator(f'tr[data-queue-row][data-pk="{low.pk}"]')
        row.scroll_into_view_if_needed()
        page.wait_for_function("() => window.scrollY > 300")
        scrolled = page.evaluate("() => window.scrollY")
        where = row.bounding_box()
        url = page.url
        row.get_by_role("button", name=f"Assign to me: candidate #{low.pk}").click()
        expect(row.locator("td[data-claimant]")).to_have_text("you")
        expect(page.locator("[data-claim-status]")).to_have_text(f"Candidate #{low.pk} is assigned to you.")
        assert page.url == url
        # The page did not move (within 2 px: the row's button became a word).
        assert abs(page.evaluate("() => window.scrollY") - scrolled) <= 2
        moved = row.bounding_box()
        assert where is not None and moved is not None and abs(moved["y"] - where["y"]) <= 2
        expect(page.locator(f'input[data-select][value="{made[1].pk}:1"]')).to_be_checked()
        expect(page.locator("[data-selected-count]")).to_have_text("1 selected")
        _shot(page, "42-assign-keeps-selection")

    assert CandidateClaim.objects.get(candidate_id=low.pk).claimed_by == reviewer
    assert Candidate.objects.filter(status=Candidate.Status.PENDING).count() == 40
