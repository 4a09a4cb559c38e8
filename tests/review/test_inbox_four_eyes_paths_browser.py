"""Issue 32, four-eyes review follows the text, in Debian's Chromium: each way around it that an
outside review found is refused for the text's writer (Approve disabled, saying why) and allowed
for another reviewer, driven through the Inbox's own pages —

(a) a reviewer's revised text, rejected and reopened by another reviewer: the writer is still
    refused, the reopener approves the copy;
(b) a reviewer approves an agent's proposal and presses Undo (``z``): the copy is still the
    agent's text, so she approves it again, and its history names no account as the writer;
(c) "Propose the revert" on an approved candidate's page: a pending update written by her, which
    she cannot approve and another reviewer approves (the artifact gets the old content);
(d) a candidate citing a source her token captured: refused, saying she captured it.

Rows are written before the browser opens and checked after it closes (see ``chromium`` in
test_inbox_browser); inside the block the server's view comes from its own pages. axe-core
checks each new page state (the refusals, the revert proposal, the Approved list's "taken back"
note).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from powercontext.core.models import Artifact, ArtifactRevision
from review.models import Candidate, ReviewAction, ReviewDecision
from tests.review.conftest import (
    approve,
    experience,
    make_candidate,
    make_update_candidate,
    make_user,
    reject,
    revise,
)
from tests.review.factories import create_token
from tests.review.test_inbox_browser import SCOPE, _log_in, _shot, chromium
from tests.review.test_inbox_mobile_browser import _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

APPROVE = re.compile(r"Approve version \d+")


@pytest.fixture
def four_eyes(settings: Any) -> None:
    settings.POWERCONTEXT_REVIEW_FOUR_EYES = True


@pytest.fixture
def alice(db: None) -> User:
    return make_user("alice", reviewer=True)


@pytest.fixture
def bob(db: None) -> User:
    return make_user("bob", reviewer=True)


def _number(page: Any, pattern: str) -> int:
    """The candidate number that a message on ``page`` names (``pattern`` has one group)."""
    found = re.search(pattern, page.locator("body").inner_text())
    assert found is not None, pattern
    return int(found.group(1))


def _refused(page: Any, why: str) -> None:
    """Approve is disabled and says why (four-eyes); reject and revise stay."""
    from playwright.sync_api import expect

    expect(page.locator("#approve-form button[type=submit]")).to_be_disabled()
    expect(page.locator("[data-four-eyes]")).to_contain_text(f"four-eyes review is on and {why}")


def _approves(page: Any, pk: int) -> None:
    from playwright.sync_api import expect

    expect(page.locator("[data-four-eyes]")).to_have_count(0)
    page.get_by_role("button", name=APPROVE).click()
    expect(page.get_by_text(f"Approved candidate #{pk}")).to_be_visible()


def test_a_reopen_by_another_reviewer_leaves_the_writer_refused_and_the_reopener_approves(
    four_eyes: None, alice: User, bob: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    mine = make_candidate(SCOPE, proposal=experience(lesson="Pin the resolver first."))
    mine = revise(mine, alice, lesson="Pin the resolver before you chase a flaky test.")
    rejected = reject(mine, alice, "Not sure yet.")

    with chromium() as browser:
        bob_page = _log_in(browser, live_server.url, "bob")
        bob_page.goto(f"/review/candidates/{rejected.pk}/?status=rejected")
        bob_page.get_by_label("Reopen: why? (required)").fill("The lesson holds after all.")
        bob_page.get_by_role("button", name=re.compile("^Reopen")).click()
        copy = _number(bob_page, rf"Reopened candidate #{rejected.pk} as candidate #(\d+)")

        alice_page = _log_in(browser, live_server.url, "alice")
        alice_page.goto(f"/review/candidates/{copy}/")
        _refused(alice_page, "you wrote version 1 of it")
        expect(alice_page.get_by_role("button", name="Reject", exact=True)).to_be_enabled()
        _shot(alice_page, "four-eyes-a-reopened-writer-refused")
        _axe(alice_page, "the writer's reopened copy")

        bob_page.goto(f"/review/candidates/{copy}/")
        _approves(bob_page, copy)

    decided = ReviewDecision.objects.get(candidate_id=copy)
    assert (decided.reviewer.username, decided.decision) == ("bob", "approved")
    assert Candidate.objects.get(pk=copy).latest.created_by == alice  # the text stays hers
    assert ReviewAction.objects.get(candidate=rejected, action="reopened").reviewer == bob


def test_undo_of_an_agents_approval_leaves_the_agent_as_writer_and_she_approves_again(
    four_eyes: None, alice: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    proposed = make_candidate(SCOPE, proposal=experience(lesson="Batch the nightly import."))

    with chromium() as browser:
        page = _log_in(browser, live_server.url, "alice")
        page.goto(f"/review/candidates/{proposed.pk}/")
        page.get_by_role("button", name=APPROVE).click()
        expect(page.locator("#undo-toast")).to_contain_text(f"Approved #{proposed.pk}.")
        page.keyboard.press("z")
        expect(
            page.get_by_text(f"Undone: your decision on candidate #{proposed.pk} is taken back")
        ).to_be_visible()
        copy = _number(page, r"pending again here, as #(\d+)")
        expect(page.get_by_role("heading", name=f"Candidate #{copy}")).to_be_visible()
        _approves(page, copy)

        page.goto(f"/review/candidates/{copy}/history/")
        author = page.locator('[data-history="version"] [data-author]')
        expect(author).to_have_text("Proposed without a signed-in account (pipeline or local agent)")
        expect(page.locator("[data-written-by]")).to_have_text(
            "Version 1 written by no account (pipeline or local agent), approved by alice."
        )
        _shot(page, "four-eyes-b-undo-history")

        # The undone approval is off the Approved list; its note says so and lists it on demand.
        page.goto("/review/?status=approved")
        expect(page.locator("tr[data-queue-row]")).to_have_count(1)
        expect(page.locator(f"#c{copy}")).to_be_visible()
        note = page.locator("a[data-taken-back]")
        expect(note).to_have_text("1 taken back")
        _axe(page, "approved list with a decision taken back")
        note.click()
        expect(page.locator("tr[data-queue-row]")).to_have_count(1)
        expect(page.locator(f"#c{proposed.pk}")).to_be_visible()
        _axe(page, "approved list of decisions taken back")

    assert Candidate.objects.get(pk=copy).latest.created_by is None
    assert ReviewDecision.objects.get(candidate_id=copy).reviewer == alice


def test_a_proposed_revert_is_hers_and_another_reviewer_approves_it(
    four_eyes: None, alice: User, bob: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    first = approve(make_candidate(SCOPE, proposal=experience(lesson="Rotate keys every month.")), bob)
    update = approve(make_update_candidate(first, experience(lesson="Rotate keys every year.")), bob)
    assert update.result_head is not None
    head_pk = update.result_head.pk

    with chromium() as browser:
        alice_page = _log_in(browser, live_server.url, "alice")
        alice_page.goto(f"/review/candidates/{update.pk}/?status=approved")
        alice_page.get_by_label("Revert to revision").select_option("1")
        alice_page.get_by_label("Why? (required)", exact=True).fill("Yearly rotation was a mistake.")
        alice_page.get_by_role("button", name=re.compile("^Propose the revert")).click()
        expect(alice_page.locator(".msg.success")).to_contain_text("another reviewer approves it")
        proposed = _number(alice_page, r"to revision 1 as candidate #(\d+)")
        _axe(alice_page, "the revert proposed")

        alice_page.goto(f"/review/candidates/{proposed}/")
        _refused(alice_page, "you wrote version 1 of it")
        _shot(alice_page, "four-eyes-c-revert-proposer-refused")
        _axe(alice_page, "the proposer's revert")

        bob_page = _log_in(browser, live_server.url, "bob")
        bob_page.goto(f"/review/candidates/{proposed}/")
        _approves(bob_page, proposed)

    head = Artifact.objects.get(pk=head_pk)
    assert head.current_revision == 3
    restored = ArtifactRevision.objects.get(head=head, revision=3).content
    assert restored == ArtifactRevision.objects.get(head=head, revision=1).content
    assert restored["lesson"] == "Rotate keys every month."
    assert Candidate.objects.get(pk=proposed).latest.created_by == alice
    assert ReviewDecision.objects.get(candidate_id=proposed).reviewer == bob


def test_a_source_her_token_captured_refuses_her_and_another_reviewer_approves(
    four_eyes: None, alice: User, bob: User, api: Any, live_server: Any
) -> None:
    api.token = create_token("alice", reviewer=True)[0]
    captured = api.post(
        "/v1/sources/content",
        {
            "scope_id": SCOPE,
            "source_id": "s-alice",
            "content": "Always pin the resolver before chasing flakes.",
        },
    )
    assert captured.status_code == 202, captured.content
    candidate = make_candidate(SCOPE, source_refs=[{"name": "content", "source_id": "s-alice"}])

    with chromium() as browser:
        alice_page = _log_in(browser, live_server.url, "alice")
        alice_page.goto(f"/review/candidates/{candidate.pk}/")
        _refused(alice_page, "you captured the source s-alice it cites")
        _shot(alice_page, "four-eyes-d-captured-source-refused")
        _axe(alice_page, "a candidate citing her capture")

        bob_page = _log_in(browser, live_server.url, "bob")
        bob_page.goto(f"/review/candidates/{candidate.pk}/")
        _approves(bob_page, candidate.pk)

    assert ReviewDecision.objects.get(candidate=candidate).reviewer == bob
