"""The Review Inbox in Debian's headless Chromium, driven by Playwright against the live server.

Runs in the PostgreSQL pass (tests/conftest.py deselects ``browser`` tests elsewhere). Never runs
``playwright install``: it launches /usr/bin/chromium. Screenshots land in
``test-artifacts/screenshots/`` (gitignored). No sleeps: Playwright's ``expect`` waits.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from review.models import Candidate, ReviewDecision
from tests.powercontext.factories import make_memory
from tests.review.conftest import PASSWORD, approve, experience, make_candidate, make_source, result_ref

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = os.environ.get("POWERCONTEXT_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
SCOPE = "browser-repo"
MARKER = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1"
HOSTILE = f'<script>window.__pwned = true</script> {MARKER} <img src=x onerror="window.__pwned = true">'


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium under Playwright's sync API.

    The sync API runs an asyncio loop in this thread while it is open, and Django then keeps
    database connections per asyncio context instead of per thread: an ORM call made inside
    this block would open a connection that is never closed (and would need
    DJANGO_ALLOW_ASYNC_UNSAFE). So tests write their rows before the block and check the
    database after it; inside it they only drive the browser.
    """
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def _log_in(browser: Any, base_url: str, username: str) -> Any:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1440, "height": 900}, base_url=base_url)
    page = context.new_page()
    page.goto("/review/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/review/"))
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Pending candidates")).to_be_visible()
    return page


def _shot(page: Any, name: str) -> None:
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def _prepare(page: Any, base_url: str, query: str) -> str:
    response = page.request.post(
        f"{base_url}/v1/context/prepare",
        data=json.dumps({"scope_id": SCOPE, "query": query}),
        headers={"Content-Type": "application/json"},
    )
    assert response.status == 200, response.text()
    return str(response.json()["content"])


def test_a_reviewer_approves_rejects_and_revises_and_the_approved_experience_is_prepared(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    to_approve = make_candidate(
        SCOPE,
        proposal=experience(
            situation="The staging TLS certificates expired during the quarterly audit.",
            lesson="Rotate the staging TLS certificates two weeks before the quarterly audit.",
        ),
    )
    to_reject = make_candidate(
        SCOPE, proposal=experience(lesson="Restart the build agent whenever it feels slow.")
    )
    to_revise = make_candidate(SCOPE, proposal=experience(lesson="Vacuum tables sometimes."))
    hostile = make_candidate(SCOPE, proposal=experience(lesson=HOSTILE, situation=HOSTILE), reason=HOSTILE)
    dialogs: list[str] = []

    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
        rows = page.locator("tr[data-queue-row]")
        expect(rows).to_have_count(4)
        expect(page.locator('[data-count="experience"]')).to_have_text("4")
        _shot(page, "01-queue")

        # j selects the first row, o opens it; a approves (no dialog).
        page.keyboard.press("j")
        expect(rows.first).to_have_class(re.compile("selected"))
        page.keyboard.press("o")
        expect(page.get_by_role("heading", name=f"Candidate #{to_approve.pk}")).to_be_visible()
        expect(
            page.locator("[data-rendered]").get_by_text(
                "Rotate the staging TLS certificates two weeks before the quarterly audit."
            )
        ).to_be_visible()
        expect(page.locator("pre.source").first).to_be_visible()
        _shot(page, "02-candidate")
        page.keyboard.press("a")
        expect(page.get_by_text(f"Approved candidate #{to_approve.pk}")).to_be_visible()

        # The reviewer lands on the next candidate; r focuses the reject reason.
        expect(page.get_by_role("heading", name=f"Candidate #{to_reject.pk}")).to_be_visible()
        page.keyboard.press("r")
        expect(page.get_by_label("Reject reason")).to_be_focused()
        page.keyboard.type("Too vague to help anyone.")
        page.get_by_role("button", name="Reject", exact=True).click()
        expect(page.get_by_text(f"Rejected candidate #{to_reject.pk}")).to_be_visible()

        # Revise the third, then approve version 2 with the button.
        expect(page.get_by_role("heading", name=f"Candidate #{to_revise.pk}")).to_be_visible()
        page.get_by_role("link", name=re.compile("Revise")).click()
        expect(page.get_by_role("heading", name=f"Revise candidate #{to_revise.pk}")).to_be_visible()
        page.get_by_label("Lesson").fill("Run VACUUM ANALYZE on the orders table after every bulk import.")
        page.get_by_label("Reason for this proposal").fill("Made the lesson specific.")
        _shot(page, "03-revise")
        page.get_by_role("button", name="Save version 2").click()
        expect(page.get_by_text(f"Saved version 2 of candidate #{to_revise.pk}")).to_be_visible()
        expect(page.locator("[data-version]")).to_have_text("2")
        page.get_by_role("button", name=re.compile("Approve version 2")).click()
        expect(page.get_by_text(f"Approved candidate #{to_revise.pk} (version 2)")).to_be_visible()

        # The hostile candidate: its text shows literally and runs nothing.
        expect(page.get_by_role("heading", name=f"Candidate #{hostile.pk}")).to_be_visible()
        expect(page.locator('[data-field="lesson"] .text')).to_have_text(HOSTILE)
        expect(page.locator("[data-reason]")).to_have_text(HOSTILE)
        pwned = page.evaluate("() => window.__pwned")
        injected = page.locator("main script, main img").count()
        _shot(page, "04-hostile-candidate-inert")

        # History of the revised candidate: both versions and the decision.
        page.goto(f"/review/candidates/{to_revise.pk}/history/")
        expect(page.locator('[data-history="version"]')).to_have_count(2)
        expect(page.locator('[data-history="decision"]')).to_contain_text("Approved version 2")
        _shot(page, "05-history")

        # The approved Experience reaches a prepare response (through the live server).
        revised = _prepare(page, live_server.url, "bulk import on the orders table")
        rotated = _prepare(page, live_server.url, "quarterly audit TLS certificates")
        rejected = _prepare(page, live_server.url, "build agent slow restart")

    assert pwned is None
    assert injected == 0
    assert dialogs == []  # one confirmation rule: no browser dialogs
    assert "Run VACUUM ANALYZE on the orders table after every bulk import." in revised
    assert "Vacuum tables sometimes." not in revised
    assert "Rotate the staging TLS certificates two weeks before the quarterly audit." in rotated
    assert "Restart the build agent" not in rejected
    statuses = dict(Candidate.objects.filter(scope_id=SCOPE).values_list("pk", "status"))
    assert statuses == {
        to_approve.pk: "approved",
        to_reject.pk: "rejected",
        to_revise.pk: "approved",
        hostile.pk: "pending",
    }
    assert ReviewDecision.objects.get(candidate=to_reject).reason == "Too vague to help anyone."
    approved = Candidate.objects.select_related("result_head").get(pk=to_revise.pk)
    assert approved.result_head is not None
    assert approved.result_head.artifact_id in revised


def test_a_viewer_cannot_approve(viewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    candidate = make_candidate(SCOPE, proposal=experience(lesson="Only reviewers may approve this."))
    with chromium() as browser:
        page = _log_in(browser, live_server.url, "viewer")
        page.get_by_role("link", name="Only reviewers may approve this.").click()
        expect(page.get_by_role("heading", name="Read-only")).to_be_visible()
        expect(page.get_by_role("button", name=re.compile("Approve"))).to_have_count(0)
        expect(page.get_by_role("button", name="Reject", exact=True)).to_have_count(0)
        page.keyboard.press("a")  # the shortcut finds nothing to press
        expect(page.locator("[data-status]")).to_have_text("pending")
        _shot(page, "06-viewer-read-only")

        # A hand-made POST with a valid CSRF token is refused all the same.
        token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
        response = page.request.post(
            f"{live_server.url}/review/candidates/{candidate.pk}/approve/",
            form={"expected_version": "1", "csrfmiddlewaretoken": token},
            headers={"Referer": page.url, "Origin": live_server.url},
        )
        status, body = response.status, response.text()

    assert status == 403
    assert "can’t do that" in body
    candidate.refresh_from_db()
    assert candidate.status == Candidate.Status.PENDING
    assert not ReviewDecision.objects.exists()


def test_a_stale_approve_from_a_second_tab_shows_the_conflict_page(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    memory = make_memory(SCOPE, text="Deploys on Fridays need a second reviewer on call.")
    base = approve(
        make_candidate(
            SCOPE,
            proposal=experience(
                situation="A Friday deploy broke checkout.",
                action="Rolled back by hand.",
                outcome="Checkout was down for forty minutes.",
                lesson="Do not deploy on Fridays.",
            ),
        ),
        reviewer,
    )
    ref = result_ref(base)
    update = make_candidate(
        SCOPE,
        proposal=experience(
            situation="A Friday deploy broke checkout.",
            action="Rolled back with the one-click rollback.",
            outcome="Checkout was down for four minutes.",
            lesson="Deploy on Fridays only with a second reviewer on call.\nKeep the one-click rollback tested.",
        ),
        reason="The rollback tooling changed the trade-off.",
        source_refs=[make_source(SCOPE, content="User: can we deploy the fix today? It is Friday.")],
        artifact_refs=[{"family": "memory", "artifact_id": "memory", "revision": memory.revision}, ref],
        target=ref,
    )

    with chromium() as browser:
        first = _log_in(browser, live_server.url, "reviewer")
        second = first.context.new_page()
        for page in (first, second):
            page.goto(f"/review/candidates/{update.pk}/")
            expect(page.get_by_role("heading", name=f"Candidate #{update.pk}")).to_be_visible()
        expect(first.locator("table.diff ins").first).to_be_visible()
        expect(first.get_by_text("Deploys on Fridays need a second reviewer on call.")).to_be_visible()
        _shot(first, "07-update-with-diff-and-evidence")

        # The first tab revises; the second still shows version 1 and approves it.
        first.get_by_role("link", name=re.compile("Revise")).click()
        first.get_by_label("Outcome").fill("Checkout was down for three minutes.")
        first.get_by_role("button", name="Save version 2").click()
        expect(first.get_by_text(f"Saved version 2 of candidate #{update.pk}")).to_be_visible()
        second.get_by_role("button", name=re.compile("Approve version 1")).click()
        expect(
            second.get_by_role("heading", name="This candidate changed while you were reviewing it")
        ).to_be_visible()
        expect(second.locator("[data-current-version]")).to_have_text("version 2")
        expect(second.get_by_text("What changed since version 1")).to_be_visible()
        _shot(second, "08-conflict")

        # From the conflict page the reviewer reviews the current version and approves it.
        second.get_by_role("link", name="Review the current version").click()
        second.get_by_role("button", name=re.compile("Approve version 2")).click()
        expect(second.get_by_text(f"Approved candidate #{update.pk} (version 2)")).to_be_visible()

    update.refresh_from_db()
    assert (update.status, update.version, update.result_revision) == (Candidate.Status.APPROVED, 2, 2)
    assert update.latest is not None
    assert update.latest.proposal["outcome"] == "Checkout was down for three minutes."
