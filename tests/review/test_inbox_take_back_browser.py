"""Taking a decision back from the candidate page (issue 22), in Debian's Chromium: reopen a
rejected candidate, retire an approved Experience, revert it (restoring a retired head, or going
back to an earlier revision of an update). Each shows in recall (``/v1/context/prepare``, as an
agent gets it) and in the candidate page's audit ("Taken back or changed since": who, what, why).

Rows are written before the browser opens and checked after it closes (see ``chromium`` in
test_inbox_browser); nothing sleeps: every wait is on a condition.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from powercontext.core.models import Artifact
from review.models import Candidate, ReviewAction
from tests.review.conftest import approve, experience, make_candidate, make_update_candidate, reject
from tests.review.test_inbox_browser import SCOPE, _log_in, _prepare, chromium
from tests.review.test_inbox_layout_browser import _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _audit_entry(page: Any, action: str) -> Any:
    return page.locator(f"[data-review-actions] li[data-action='{action}']")


def test_reopen_a_rejection_from_its_page_proposes_it_again_and_the_audit_says_who_and_why(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    rejected = make_candidate(SCOPE, proposal=experience(lesson="Pin the axolotl cache to one region."))
    reject(rejected, reviewer, "Looked wrong at first.")
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.goto(f"/review/candidates/{rejected.pk}/")
        page.get_by_label("Reopen: why? (required)").fill("It was right after all.")
        page.get_by_role("button", name=re.compile("^Reopen")).click()
        expect(
            page.get_by_text(re.compile(rf"Reopened candidate #{rejected.pk} as candidate #\d+"))
        ).to_be_visible()
        entry = _audit_entry(page, "reopened")
        expect(entry).to_contain_text("Reopened by reviewer")
        expect(entry).to_contain_text("It was right after all.")
        _axe(page, "a reopened candidate's page")
        entry.get_by_role("link", name=re.compile(r"candidate #\d+")).click()
        expect(page.locator(".badge[data-status]").first).to_have_text(re.compile("pending"))
        recalled = _prepare(page, live_server.url, "axolotl cache region")

    assert "axolotl" not in recalled  # pending again, not recalled until approved
    action = ReviewAction.objects.get()
    assert action.action == "reopened" and action.reviewer == reviewer
    assert action.reopened_as is not None and action.reopened_as.status == "pending"
    assert Candidate.objects.get(pk=rejected.pk).status == "rejected"  # the rejection stays


def test_retire_then_revert_restores_it_each_visible_in_recall_and_in_the_audit(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    approved = approve(
        make_candidate(SCOPE, proposal=experience(lesson="Warm the capybara index before deploys.")), reviewer
    )
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        before = _prepare(page, live_server.url, "capybara index deploys")
        page.goto(f"/review/candidates/{approved.pk}/")
        page.get_by_label("Retire: why? (required)").fill("Superseded by the new deploy script.")
        page.get_by_role("button", name=re.compile("^Retire")).click()
        expect(page.get_by_text(re.compile("no longer recalled")).first).to_be_visible()
        expect(_audit_entry(page, "retired")).to_contain_text("Retired by reviewer")
        retired = _prepare(page, live_server.url, "capybara index deploys")

        page.get_by_label("Revert to revision").select_option("1")
        page.get_by_label("Why? (required)", exact=True).fill("The script was rolled back.")
        page.get_by_role("button", name=re.compile("^Revert")).click()
        expect(_audit_entry(page, "reverted")).to_contain_text("Reverted by reviewer")
        expect(_audit_entry(page, "reverted")).to_contain_text("The script was rolled back.")
        restored = _prepare(page, live_server.url, "capybara index deploys")

    assert "capybara" in before and "capybara" not in retired and "capybara" in restored
    assert approved.result_head is not None
    head = Artifact.objects.get(pk=approved.result_head.pk)
    assert head.state == "active" and head.current_revision == 2
    assert list(ReviewAction.objects.order_by("pk").values_list("action", "reviewer__username")) == [
        ("retired", "reviewer"),
        ("reverted", "reviewer"),
    ]


def test_revert_an_approved_update_serves_the_earlier_revision_again(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    base = approve(
        make_candidate(SCOPE, proposal=experience(lesson="Batch the okapi writes by ten.")), reviewer
    )
    update = approve(
        make_update_candidate(base, proposal=experience(lesson="Batch the okapi writes by a thousand.")),
        reviewer,
    )
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        before = _prepare(page, live_server.url, "okapi writes batch")
        page.goto(f"/review/candidates/{update.pk}/")
        page.get_by_label("Revert to revision").select_option("1")
        page.get_by_label("Why? (required)", exact=True).fill("A thousand overloads the queue.")
        page.get_by_role("button", name=re.compile("^Revert")).click()
        expect(_audit_entry(page, "reverted")).to_contain_text("revision 3 has revision 1's content")
        after = _prepare(page, live_server.url, "okapi writes batch")

    assert "by a thousand" in before and "by ten" not in before
    assert "by ten" in after and "by a thousand" not in after
    action = ReviewAction.objects.get()
    assert (action.action, action.revision, action.reverted_to, action.reason) == (
        "reverted",
        3,
        1,
        "A thousand overloads the queue.",
    )
