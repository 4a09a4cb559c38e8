"""Issue 22 in Debian's Chromium: the queue flags only the later copy of a near-duplicate pair
(naming the earlier), filters by the flag and selects the flagged rows; a rebase that conflicts
on one field goes through the conflict editor, and revision 2's sentence stays unless the
reviewer drops it, which the diff then shows as removed. Rows are written before the browser
opens and checked after it closes (see ``chromium`` in test_inbox_browser)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from powercontext.core.models import ArtifactRevision
from review.models import Candidate
from tests.review.conftest import approve, experience, make_candidate, make_update_candidate
from tests.review.test_inbox_browser import SCOPE, _log_in, _shot, chromium
from tests.review.test_inbox_layout_browser import _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEMPLATE = {
    "situation": "During the weekly production deploy the on-call engineer followed the release runbook.",
    "action": "Paged the owning team, opened an incident channel and rolled the release back.",
    "outcome": "Service was restored within the incident budget and the postmortem was filed.",
}
LESSONS = [
    "Deploy configuration before the code that reads it.",
    "Run schema migrations separately from the code release.",
    "Stream exports instead of loading whole batches in memory.",
    "Version cache keys and warm the new keys before switching.",
]


def test_the_queue_flags_only_the_later_copy_filters_and_selects_it(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    rows = [make_candidate(SCOPE, proposal={**TEMPLATE, "lesson": lesson}) for lesson in LESSONS]
    copy = make_candidate(
        SCOPE, proposal={**TEMPLATE, "lesson": "Ship configuration before the code that depends on it."}
    )
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.goto("/review/")
        flags = page.locator('[data-flag="near-duplicate"]')
        expect(flags).to_have_count(1)
        expect(page.locator(f"#c{copy.pk} [data-flag='near-duplicate']")).to_have_text(
            f"near-duplicate of #{rows[0].pk}"
        )
        expect(page.locator(f"#c{rows[0].pk} [data-flag]")).to_have_count(0)  # the original is not flagged
        _axe(page, "queue with a near-duplicate flag")
        page.get_by_role("button", name="Select flagged").click()
        expect(page.locator("[data-selected-count]")).to_have_text("1 selected")
        expect(page.locator(f"#c{copy.pk} input[data-select]")).to_be_checked()
        expect(page.locator(f"#c{rows[0].pk} input[data-select]")).not_to_be_checked()
        _shot(page, "22-near-duplicate-queue")
        page.get_by_label("Flag", exact=True).select_option("1")
        page.get_by_role("button", name="Filter").click()
        expect(page).to_have_url(re.compile(r"near=1"))
        expect(page.locator("tr[data-queue-row]")).to_have_count(1)
        expect(page.locator(f"#c{copy.pk}")).to_be_visible()
        page.locator(f"#c{copy.pk} a[data-open]").click()
        expect(page.locator("[data-similar] [data-duplicate-of]")).to_contain_text(
            f"near-duplicate of #{rows[0].pk}"
        )
        _axe(page, "candidate page of a later copy")


def test_a_same_field_conflict_goes_through_the_editor_and_keeps_revision_twos_sentence(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    original = experience(lesson="Deploy on Tuesdays.")
    base = approve(make_candidate(SCOPE, proposal=original), reviewer)
    first = make_update_candidate(
        base, {**original, "lesson": "Deploy on Tuesdays. Never deploy on Fridays."}
    )
    stale = make_update_candidate(
        base, {**original, "lesson": "Deploy early in the week.", "outcome": "Rolled out in an hour."}
    )
    dropped = make_update_candidate(base, {**original, "lesson": "Deploy after lunch."})
    approve(first, reviewer)
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.goto(f"/review/candidates/{stale.pk}/")
        page.get_by_role("button", name="Rebase onto revision 2").click()
        expect(page).to_have_url(re.compile(rf"/review/candidates/{stale.pk}/merge/"))
        expect(page.locator("[data-merge-editor] [data-conflict-field]")).to_have_count(1)
        field = page.locator('[data-conflict-field="lesson"]')
        expect(field.locator('[data-side="base"]')).to_contain_text("Deploy on Tuesdays.")
        expect(field.locator('[data-side="current"]')).to_contain_text("Never deploy on Fridays.")
        expect(field.locator('[data-side="update"]')).to_contain_text("Deploy early in the week.")
        expect(page.locator('[data-clean-field="outcome"]')).to_contain_text("Rolled out in an hour.")
        page.reload()  # axe on the editor itself (the one-time message list is base.html's)
        expect(page.locator("[data-merge-editor]")).to_be_visible()
        _axe(page, "conflict editor")
        page.set_viewport_size(
            {"width": 390, "height": 844}
        )  # the three sides stack, nothing scrolls sideways
        expect(page.locator('[data-side="update"]')).to_be_visible()
        assert page.eval_on_selector("html", "el => el.scrollWidth <= el.clientWidth")
        _axe(page, "conflict editor at 390 px")
        page.set_viewport_size({"width": 1440, "height": 900})
        _shot(page, "22-conflict-editor")
        # Edit: keep revision 2's sentence and add the update's.
        field.get_by_label("Edit the result below").check()
        field.get_by_label(re.compile("Result if edited")).fill(
            "Deploy early in the week. Never deploy on Fridays."
        )
        page.get_by_role("button", name="Save version 2 onto revision 2").click()
        expect(
            page.get_by_text(
                f"Resolved the conflicts with revision 2: saved version 2 of candidate #{stale.pk}"
            )
        ).to_be_visible()
        expect(page.locator("table.diff del", has_text="Fridays")).to_have_count(0)  # nothing of it removed
        page.get_by_role("button", name=re.compile("Approve version 2")).click()
        expect(page.get_by_text(f"Approved candidate #{stale.pk} (version 2)")).to_be_visible()

        # The third update: taking the update's text drops the sentence, and the diff shows it.
        page.goto(f"/review/candidates/{dropped.pk}/")
        page.get_by_role("button", name="Rebase onto revision 3").click()
        page.locator('[data-conflict-field="lesson"]').get_by_label("Take the update's").check()
        page.get_by_role("button", name="Save version 2 onto revision 3").click()
        expect(page.locator("table.diff del", has_text="Fridays").first).to_be_visible()

    stale.refresh_from_db()
    assert (stale.status, stale.result_revision) == (Candidate.Status.APPROVED, 3)
    content = ArtifactRevision.objects.get(head=stale.result_head, revision=3).content
    assert content["lesson"] == "Deploy early in the week. Never deploy on Fridays."
    assert content["outcome"] == "Rolled out in an hour."
    dropped.refresh_from_db()
    assert (
        dropped.status == Candidate.Status.PENDING
        and dropped.latest.proposal["lesson"] == "Deploy after lunch."
    )
