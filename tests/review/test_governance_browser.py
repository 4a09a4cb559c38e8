"""Issue 22, governance, in Debian's Chromium: with four-eyes review on, the reviewer who wrote a
version cannot approve it (the button says why; a forced post is refused with a message and
writes nothing); a second reviewer approves it, and the candidate page and the admin audit
entry it links to show who wrote the approved version next to who approved it. Rows are
written before the browser opens and checked after it closes (see ``chromium``)."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.core.management import call_command

from review.models import Candidate, ReviewDecision
from tests.review.conftest import PASSWORD, experience, make_candidate, make_canned_reasons, revise
from tests.review.test_governance import reject
from tests.review.test_inbox_browser import SCOPE, _log_in, _shot, chromium
from tests.review.test_inbox_layout_browser import _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_four_eyes_refuses_the_writer_and_the_audit_shows_who_wrote_and_who_approved(
    live_server: Any, settings: Any, monkeypatch: Any
) -> None:
    from django.contrib.auth.models import User
    from playwright.sync_api import expect

    settings.POWERCONTEXT_REVIEW_FOUR_EYES = True
    monkeypatch.setenv("POWERCONTEXT_REVIEWER_PASSWORD", PASSWORD)
    for name in ("alice", "bob"):
        call_command("create_reviewer", name, stdout=io.StringIO())
    candidate = make_candidate(SCOPE, proposal=experience(lesson="Rotate the signing key before it expires."))
    candidate = revise(candidate, User.objects.get(username="alice"), lesson="Rotate signing keys monthly.")
    page_url = f"/review/candidates/{candidate.pk}/"
    make_canned_reasons("Too vague to act on.")
    vague = make_candidate(SCOPE, proposal=experience(lesson="Be careful with deploys."))
    reject(vague, User.objects.get(username="alice"), "Too vague to act on.\nName the deploy step.")

    with chromium() as browser:
        alice = _log_in(browser, live_server.url, "alice")
        alice.goto(page_url)
        approve = alice.locator("#approve-form button[type=submit]")
        expect(approve).to_be_disabled()
        expect(alice.locator("[data-four-eyes]")).to_contain_text(
            "four-eyes review is on and you wrote version 2 of it"
        )
        _shot(alice, "60-four-eyes-button")
        # A page that still offered the button (opened before the setting, say): the server refuses.
        approve.evaluate("button => button.removeAttribute('disabled')")
        approve.click()
        expect(alice.get_by_text(re.compile(r"was not approved: four-eyes review is on"))).to_be_visible()
        expect(alice.locator("[data-status]")).to_have_text("pending")

        bob = _log_in(browser, live_server.url, "bob")
        bob.goto(page_url)
        expect(bob.locator("[data-four-eyes]")).to_have_count(0)
        bob.get_by_role("button", name=re.compile("Approve version 2")).click()
        expect(bob.get_by_text(f"Approved candidate #{candidate.pk}")).to_be_visible()

        bob.goto(page_url + "?status=approved")
        written = bob.locator("[data-written-by]")
        expect(written).to_have_text("Version 2 written by alice (reviewer), approved by bob.")
        _shot(bob, "61-written-by-approved-by")
        bob.locator("[data-audit-link]").click()
        expect(bob).to_have_url(re.compile(r"/admin/review/reviewdecision/\d+/change/"))
        expect(bob.locator(".field-written_by")).to_contain_text("alice (reviewer)")
        expect(bob.locator(".field-reviewer")).to_contain_text("bob")
        _shot(bob, "62-audit-entry")
        bob.go_back()
        bob.locator("[data-artifact-history]").click()
        expect(bob.locator("#result_list tbody tr")).to_have_count(1)

        # The Rejected list says who rejected and why, the canned reason marked as such.
        bob.goto("/review/?status=rejected")
        rejection = bob.locator(f"#c{vague.pk} [data-rejection]")
        expect(rejection).to_contain_text("Rejected by alice:")
        expect(rejection.locator("[data-canned-reason]")).to_have_text("Too vague to act on.")
        expect(rejection.locator("[data-rejection-text]")).to_have_text("Name the deploy step.")
        _axe(bob, "rejected queue")
        bob.goto(page_url + "?status=approved")
        _axe(bob, "approved candidate")
        bob.set_viewport_size({"width": 390, "height": 844})
        bob.goto("/review/?status=rejected")
        expect(rejection).to_be_visible()
        assert bob.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        _shot(bob, "63-rejected-list-390")

    assert Candidate.objects.get(pk=candidate.pk).status == Candidate.Status.APPROVED
    decision = ReviewDecision.objects.get(candidate_id=candidate.pk)
    assert decision.reviewer.username == "bob" and decision.version == 2
