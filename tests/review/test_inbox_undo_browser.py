"""One Undo model (issue 22) in Debian's Chromium: every decision (button, a, r + Ctrl+Enter,
"a then n", "Reject as duplicate", bulk) is posted at once, never held behind a timer, and the
page the reviewer lands on offers Undo (the button, u or Esc), which takes the decision back:
an approval leaves recall and its content is pending again; a rejection is reopened. Bulk
approve leaves out a bidi item unless it is included. No browser dialog ever opens.

"At once" is asserted by waiting for the decision's POST with a short bound (2 s, a fifth of the
old 10 s hold); nothing sleeps. Rows are written before the browser opens and checked after it
closes (see ``chromium`` in test_inbox_browser); inside the block the server's view comes from
its own pages.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from powercontext.core.models import Artifact
from review.models import Candidate, ReviewAction, ReviewDecision
from tests.review.conftest import experience, make_candidate
from tests.review.test_inbox_browser import SCOPE, _log_in, _prepare, _shot, chromium
from tests.review.test_inbox_layout_browser import _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REASON = "Too vague to help anyone."
AT_ONCE_MS = 2_000
BIDI = "\u202e"


def _candidates(n: int, word: str = "batching") -> list[Candidate]:
    return [
        make_candidate(SCOPE, proposal=experience(lesson=f"Lesson number {i} about {word}."))
        for i in range(n)
    ]


def _status(*candidates: Candidate) -> list[str]:
    found = dict(Candidate.objects.filter(pk__in=[c.pk for c in candidates]).values_list("pk", "status"))
    return [found[c.pk] for c in candidates]


class Watch:
    """A logged-in page that records every browser dialog and every POST."""

    def __init__(self, browser: Any, base_url: str) -> None:
        self.page = _log_in(browser, base_url, "reviewer")
        self.dialogs: list[str] = []
        self.posts: list[str] = []
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.context.on(
            "request",
            lambda request: (
                self.posts.append(re.sub(r"^https?://[^/]+", "", request.url.split("?")[0]))
                if request.method == "POST"
                else None
            ),
        )

    def posted_at_once(self, path: str, act: Any) -> None:
        """``act()`` sends a POST to ``path`` at once (within ``AT_ONCE_MS``), not after a hold."""
        with self.page.expect_request(
            lambda r: r.method == "POST" and r.url.split("?")[0].endswith(path), timeout=AT_ONCE_MS
        ):
            act()


def test_approve_then_next_page_undo_puts_it_back_pending_and_out_of_recall(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    first, second = _candidates(1, "the wombat cache")[0], _candidates(1)[0]
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto(f"/review/candidates/{first.pk}/")
        watch.posted_at_once(
            f"/review/candidates/{first.pk}/approve/",
            lambda: page.get_by_role("button", name=re.compile("Approve version 1")).click(),
        )
        expect(page.get_by_role("heading", name=f"Candidate #{second.pk}")).to_be_visible()
        toast = page.locator("#undo-toast")
        expect(toast).to_contain_text(f"Approved #{first.pk}.")
        expect(toast).to_have_attribute("role", "status")
        recalled_before = _prepare(page, live_server.url, "wombat cache")
        _shot(page, "undo-01-offered-on-the-next-page")
        _axe(page, "candidate page with the Undo toast")
        page.set_viewport_size({"width": 390, "height": 844})
        expect(toast.get_by_role("button", name=re.compile("^Undo"))).to_be_in_viewport()
        box = toast.bounding_box()

        watch.posted_at_once(
            "/review/undo/", lambda: toast.get_by_role("button", name=re.compile("^Undo")).click()
        )
        expect(
            page.get_by_text(f"Undone: your decision on candidate #{first.pk} is taken back")
        ).to_be_visible()
        heading = page.get_by_role("heading", name=re.compile(r"Candidate #\d+"))
        expect(heading).to_be_visible()
        expect(page.locator(".badge[data-status]").first).to_have_text(re.compile("pending"))
        landed = int(re.findall(r"\d+", heading.inner_text())[0])
        recalled_after = _prepare(page, live_server.url, "wombat cache")
        dialogs = watch.dialogs

    assert "wombat cache" in recalled_before
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390  # the toast fits at 390 px
    assert "wombat cache" not in recalled_after
    copy = Candidate.objects.get(pk=landed)
    assert copy.status == "pending" and copy.latest is not None
    assert copy.latest.proposal["lesson"] == "Lesson number 0 about the wombat cache."
    decided = Candidate.objects.get(pk=first.pk)
    assert decided.status == "approved" and ReviewDecision.objects.get(candidate=first).decision == "approved"
    assert decided.result_head is not None
    assert Artifact.objects.get(pk=decided.result_head.pk).state == "retired"
    assert sorted(ReviewAction.objects.values_list("action", flat=True)) == ["reopened", "retired"]
    assert _status(second) == ["pending"]
    assert dialogs == []


def test_a_then_n_sends_the_approval_and_lands_on_the_next_candidate_with_undo(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    first, second, third = _candidates(3)
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto(f"/review/candidates/{first.pk}/")

        def a_then_n() -> None:
            page.keyboard.press("a")
            page.keyboard.press("n")  # while the approval is on its way: ignored, never cancels it

        watch.posted_at_once(f"/review/candidates/{first.pk}/approve/", a_then_n)
        expect(page.get_by_role("heading", name=f"Candidate #{second.pk}")).to_be_visible()
        expect(page.locator("#undo-toast")).to_contain_text(f"Approved #{first.pk}.")
        # z undoes; u keeps its one meaning, back to the queue.
        page.keyboard.press("z")
        expect(page.get_by_text(f"Undone: your decision on candidate #{first.pk}")).to_be_visible()
        expect(page.locator("#undo-toast")).to_have_count(0)
        page.keyboard.press("u")
        expect(page.get_by_role("heading", name="Pending candidates")).to_be_visible()
        posts = list(watch.posts)
        dialogs = watch.dialogs

    assert posts == [f"/review/candidates/{first.pk}/approve/", "/review/undo/"]
    assert _status(first, second, third) == ["approved", "pending", "pending"]
    assert Candidate.objects.filter(status="pending").count() == 3
    assert dialogs == []


def test_reject_by_keys_commits_at_once_and_z_undoes_it_by_reopening(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    first, second = _candidates(2)
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto(f"/review/candidates/{first.pk}/")
        page.keyboard.press("r")
        page.keyboard.type(REASON)
        watch.posted_at_once(
            f"/review/candidates/{first.pk}/reject/", lambda: page.keyboard.press("Control+Enter")
        )
        expect(page.get_by_role("heading", name=f"Candidate #{second.pk}")).to_be_visible()
        expect(page.locator("#undo-toast")).to_contain_text(f"Rejected #{first.pk}.")
        # z typed in a text field is text; outside it, z undoes.
        page.get_by_label("Reject reason").focus()
        page.keyboard.press("z")
        expect(page.locator("#undo-toast")).to_be_visible()
        page.keyboard.press("Escape")  # leaves the field
        expect(page.locator("#undo-toast")).to_be_visible()
        page.keyboard.press("Escape")  # closes the offer
        expect(page.locator("#undo-toast")).to_be_hidden()
        page.goto(f"/review/candidates/{first.pk}/")  # the decided page still offers Undo
        page.get_by_role("button", name=re.compile("^Undo your rejection")).click()
        expect(page.get_by_text(f"Undone: your decision on candidate #{first.pk}")).to_be_visible()
        dialogs = watch.dialogs

    assert _status(first, second) == ["rejected", "pending"]
    assert ReviewDecision.objects.get(candidate=first).reason == REASON
    (action,) = ReviewAction.objects.all()
    assert action.action == "reopened" and action.reopened_as is not None
    assert action.reopened_as.status == "pending"
    assert dialogs == []


def test_reject_as_duplicate_then_undo(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    lesson = "Pin the dependency resolver before chasing a flaky build on the ci runners."
    original = make_candidate(SCOPE, proposal=experience(lesson=lesson))
    copy = make_candidate(SCOPE, proposal=experience(lesson=lesson))
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto(f"/review/candidates/{copy.pk}/")
        button = page.get_by_role("button", name=f"Reject as duplicate of #{original.pk}")
        watch.posted_at_once(f"/review/candidates/{copy.pk}/reject/", button.click)
        toast = page.locator("#undo-toast")
        expect(toast).to_contain_text(f"Rejected #{copy.pk}.")
        toast.get_by_role("button", name=re.compile("^Undo")).click()
        expect(page.get_by_text(f"Undone: your decision on candidate #{copy.pk}")).to_be_visible()
        expect(page.locator(".badge[data-status]").first).to_have_text(re.compile("pending"))
        dialogs = watch.dialogs

    assert _status(original, copy) == ["pending", "rejected"]
    assert ReviewDecision.objects.get(candidate=copy).reason.startswith(
        f"Duplicate of pending candidate #{original.pk}"
    )
    reopened = ReviewAction.objects.get().reopened_as
    assert reopened is not None and reopened.status == "pending"
    assert dialogs == []


def test_bulk_approve_leaves_out_a_bidi_item_and_one_undo_takes_the_batch_back(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    first, second = _candidates(2)
    bidi = make_candidate(SCOPE, proposal=experience(lesson=f"Deploy on {BIDI}syadirF freely."))
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto("/review/")
        page.get_by_role("checkbox", name="Select every row on this page").check()
        watch.posted_at_once("/review/bulk/", page.get_by_role("button", name="Approve selected").click)
        expect(page.get_by_text("2 approved. Left out 1 flagged item:")).to_be_visible()
        expect(page.locator(".msg", has_text="Left out")).to_contain_text(
            f"#{bidi.pk} (hidden characters or text)"
        )
        expect(page.locator("tr[data-queue-row]")).to_have_count(1)
        toast = page.locator("#undo-toast")
        expect(toast).to_contain_text("Approved 2 candidates.")
        _shot(page, "undo-02-bulk-left-out-a-bidi-item")
        watch.posted_at_once("/review/undo/", lambda: page.keyboard.press("z"))
        expect(page.get_by_text("Undone: 2 of 2 decisions")).to_be_visible()
        expect(page.locator("tr[data-queue-row]")).to_have_count(3)
        dialogs = watch.dialogs

    assert _status(first, second, bidi) == ["approved", "approved", "pending"]
    assert Candidate.objects.filter(status="pending").count() == 3
    assert set(Artifact.objects.values_list("state", flat=True)) == {"retired"}
    assert dialogs == []


def test_bulk_approve_includes_a_bidi_item_when_ticked(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    bidi = make_candidate(SCOPE, proposal=experience(lesson=f"Deploy on {BIDI}syadirF freely."))
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto("/review/")
        page.get_by_role("checkbox", name=re.compile(f"Select #{bidi.pk}")).check()
        page.get_by_label(re.compile("Include flagged items")).check()
        page.get_by_role("button", name="Approve selected").click()
        expect(page.get_by_text("1 approved.")).to_be_visible()

    assert _status(bidi) == ["approved"]


def test_assign_to_me_in_the_queue_is_not_a_decision(reviewer: User, live_server: Any) -> None:
    """The queue's "Assign to me" is a button of the bulk form with its own formaction: it posts
    to the claim URL only, and offers no Undo."""
    from playwright.sync_api import expect

    first, second = _candidates(2)
    with chromium() as browser:
        watch = Watch(browser, live_server.url)
        page = watch.page
        page.goto("/review/")
        row = page.locator(f"tr[data-queue-row][data-pk='{first.pk}']")
        row.get_by_role("button", name=re.compile("Assign to me")).click()
        expect(row.locator("[data-claimant]")).to_contain_text("you")
        toasts = page.locator("#undo-toast").count()
        posts = list(watch.posts)
        dialogs = watch.dialogs

    assert toasts == 0
    assert posts == [f"/review/candidates/{first.pk}/claim/"]
    assert dialogs == []
    assert _status(first, second) == ["pending", "pending"]
