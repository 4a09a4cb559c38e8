"""Issue 13 in Debian's Chromium: drafts survive an expired session and a refused form, form
errors never resubmit on reload, and bulk triage (select all matching, shift-click, canned
reasons, Ctrl+Enter, a conflict inside a bulk action). Rows are written before the browser
opens and checked after it closes (see ``chromium`` in test_inbox_browser)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from powercontext.core.models import ArtifactRevision
from review.models import Candidate, ReviewDecision
from tests.review.conftest import DUPLICATE_REASON, PASSWORD, experience, make_candidate, make_canned_reasons
from tests.review.test_inbox_browser import SCOPE, _log_in, _shot, chromium

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REASON = "Too vague to help anyone."


def _status(*candidates: Candidate) -> list[str]:
    found = dict(Candidate.objects.filter(pk__in=[c.pk for c in candidates]).values_list("pk", "status"))
    return [found[c.pk] for c in candidates]


def _log_in_here(page: Any) -> None:
    page.get_by_label("Username").fill("reviewer")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()


def test_an_expired_session_returns_to_the_candidate_with_the_typed_reason(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    candidate = make_candidate(SCOPE)
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.goto(f"/review/candidates/{candidate.pk}/")
        page.keyboard.press("r")
        page.keyboard.type(REASON)
        # The session expires; the CSRF cookie stays, as it does in a browser.
        kept = [c for c in page.context.cookies() if c["name"] != "sessionid"]
        page.context.clear_cookies()
        page.context.add_cookies(kept)
        page.get_by_role("button", name="Reject", exact=True).click()
        expect(page).to_have_url(re.compile(r"/accounts/login/\?next="))
        _log_in_here(page)
        expect(page).to_have_url(re.compile(rf"/review/candidates/{candidate.pk}/$"))
        expect(page.get_by_label("Reject reason")).to_have_value(REASON)
        page.get_by_role("button", name="Reject", exact=True).click()
        expect(page.get_by_text(f"Rejected candidate #{candidate.pk}")).to_be_visible()
        stored = page.evaluate("() => Object.keys(localStorage).filter(k => k.includes('draft'))")

    assert stored == []
    assert ReviewDecision.objects.get(candidate=candidate).reason == REASON


def test_a_stale_tab_after_logging_in_again_explains_and_keeps_the_draft(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    candidate = make_candidate(SCOPE)
    with chromium() as browser:
        stale = _log_in(browser, live_server.url, "reviewer")
        stale.goto(f"/review/candidates/{candidate.pk}/")
        stale.get_by_label("Reject reason").fill(REASON)
        other = stale.context.new_page()
        other.goto("/review/")
        other.get_by_role("button", name="Log out").click()
        _log_in_here(other)
        expect(other.get_by_role("heading", name="Pending candidates")).to_be_visible()
        stale.get_by_role("button", name="Reject", exact=True).click()
        expect(stale.get_by_role("heading", name="This form was not sent")).to_be_visible()
        expect(stale.locator("[data-draft-echo]")).to_have_text(REASON)
        expect(stale.get_by_text("CSRF verification failed")).to_have_count(0)
        _shot(stale, "11-form-expired")
        stale.get_by_role("link", name=f"Back to candidate #{candidate.pk}").click()
        expect(stale.get_by_label("Reject reason")).to_have_value(REASON)
        stale.get_by_role("button", name="Reject", exact=True).click()
        expect(stale.get_by_text(f"Rejected candidate #{candidate.pk}")).to_be_visible()

    assert ReviewDecision.objects.get(candidate=candidate).reason == REASON


def test_a_form_error_lands_on_the_candidate_url_and_a_reload_sends_nothing(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    candidate = make_candidate(SCOPE)
    posts: list[str] = []
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.goto(f"/review/candidates/{candidate.pk}/")
        page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
        page.get_by_label("Reject reason").fill("   ")
        page.get_by_role("button", name="Reject", exact=True).click()
        expect(page.get_by_text("A reason is required to reject.")).to_be_visible()
        expect(page).to_have_url(re.compile(rf"/review/candidates/{candidate.pk}/$"))
        page.reload()
        expect(page.get_by_role("heading", name=f"Candidate #{candidate.pk}")).to_be_visible()
        expect(page.get_by_text("A reason is required to reject.")).to_have_count(0)

    assert len(posts) == 1
    assert _status(candidate) == ["pending"]


def test_bulk_approve_all_20_matching_in_one_action(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    matching = [
        make_candidate(SCOPE, proposal=experience(lesson=f"Retry flaky uploads ({n}).")) for n in range(20)
    ]
    others = [make_candidate(SCOPE, proposal=experience(lesson="Something else.")) for _ in range(2)]
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.get_by_label("Text").fill("flaky uploads")
        page.get_by_label("Text").press("Enter")
        expect(page.locator('[data-count="matching"]')).to_have_text("20")
        page.get_by_role("button", name="Select all 20 matching").click()
        expect(page.locator("[data-selected-count]")).to_have_text("all 20 matching selected")
        page.get_by_role("button", name="Approve selected").click()
        expect(page.get_by_text("20 approved.")).to_be_visible()
        expect(page.get_by_text("Nothing to review here.")).to_be_visible()

    assert _status(*matching) == ["approved"] * 20
    assert _status(*others) == ["pending"] * 2


def test_bulk_reject_with_a_canned_reason_by_shift_click_and_keys(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    make_canned_reasons()
    rows = [make_candidate(SCOPE) for _ in range(5)]
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        boxes = page.locator("input[data-select]")
        boxes.nth(0).click()
        boxes.nth(2).click(modifiers=["Shift"])
        page.keyboard.press("j")  # a click moves the cursor too: from the third row to the fourth
        page.keyboard.press("x")
        expect(page.locator("[data-selected-count]")).to_have_text("4 selected")
        page.keyboard.press("1")
        reason = page.locator("#bulk-reason")
        expect(reason).to_have_value(DUPLICATE_REASON)
        expect(reason).to_be_focused()
        _shot(page, "12-bulk-reject")
        page.keyboard.press("Control+Enter")
        expect(page.get_by_text("4 rejected.")).to_be_visible()

    assert _status(*rows) == ["rejected"] * 4 + ["pending"]
    assert set(ReviewDecision.objects.values_list("reason", flat=True)) == {
        "Duplicate of an existing Experience."
    }


def test_a_conflict_inside_a_bulk_action_is_reported_with_a_link(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    rows = [make_candidate(SCOPE) for _ in range(3)]
    with chromium() as browser:
        queue = _log_in(browser, live_server.url, "reviewer")
        queue.locator("[data-select-page]").check()
        # Another tab revises the second candidate while the queue shows version 1.
        other = queue.context.new_page()
        other.goto(f"/review/candidates/{rows[1].pk}/revise/")
        other.get_by_label("Lesson").fill("A sharper lesson written meanwhile.")
        other.get_by_role("button", name="Save version 2").click()
        expect(other.get_by_text(f"Saved version 2 of candidate #{rows[1].pk}")).to_be_visible()
        queue.get_by_role("button", name="Approve selected").click()
        expect(queue.get_by_text("2 approved, 1 conflict")).to_be_visible()
        _shot(queue, "13-bulk-conflict")
        queue.get_by_role("link", name=f"#{rows[1].pk}").click()
        expect(queue.get_by_role("heading", name=f"Candidate #{rows[1].pk}")).to_be_visible()
        expect(queue.locator("[data-version]")).to_have_text("2")

    assert _status(*rows) == ["approved", "pending", "approved"]


def test_rebase_a_stale_update_then_approve(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    from tests.review.conftest import approve, make_update_candidate

    # Two updates of one revision touching different fields: the rebase merges them (a conflict
    # on the same field stops instead: tests/review/test_inbox_views.py).
    original = experience(lesson="Deploy on Tuesdays.")
    base = approve(make_candidate(SCOPE, proposal=original), reviewer)
    first = make_update_candidate(base, {**original, "lesson": "Deploy on Tuesdays and Wednesdays."})
    stale = make_update_candidate(
        base, {**original, "outcome": "Rolled out in an hour, rollback plan ready."}
    )
    approve(first, reviewer)
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.goto(f"/review/candidates/{stale.pk}/")
        expect(page.locator("[data-stale]")).to_contain_text("now at revision 2")
        expect(page.get_by_role("button", name=re.compile("Approve version 1"))).to_be_disabled()
        _shot(page, "14-stale-update")
        page.get_by_role("button", name="Rebase onto revision 2").click()
        expect(
            page.get_by_text(f"Rebased candidate #{stale.pk} onto revision 2 as version 2")
        ).to_be_visible()
        expect(page.locator("[data-stale]")).to_have_count(0)
        expect(page.locator("table.diff del").first).to_be_visible()
        page.get_by_role("button", name=re.compile("Approve version 2")).click()
        expect(page.get_by_text(f"Approved candidate #{stale.pk} (version 2)")).to_be_visible()

    stale.refresh_from_db()
    assert (stale.status, stale.result_revision) == (Candidate.Status.APPROVED, 3)
    merged = ArtifactRevision.objects.get(head=stale.result_head, revision=3).content
    # Revision 2's lesson is kept; the stale update's outcome is added.
    assert merged["lesson"] == "Deploy on Tuesdays and Wednesdays."
    assert merged["outcome"] == "Rolled out in an hour, rollback plan ready."
