"""Reported items (issue 30, "A person decides") in Debian's Chromium: two agents report a cited
Memory entry outdated through the real ``POST /v1/context/feedback`` (each with its own token),
prepare holds it, a reviewer finds it from the queue, opens it by keyboard, revises it, and
prepare returns the new text; on another item, Dismiss brings it back and Undo holds it again.
axe-core finds no violations on the list and the item's page (before and after a decision, at
1440 and 390 px).

Rows are written before the browser opens and checked after it closes (see ``chromium`` in
test_inbox_browser); nothing sleeps: every wait is on a condition.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from powercontext.feedback.models import ReportDecision
from powercontext.memory import services as memory_services
from tests.feedback.helpers import items_of
from tests.review.factories import create_token
from tests.review.test_inbox_browser import SCOPE, _log_in, _shot, chromium
from tests.review.test_inbox_layout_browser import PHONE, _axe, _fits

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PORT_QUERY = "which port does the staging database listen on?"
STALE = "The staging database listens on port 6543."
NEW = "The staging database listens on port 5433 since the December move."
TESTS_QUERY = "what must I run after changing persistence?"
TESTS = "Run the contract tests after changing persistence."


def _prepared(page: Any, base_url: str, query: str) -> list[dict[str, Any]]:
    """What an agent gets for ``query``: the prepared items (content and citation)."""
    response = page.request.post(
        f"{base_url}/v1/context/prepare",
        data=json.dumps({"scope_id": SCOPE, "query": query}),
        headers={"Content-Type": "application/json"},
    )
    assert response.status == 200, response.text()
    return items_of(response.json())


def _texts(page: Any, base_url: str, query: str) -> list[str]:
    return [str(item["content"]) for item in _prepared(page, base_url, query)]


def _citation(page: Any, base_url: str, query: str, text: str) -> dict[str, Any]:
    found = [item["citation"] for item in _prepared(page, base_url, query) if item["content"] == text]
    assert found, f"prepare did not return {text!r}"
    return dict(found[0])


def _report(
    page: Any, base_url: str, token: str, citation: dict[str, Any], outcome: str, note: str = ""
) -> None:
    """An agent's report, as its hook or MCP client sends it."""
    item: dict[str, Any] = {"citation": citation, "outcome": outcome}
    if note:
        item["note"] = note
    response = page.request.post(
        f"{base_url}/v1/context/feedback",
        data=json.dumps({"scope_id": SCOPE, "items": [item]}),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    assert response.status == 200, response.text()
    assert response.json()["recorded"] == 1


def test_two_agents_report_an_entry_and_a_reviewer_revises_it_into_what_prepare_returns(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    memory_services.memory_remember(scope_id=SCOPE, kind="note", text=STALE)
    first, _ = create_token("agent-a")
    second, _ = create_token("agent-b")
    base = live_server.url

    with chromium() as browser:
        page = _log_in(browser, base, "reviewer")
        citation = _citation(page, base, PORT_QUERY, STALE)
        _report(page, base, first, citation, "outdated", note="It moved to 5433 in December.")
        _report(page, base, second, citation, "outdated")
        held = _texts(page, base, PORT_QUERY)

        # From the queue to the list: the link carries the count.
        page.goto("/review/")
        link = page.locator("[data-reported-link]")
        expect(link).to_have_text(re.compile(r"Reported\s+1"))
        link.click()
        expect(page.get_by_role("heading", name="Reported items")).to_be_visible()
        row = page.locator("tr[data-reported-row]")
        expect(row).to_have_count(1)
        expect(row.locator("[data-reported-by]")).to_have_text("Reported outdated by 2 agents")
        expect(row.locator('[data-flag="held"]')).to_be_visible()
        _axe(page, "reported list at 1440")
        _shot(page, "30-reported-list")

        # j selects the row, o opens it.
        page.keyboard.press("j")
        expect(row).to_have_class(re.compile("selected"))
        page.keyboard.press("o")
        expect(page.get_by_role("heading", name=re.compile("Reported Memory entry"))).to_be_visible()
        expect(page.locator("[data-shown-text]")).to_have_text(STALE)
        expect(page.locator("[data-report]")).to_have_count(2)
        expect(page.locator("[data-report]").first).to_contain_text("agent-b · token #")
        expect(page.get_by_text("It moved to 5433 in December.")).to_be_visible()
        expect(page.locator("[data-held]")).to_be_visible()
        _axe(page, "reported item at 1440")
        _shot(page, "30-reported-item")

        # e goes to the new text, prefilled with the reported one.
        page.keyboard.press("e")
        text = page.get_by_label("New text")
        expect(text).to_be_focused()
        expect(text).to_have_value(STALE)
        text.fill(NEW)
        page.get_by_label("Revise: why? (required)").fill("The port changed in the December move.")
        page.get_by_role("button", name="Revise", exact=True).click()
        expect(page.get_by_text(re.compile("Revised the entry in Memory revision"))).to_be_visible()
        expect(page.locator("[data-not-current]")).to_be_visible()
        expect(page.locator("li[data-decision='revised']")).to_contain_text(
            "The port changed in the December move."
        )
        _axe(page, "reported item after a decision at 1440")
        _shot(page, "30-reported-item-revised")
        page.set_viewport_size(PHONE)
        _axe(page, "reported item after a decision at 390")
        assert _fits(page)
        revised = _texts(page, base, PORT_QUERY)
        page.goto("/review/reported/")
        expect(page.locator("tr[data-reported-row]")).to_have_count(0)
        _axe(page, "empty reported list at 390")
        assert _fits(page)

    assert STALE not in held
    assert revised == [NEW]
    decision = ReportDecision.objects.get()
    assert (decision.action, decision.reviewer, decision.reason) == (
        "revised",
        reviewer,
        "The port changed in the December move.",
    )


def test_dismiss_brings_a_held_entry_back_and_undo_holds_it_again(reviewer: User, live_server: Any) -> None:
    from playwright.sync_api import expect

    memory_services.memory_remember(scope_id=SCOPE, kind="note", text=TESTS)
    first, _ = create_token("agent-a")
    second, _ = create_token("agent-b")
    base = live_server.url

    with chromium() as browser:
        page = _log_in(browser, base, "reviewer")
        citation = _citation(page, base, TESTS_QUERY, TESTS)
        _report(page, base, first, citation, "wrong")
        _report(page, base, second, citation, "outdated")
        held = _texts(page, base, TESTS_QUERY)

        page.goto("/review/reported/")
        page.get_by_role("link", name=TESTS).click()
        expect(page.locator("[data-reported-by]")).to_have_text(
            re.compile("Reported outdated by 1 agent, wrong by 1")
        )
        page.set_viewport_size(PHONE)
        _axe(page, "reported item at 390")
        assert _fits(page)
        page.get_by_label("Dismiss: why are the reports wrong? (required)").fill(
            "The contract tests still apply."
        )
        page.get_by_role("button", name=re.compile("^Dismiss the reports up to #")).click()
        expect(page.get_by_text(re.compile("Dismissed the reports up to #"))).to_be_visible()
        expect(page.locator("[data-held]")).to_have_count(0)
        dismissed = _texts(page, base, TESTS_QUERY)

        page.get_by_role("button", name="Undo the dismissal").click()
        expect(page.get_by_text(re.compile("Undone: the dismissed decision"))).to_be_visible()
        expect(page.locator("[data-held]")).to_be_visible()
        expect(page.locator("li[data-decision='undone']")).to_have_count(1)
        expect(page.get_by_role("button", name="Undo the dismissal")).to_have_count(0)
        _axe(page, "reported item after undo at 390")
        _shot(page, "30-reported-item-undone-390")
        undone = _texts(page, base, TESTS_QUERY)

    assert TESTS not in held
    assert TESTS in dismissed
    assert TESTS not in undone
    assert list(ReportDecision.objects.order_by("pk").values_list("action", flat=True)) == [
        "dismissed",
        "undone",
    ]
