"""Reviewer throughput in Debian's Chromium: keys, clicks and wall time to approve 10 candidates
and reject 20 near-duplicates (the measurement the README reports)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth.models import User

from review.models import Candidate
from tests.review.conftest import DUPLICATE_REASON, experience, make_candidate, make_canned_reasons
from tests.review.test_inbox_browser import SCOPE, _log_in, chromium

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DUPLICATE = "Pin the dependency resolver before chasing a flaky build ({n})."


@dataclass
class Counter:
    """Counts what a reviewer does: key presses (each typed character is one) and clicks."""

    page: Any
    keys: int = 0
    clicks: int = 0
    log: list[str] = field(default_factory=list)

    def press(self, key: str) -> None:
        self.keys += 1
        self.page.keyboard.press(key)

    def type(self, text: str) -> None:
        self.keys += len(text)
        self.page.keyboard.type(text)

    def click(self, locator: Any, **kwargs: Any) -> None:
        self.clicks += 1
        locator.click(**kwargs)


def _seed() -> tuple[list[Candidate], list[Candidate]]:
    make_canned_reasons()
    good = [
        make_candidate(SCOPE, proposal=experience(lesson=f"A distinct useful lesson {n}.")) for n in range(10)
    ]
    dups = [make_candidate(SCOPE, proposal=experience(lesson=DUPLICATE.format(n=n))) for n in range(20)]
    return good, dups


def test_one_candidate_at_a_time(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    good, dups = _seed()
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.on("dialog", lambda dialog: dialog.accept())
        counter = Counter(page)
        started = time.perf_counter()
        counter.press("j")
        counter.press("o")
        for candidate in good:
            expect(page.get_by_role("heading", name=f"Candidate #{candidate.pk}")).to_be_visible()
            counter.press("a")
        approve_time = time.perf_counter() - started
        approve = (counter.keys, counter.clicks)
        started = time.perf_counter()
        for candidate in dups:
            expect(page.get_by_role("heading", name=f"Candidate #{candidate.pk}")).to_be_visible()
            counter.press("r")
            counter.type(DUPLICATE_REASON)
            counter.click(page.get_by_role("button", name="Reject", exact=True))
        expect(page.get_by_text("Nothing to review here.")).to_be_visible()
        reject_time = time.perf_counter() - started
        reject = (counter.keys - approve[0], counter.clicks - approve[1])
    print(
        f"\nTHROUGHPUT one-by-one approve10 keys,clicks={approve} {approve_time:.2f}s; reject20 keys,clicks={reject} {reject_time:.2f}s"
    )
    assert Candidate.objects.filter(status="approved").count() == 10
    assert Candidate.objects.filter(status="rejected").count() == 20


def test_in_bulk(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    good, dups = _seed()
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        counter = Counter(page)
        boxes = page.locator("input[data-select]")
        started = time.perf_counter()
        counter.click(boxes.nth(0))
        counter.click(boxes.nth(9), modifiers=["Shift"])
        counter.click(page.get_by_role("button", name="Approve selected"))
        expect(page.get_by_text("10 approved.")).to_be_visible()
        approve_time = time.perf_counter() - started
        approve = (counter.keys, counter.clicks)
        started = time.perf_counter()
        counter.press("/")
        counter.type("dependency resolver")
        counter.press("Enter")
        expect(page).to_have_url(re.compile(r"q=dependency"))
        counter.click(page.get_by_role("button", name="Select all 20 matching"))
        counter.press("1")
        counter.click(page.get_by_role("button", name="Reject selected"))
        expect(page.get_by_text("20 rejected.")).to_be_visible()
        reject_time = time.perf_counter() - started
        reject = (counter.keys - approve[0], counter.clicks - approve[1])
    print(
        f"\nTHROUGHPUT bulk approve10 keys,clicks={approve} {approve_time:.2f}s; "
        f"reject20 keys,clicks={reject} {reject_time:.2f}s"
    )
    assert approve == (0, 3)
    assert reject[1] == 2 and reject[0] <= 25
    assert Candidate.objects.filter(status="approved").count() == 10
    assert Candidate.objects.filter(status="rejected").count() == 20
