"""Issue 13 item 9 in Debian's Chromium: one confirmation rule. An approve or reject, by button or
key, is held behind an Undo toast for the Undo window; nothing reaches the server within it,
Undo restores the form, expiry posts it, moving on (a key that follows a link, a link) sends it
first, closing the page sends it as a beacon; no browser dialog ever opens.

Time is Playwright's fake clock (``page.clock``): the test advances it, it never sleeps. Rows are
written before the browser opens and checked after it closes (see ``chromium`` in
test_inbox_browser); inside the block the server's view comes from its own pages.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.signals import request_finished

from powercontext import settings as project_settings
from review import services
from review.models import Candidate, ReviewDecision
from tests.review.conftest import experience, make_candidate
from tests.review.test_inbox_browser import SCOPE, _log_in, _shot, chromium

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REASON = "Too vague to help anyone."
WINDOW_MS = 10_000
T0 = 1_800_000_000_000  # ms since the epoch, for the fake clock


@pytest.fixture(autouse=True)
def _undo_window(settings: Any) -> None:
    # tests/review/conftest.py turns the window off for the other browser tests.
    settings.POWERCONTEXT_REVIEW_UNDO_SECONDS = project_settings.POWERCONTEXT_REVIEW_UNDO_SECONDS
    assert settings.POWERCONTEXT_REVIEW_UNDO_SECONDS * 1000 == WINDOW_MS


def _candidates(n: int) -> list[Candidate]:
    return [
        make_candidate(SCOPE, proposal=experience(lesson=f"Lesson number {i} about batching."))
        for i in range(n)
    ]


def _status(*candidates: Candidate) -> list[str]:
    found = dict(Candidate.objects.filter(pk__in=[c.pk for c in candidates]).values_list("pk", "status"))
    return [found[c.pk] for c in candidates]


class Watch:
    """A logged-in page on the fake clock that records every browser dialog and every POST."""

    def __init__(self, browser: Any, base_url: str) -> None:
        self.page = _log_in(browser, base_url, "reviewer")
        self.dialogs: list[str] = []
        self.posts: list[str] = []
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.context.on(
            "request", lambda request: self.posts.append(request.url) if request.method == "POST" else None
        )
        # The fake clock stands still unless the test moves it.
        self.page.clock.install(time=T0)
        self.page.clock.pause_at(T0 + 1_000)

    def server_status(self, candidate: Candidate) -> str:
        """The status the server shows now (its own page, read with the page's cookies)."""
        html = self.page.request.get(f"/review/candidates/{candidate.pk}/").text()
        match = re.search(r'class="badge (\w+)" data-status', html)
        assert match is not None
        return match.group(1)


def test_approve_by_button_is_held_and_undo_sends_nothing(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    (candidate,) = _candidates(1)
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto(f"/review/candidates/{candidate.pk}/")
        toast = page.locator("#undo-toast")
        expect(toast).to_have_attribute("role", "status")
        page.get_by_role("button", name=re.compile("Approve version 1")).click()

        expect(toast).to_contain_text(f"Approved #{candidate.pk}")
        expect(toast.locator("[data-undo-left]")).to_have_text("10 s")
        undo = toast.get_by_role("button", name=re.compile("Undo"))
        expect(undo).to_be_visible()
        _shot(page, "undo-01-held")
        page.clock.run_for(WINDOW_MS - 1_000)
        expect(toast.locator("[data-undo-left]")).to_have_text("1 s")
        held_status = watch.server_status(candidate)
        posts_in_window = list(watch.posts)

        undo.focus()
        expect(undo).to_be_focused()
        page.keyboard.press("Enter")
        expect(toast).to_contain_text("Undone: nothing was sent.")
        expect(undo).to_be_hidden()
        # Long after the window, still nothing was sent; the form works again.
        page.clock.run_for(3 * WINDOW_MS)
        expect(toast.locator("[data-undo-body]")).to_be_hidden()  # the note fades
        expect(page.get_by_role("button", name=re.compile("Approve version 1"))).to_be_enabled()
        after_status = watch.server_status(candidate)
        posts_after = list(watch.posts)
        dialogs = watch.dialogs

    assert held_status == "pending"
    assert after_status == "pending"
    assert posts_in_window == posts_after == []
    assert dialogs == []
    assert _status(candidate) == ["pending"]
    assert not ReviewDecision.objects.filter(candidate=candidate).exists()


def test_the_a_key_is_held_and_expiry_decides(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    first, second = _candidates(2)
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto(f"/review/candidates/{first.pk}/")
        page.keyboard.press("a")
        toast = page.locator("#undo-toast")
        expect(toast).to_contain_text(f"Approved #{first.pk}")
        # While held, the actions are out of reach: a second a does nothing more.
        expect(page.locator("[data-undo-lock]")).to_have_js_property("inert", True)
        page.keyboard.press("a")
        page.clock.run_for(WINDOW_MS - 1)
        held_status = watch.server_status(first)
        posts_in_window = list(watch.posts)

        page.clock.run_for(1)
        # The form is posted as without JavaScript: the next candidate, with the outcome.
        expect(page.get_by_role("heading", name=f"Candidate #{second.pk}")).to_be_visible()
        expect(page.get_by_text(f"Approved candidate #{first.pk} (version 1)")).to_be_visible()
        posts = list(watch.posts)
        dialogs = watch.dialogs

    assert held_status == "pending"
    assert posts_in_window == []
    assert [re.sub(r"^.*/review/", "/review/", url) for url in posts] == [
        f"/review/candidates/{first.pk}/approve/"
    ]
    assert dialogs == []
    assert _status(first, second) == ["approved", "pending"]


def test_undo_by_key_restores_the_typed_reason_and_nothing_is_rejected(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    (candidate,) = _candidates(1)
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto(f"/review/candidates/{candidate.pk}/")
        page.keyboard.press("r")
        page.keyboard.type(REASON)
        page.keyboard.press("Control+Enter")
        toast = page.locator("#undo-toast")
        expect(toast).to_contain_text(f"Rejected #{candidate.pk}")
        reason = page.get_by_label("Reject reason")
        expect(page.locator("[data-undo-lock]")).to_have_js_property("inert", True)
        page.keyboard.press("r")  # would focus the reason; held, the form is out of reach
        expect(reason).not_to_be_focused()
        page.clock.run_for(5_000)
        page.keyboard.press("u")  # undoes; does not go back to the queue
        expect(toast).to_contain_text("Undone")
        expect(page).to_have_url(re.compile(rf"/review/candidates/{candidate.pk}/$"))
        expect(reason).to_have_value(REASON)
        expect(reason).to_be_editable()

        # Held again, then Escape undoes too.
        page.get_by_role("button", name="Reject", exact=True).click()
        expect(toast).to_contain_text(f"Rejected #{candidate.pk}")
        page.keyboard.press("Escape")
        expect(toast).to_contain_text("Undone")
        expect(reason).to_have_value(REASON)
        page.clock.run_for(3 * WINDOW_MS)
        status = watch.server_status(candidate)
        posts = list(watch.posts)
        dialogs = watch.dialogs

    assert status == "pending"
    assert posts == []
    assert dialogs == []
    assert _status(candidate) == ["pending"]


def test_moving_on_sends_the_held_decision_first(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    first, second, third = _candidates(3)
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto(f"/review/candidates/{first.pk}/")
        page.keyboard.press("a")
        expect(page.locator("#undo-toast")).to_contain_text(f"Approved #{first.pk}")
        # n follows the Next link: the approval is sent, then the next candidate opens and
        # shows the outcome the server kept for it.
        with page.expect_response(re.compile(rf"/candidates/{first.pk}/approve/")) as sent:
            page.keyboard.press("n")
        approve_status = sent.value.status
        expect(page.get_by_role("heading", name=f"Candidate #{second.pk}")).to_be_visible()
        expect(page.get_by_text(f"Approved candidate #{first.pk} (version 1)")).to_be_visible()

        # A reject held, then a click on a link (back to the queue).
        page.get_by_label("Reject reason").fill(REASON)
        page.get_by_role("button", name="Reject", exact=True).click()
        expect(page.locator("#undo-toast")).to_contain_text(f"Rejected #{second.pk}")
        page.get_by_role("link", name="← Pending queue").click()
        expect(page.get_by_role("heading", name="Pending candidates")).to_be_visible()
        expect(page.get_by_text(f"Rejected candidate #{second.pk} (version 1)")).to_be_visible()
        expect(page.locator("tr[data-queue-row]")).to_have_count(1)
        drafts = page.evaluate("() => Object.keys(localStorage).filter(k => k.includes('draft'))")
        dialogs = watch.dialogs

    assert approve_status == 204
    assert dialogs == []
    assert drafts == []
    assert _status(first, second, third) == ["approved", "rejected", "pending"]
    assert ReviewDecision.objects.get(candidate=second).reason == REASON


def test_a_conflict_after_the_window_is_reported_on_the_next_page(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    first, second = _candidates(2)
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto(f"/review/candidates/{first.pk}/")
        page.keyboard.press("a")
        expect(page.locator("#undo-toast")).to_contain_text(f"Approved #{first.pk}")
        # Meanwhile someone else (here: a plain form post with this session) rejects it.
        html = page.request.get(f"/review/candidates/{first.pk}/").text()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
        assert token is not None
        rejected = page.request.post(
            f"/review/candidates/{first.pk}/reject/",
            form={"csrfmiddlewaretoken": token.group(1), "expected_version": "1", "reason": REASON},
            headers={"Referer": f"{live_server.url}/review/candidates/{first.pk}/"},
            max_redirects=0,
        )
        assert rejected.status == 302
        with page.expect_response(re.compile(rf"/candidates/{first.pk}/approve/")) as sent:
            page.keyboard.press("n")
        status = sent.value.status
        expect(page.get_by_role("heading", name=f"Candidate #{second.pk}")).to_be_visible()
        message = page.locator(".msg.error")
        expect(message).to_contain_text(f"#{first.pk} was not approved")
        expect(message.get_by_role("link", name=f"#{first.pk}")).to_have_attribute(
            "href", re.compile(rf"/review/candidates/{first.pk}/")
        )
        dialogs = watch.dialogs

    assert status == 409
    assert dialogs == []
    assert _status(first, second) == ["rejected", "pending"]


def test_closing_the_page_sends_the_held_decision(
    reviewer: User, live_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.sync_api import expect

    # A beacon is sent by the browser process after the page is gone, so Playwright never sees
    # it: the test waits for the live server to have answered it instead.
    (candidate,) = _candidates(1)
    approved, answered = threading.Event(), threading.Event()
    real_approve = services.candidate_approve

    def approve(**kwargs: Any) -> Candidate:
        try:
            return real_approve(**kwargs)
        finally:
            approved.set()

    def finished(**kwargs: Any) -> None:
        if approved.is_set():
            answered.set()

    monkeypatch.setattr(services, "candidate_approve", approve)
    request_finished.connect(finished, weak=False)
    try:
        with chromium() as browser:
            watch = Watch(browser, live_server.url)
            page = watch.page
            context = page.context
            page.goto(f"/review/candidates/{candidate.pk}/")
            page.keyboard.press("a")
            expect(page.locator("#undo-toast")).to_contain_text(f"Approved #{candidate.pk}")
            posts_before_close = list(watch.posts)
            page.close(run_before_unload=True)
            assert answered.wait(timeout=30)
            # The next page the reviewer opens tells what happened.
            again = context.new_page()
            again.goto("/review/")
            expect(again.get_by_text(f"Approved candidate #{candidate.pk} (version 1)")).to_be_visible()
            dialogs = watch.dialogs
    finally:
        request_finished.disconnect(finished)

    assert posts_before_close == []
    assert dialogs == []
    assert _status(candidate) == ["approved"]


def test_a_bulk_approve_is_held_undone_with_the_selection_kept_then_sent_on_expiry(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    first, second, third = _candidates(3)
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto("/review/")
        boxes = page.locator("input[data-select]")
        boxes.nth(0).check()
        boxes.nth(1).check()
        page.get_by_role("button", name="Approve selected").click()
        toast = page.locator("#undo-toast")
        expect(toast).to_contain_text("Approved: 2 selected")
        expect(boxes.nth(2)).to_have_js_property("inert", True)
        page.clock.run_for(WINDOW_MS - 1)
        posts_in_window = list(watch.posts)

        page.keyboard.press("Escape")
        expect(toast).to_contain_text("Undone")
        expect(boxes.nth(0)).to_be_checked()
        expect(boxes.nth(1)).to_be_checked()
        expect(boxes.nth(2)).not_to_be_checked()
        page.clock.run_for(3 * WINDOW_MS)
        posts_after_undo = list(watch.posts)

        page.get_by_role("button", name="Approve selected").click()
        expect(toast).to_contain_text("Approved: 2 selected")
        page.clock.run_for(WINDOW_MS)
        expect(page.get_by_text("2 approved.")).to_be_visible()
        expect(page.locator("tr[data-queue-row]")).to_have_count(1)
        dialogs = watch.dialogs

    assert posts_in_window == posts_after_undo == []
    assert dialogs == []
    assert _status(first, second, third) == ["approved", "approved", "pending"]


def test_assign_to_me_in_the_queue_is_not_held_as_a_decision(reviewer: User, live_server: Any) -> None:
    """The queue's "Assign to me" is a button of the bulk form with its own formaction: it posts
    to the claim URL at once, never behind the toast and never to the bulk decision URL."""
    from playwright.sync_api import expect

    first, second = _candidates(2)
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto("/review/")
        row = page.locator(f"tr[data-queue-row][data-pk='{first.pk}']")
        row.get_by_role("button", name=re.compile("Assign to me")).click()
        expect(row.locator("[data-claimant]")).to_contain_text("you")
        toast_text = page.locator("#undo-toast").inner_text()
        posts = list(watch.posts)
        dialogs = watch.dialogs

    assert "Decided" not in toast_text
    assert [url.split("?")[0].removeprefix(live_server.url) for url in posts] == [
        f"/review/candidates/{first.pk}/claim/"
    ]
    assert dialogs == []
    assert _status(first, second) == ["pending", "pending"]
    claimed = Candidate.objects.select_related("claim__claimed_by").get(pk=first.pk)
    assert claimed.claim.claimed_by == reviewer
    assert not Candidate.objects.filter(pk=second.pk, claim__isnull=False).exists()
