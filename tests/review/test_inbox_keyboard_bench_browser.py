"""Measured (issue 22, "Must show"): 50 candidates by the keyboard path in Debian's Chromium, with
no waiting: j, o, then on each candidate a (approve) or 1 + Ctrl+Enter (reject with the first
canned reason), every fifth one rejected; then z undoes the last decision on the page it landed
on and a approves the re-proposed candidate. Prints keys pressed, clicks and seconds:

    POWERCONTEXT_TEST_CHROMIUM=/usr/bin/chromium DATABASE_URL=postgres://... \\
      .venv/bin/python -m pytest tests/review/test_inbox_keyboard_bench_browser.py -q -s

Each key is followed by waiting for the page it leads to (a condition, never a sleep): the
seconds are the server's and the browser's, with no hold anywhere (the old model held each
decision 10 s: 500 s for 50).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth.models import User

from review.models import Candidate, ReviewDecision
from tests.review.conftest import DUPLICATE_REASON, experience, make_candidate, make_canned_reasons
from tests.review.test_inbox_browser import SCOPE, _log_in, chromium
from tests.review.test_inbox_throughput_browser import Counter

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

COUNT = 50
OLD_HOLD_SECONDS = 10


def test_fifty_candidates_by_the_keyboard_with_no_waiting(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    make_canned_reasons()
    candidates = [
        make_candidate(SCOPE, proposal=experience(lesson=f"A distinct keyboard lesson number {n}."))
        for n in range(COUNT)
    ]
    rejected = {c.pk for i, c in enumerate(candidates) if i % 5 == 4}
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        counter = Counter(page)
        started = time.perf_counter()
        for key in ("j", "o"):  # the cursor to the first row, open it
            counter.press(key)
        for candidate in candidates:
            heading = page.get_by_role("heading", name=f"Candidate #{candidate.pk}")
            expect(heading).to_be_visible()
            for key in ("1", "Control+Enter") if candidate.pk in rejected else ("a",):
                counter.press(key)
        expect(page.get_by_text("Nothing to review here.")).to_be_visible()
        expect(page.locator("#undo-toast")).to_contain_text(f"Rejected #{candidates[-1].pk}.")
        decided_seconds = time.perf_counter() - started
        counter.press("z")
        expect(page.get_by_text(f"Undone: your decision on candidate #{candidates[-1].pk}")).to_be_visible()
        counter.press("a")
        expect(page.get_by_text("Nothing to review here.")).to_be_visible()
        seconds = time.perf_counter() - started
    print(
        f"\nKEYBOARD {COUNT} candidates ({COUNT - len(rejected)} approved, {len(rejected)} rejected), "
        f"then one Undo and a re-approval: keys={counter.keys} clicks={counter.clicks} "
        f"seconds={seconds:.1f} (the {COUNT} decisions: {decided_seconds:.1f} s, "
        f"{decided_seconds / COUNT:.2f} s each)"
    )
    assert (counter.keys, counter.clicks) == (2 + (COUNT - len(rejected)) + 2 * len(rejected) + 2, 0)
    assert seconds < COUNT * OLD_HOLD_SECONDS / 5  # far below what one held decision per item took
    statuses = dict(Candidate.objects.filter(pk__in=[c.pk for c in candidates]).values_list("pk", "status"))
    assert [statuses[c.pk] for c in candidates] == [
        "rejected" if c.pk in rejected else "approved" for c in candidates
    ]
    copy = Candidate.objects.exclude(pk__in=[c.pk for c in candidates]).get()
    assert copy.status == "approved"
    assert dialogs == []
    reasons = set(ReviewDecision.objects.filter(candidate__pk__in=rejected).values_list("reason", flat=True))
    assert reasons == {DUPLICATE_REASON}  # the first canned reason, inserted by key 1
