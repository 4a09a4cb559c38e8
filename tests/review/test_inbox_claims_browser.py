"""Issue 13 items 10 and 11 in Debian's Chromium: two reviewers (two browser contexts) and a
claim ("Assign to me", the claimant in the queue, "Assigned to me", take-over, Unassign, a claim
never blocking the other reviewer's decision), and rejecting a near-duplicate in one click from
the candidate page's "Similar Experiences". Rows are written before the browser opens and
checked after it closes (see ``chromium`` in test_inbox_browser)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from review.models import Candidate, CandidateClaim, ReviewDecision
from tests.review.conftest import approve, experience, make_candidate, make_user
from tests.review.test_inbox_browser import SCOPE, _log_in, _shot, chromium

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _claimant_cell(page: Any, pk: int) -> Any:
    row = page.locator("tr[data-queue-row]").filter(has=page.locator(f'td.num:text-is("{pk}")'))
    return row.locator("td[data-claimant]")


def test_two_reviewers_claim_take_over_unassign_and_decide(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    make_user("bob", reviewer=True)
    first = make_candidate(SCOPE, proposal=experience(lesson="Pin the CI image digest, not its tag."))
    second = make_candidate(SCOPE, proposal=experience(lesson="Run migrations before the new code."))
    third = make_candidate(SCOPE, proposal=experience(lesson="Alert on queue age, not queue length."))

    with chromium() as browser:
        alice = _log_in(browser, live_server.url, "reviewer")
        bob = _log_in(browser, live_server.url, "bob")

        # A assigns the first candidate to herself on its page.
        alice.goto(f"/review/candidates/{first.pk}/")
        alice.get_by_role("button", name="Assign to me").click()
        expect(alice.get_by_text(f"Candidate #{first.pk} is assigned to you.")).to_be_visible()
        expect(alice.locator("[data-claim] [data-claimant]")).to_contain_text("To you")
        # ... and the second one from the queue.
        alice.goto("/review/")
        _claimant_cell(alice, second.pk).get_by_role("button", name="Assign to me").click()
        expect(alice).to_have_url(re.compile(r"/review/$"))
        expect(_claimant_cell(alice, first.pk)).to_have_text("you")
        expect(_claimant_cell(alice, second.pk)).to_have_text("you")
        _shot(alice, "20-claims-queue-alice")

        # B sees A as the claimant in the queue; "Assigned to me" is A's list only.
        bob.goto("/review/")
        expect(_claimant_cell(bob, first.pk)).to_have_text("reviewer")
        expect(_claimant_cell(bob, second.pk)).to_have_text("reviewer")
        expect(_claimant_cell(bob, third.pk)).to_have_text("Assign to me")
        bob.get_by_role("link", name="Assigned to me").click()
        expect(bob.get_by_text("Nothing to review here.")).to_be_visible()
        alice.get_by_role("link", name="Assigned to me").click()
        expect(alice.locator("tr[data-queue-row] td.num")).to_have_text([str(first.pk), str(second.pk)])

        # B can still decide A's item: the claim never blocks.
        bob.goto(f"/review/candidates/{first.pk}/")
        expect(bob.locator("[data-claim] [data-claimant]")).to_contain_text("To reviewer")
        _shot(bob, "21-claimed-by-another")
        bob.on("dialog", lambda dialog: dialog.accept())
        bob.get_by_role("button", name=re.compile("Approve version 1")).click()
        expect(bob.get_by_text(f"Approved candidate #{first.pk}")).to_be_visible()

        # B takes over the second one while A has its page open; A's stale Unassign changes
        # nothing and A is told who has it now.
        alice.goto(f"/review/candidates/{second.pk}/")
        bob.goto(f"/review/candidates/{second.pk}/")
        bob.get_by_role("button", name="Take over from reviewer").click()
        expect(bob.get_by_text(f"Took over candidate #{second.pk} from reviewer")).to_be_visible()
        alice.get_by_role("button", name="Unassign").click()
        expect(alice.get_by_text(f"Candidate #{second.pk} was not assigned to you")).to_be_visible()
        expect(alice.locator("[data-claim] [data-claimant]")).to_contain_text("To bob")
        expect(alice.get_by_role("button", name="Take over from bob")).to_be_visible()
        alice.goto("/review/?assigned=me")
        expect(alice.get_by_text("Nothing to review here.")).to_be_visible()

        # B unassigns: nobody has it any more.
        bob.get_by_role("button", name="Unassign").click()
        expect(bob.get_by_text(f"Candidate #{second.pk} is no longer assigned to you.")).to_be_visible()
        expect(bob.locator("[data-claim] [data-claimant]")).to_have_text("Nobody yet.")

    assert Candidate.objects.get(pk=first.pk).status == Candidate.Status.APPROVED
    assert ReviewDecision.objects.get(candidate_id=first.pk).reviewer.username == "bob"
    assert not CandidateClaim.objects.exists()


def test_a_near_duplicate_is_rejected_in_one_click_naming_the_duplicate(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    lesson = "Rotate the staging TLS certificates two weeks before the quarterly audit."
    original = approve(make_candidate(SCOPE, proposal=experience(lesson=lesson)), reviewer)
    duplicate = make_candidate(SCOPE, proposal=dict(original.latest.proposal))  # type: ignore[union-attr]
    assert original.result_head is not None
    artifact_id = original.result_head.artifact_id

    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.goto(f"/review/candidates/{duplicate.pk}/")
        card = page.locator("[data-similar]")
        expect(card).to_contain_text("100% similar")
        expect(card).to_contain_text("near-duplicate")
        _shot(page, "22-similar-experiences")
        # A reject draft typed before does not get in the way, and is settled by the decision.
        page.get_by_label("Reject reason").fill("half-typed")
        card.get_by_role("button", name=f"Reject as duplicate of {artifact_id}").click()
        expect(page.get_by_text(f"Rejected candidate #{duplicate.pk}")).to_be_visible()
        stored = page.evaluate("() => Object.keys(localStorage).filter(k => k.includes('draft'))")
        page.goto(f"/review/candidates/{duplicate.pk}/")
        expect(page.locator("[data-status]")).to_have_text("rejected")
        # The decided candidate links to the approved original.
        expect(page.locator(".decision")).to_contain_text(f"Duplicate of approved Experience {artifact_id}")

    assert stored == []
    decision = ReviewDecision.objects.get(candidate_id=duplicate.pk)
    assert decision.decision == "rejected"
    assert decision.reason == f"Duplicate of approved Experience {artifact_id} (revision 1)."
