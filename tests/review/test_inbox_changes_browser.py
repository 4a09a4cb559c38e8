"""Request changes in Debian's Chromium (issue 32): the reviewer sends a candidate back with a
comment (the key c, then the button), the proposing agent reads the comment over MCP and answers
with a fix naming the candidate (the MCP tools the agent has), and the reviewer sees the thread (the comment, then the old and
the new version side by side) and approves. axe-core checks the new page states.

Two browser sessions with the agent's step between them: rows are written and read outside the
``chromium`` block (see test_inbox_browser), never inside it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from review.models import Candidate, ReviewAction
from tests.review.conftest import experience, make_candidate
from tests.review.factories import create_token, make_source
from tests.review.test_inbox_browser import SCOPE, _log_in, _shot, chromium
from tests.review.test_inbox_layout_browser import _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

COMMENT = "Say which resolver you pinned, and to which version."
FIELD_COMMENT = "Name the exact command."
OLD_ACTION = "Reran the job until it passed."
NEW_ACTION = "Pinned pip-tools to 7.4.1 in requirements-dev.txt and reran the job."


def _agent(token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One MCP tool call by the agent's token (``/mcp``, JSON-RPC ``tools/call``)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    response = Client().post(
        "/mcp", data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 200, response.content
    result = response.json()["result"]
    assert not result["isError"], result
    return dict(result["structuredContent"])


def test_request_changes_the_agent_answers_and_the_reviewer_approves_the_new_version(
    reviewer: User, live_server: Any
) -> None:
    from playwright.sync_api import expect

    candidate = make_candidate(SCOPE, proposal=experience(action=OLD_ACTION))
    agent_token = create_token("agent-bob")[0]

    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        page.goto(f"/review/candidates/{candidate.pk}/")
        _axe(page, "pending candidate with the change request form")
        page.keyboard.press("c")
        expect(page.locator("#changes-comment")).to_be_focused()
        page.keyboard.type(COMMENT)
        page.get_by_text("Comments on single fields (optional)").click()
        page.get_by_label("Action", exact=True).fill(FIELD_COMMENT)
        page.get_by_role("button", name="Request changes").click()
        expect(page.locator(".messages")).to_contain_text(f"Requested changes on candidate #{candidate.pk}")
        expect(page.locator("#undo-toast")).to_be_visible()
        page.goto(f"/review/candidates/{candidate.pk}/")
        expect(page.locator("[data-status]")).to_have_text("changes_requested")
        expect(page.locator("[data-comment-text]")).to_have_text(COMMENT)
        _axe(page, "candidate waiting for its proposer")
        _shot(page, "changes-requested")

    # The agent: reads the thread, answers with the fix naming the candidate.
    thread = _agent(
        agent_token,
        "get_artifact_candidate_thread",
        {"scope_id": SCOPE, "candidate_id": candidate.candidate_id},
    )
    (entry,) = thread["thread"]
    assert (entry["comment"], entry["field_comments"]) == (COMMENT, {"action": FIELD_COMMENT})
    answered = _agent(
        agent_token,
        "answer_artifact_candidate",
        {
            "scope_id": SCOPE,
            "candidate_id": candidate.candidate_id,
            "expected_version": 1,
            "proposal": experience(action=NEW_ACTION),
            "source_refs": [make_source(SCOPE)],
            "artifact_refs": [],
            "reason": "Answered the review.",
        },
    )
    answer = answered["candidate"]
    assert (answer["candidate_id"], answer["version"], answer["status"]) == (
        candidate.candidate_id,
        2,
        "pending",
    )

    with chromium() as browser:
        page = _log_in(browser, live_server.url, "reviewer")
        # Pending again, in the queue.
        expect(page.locator(f'tr[data-queue-row][data-pk="{candidate.pk}"]')).to_be_visible()
        page.goto(f"/review/candidates/{candidate.pk}/")
        thread_card = page.locator("[data-thread]")
        expect(thread_card.locator('[data-thread-comment="changes_requested"]')).to_contain_text(COMMENT)
        expect(thread_card.locator('[data-field-comment-shown="action"]')).to_contain_text(FIELD_COMMENT)
        # The Action field's old and new text side by side (left: before, right: after).
        diff = thread_card.locator('[data-thread-version="2"] table.diff').filter(has_text="Pinned pip-tools")
        expect(diff).to_contain_text("Reran the job until it passed.")
        expect(diff).to_contain_text("Pinned pip-tools to 7.4.1")
        _axe(page, "answered candidate with the thread and its diff")
        _shot(page, "changes-answered")
        page.get_by_role("button", name="Approve version 2").click()
        expect(page.locator(".messages")).to_contain_text(f"Approved candidate #{candidate.pk} (version 2)")

    done = Candidate.objects.get(pk=candidate.pk)
    assert (done.status, done.version) == ("approved", 2)
    assert list(ReviewAction.objects.filter(candidate=candidate).values_list("action", flat=True)) == [
        "changes_requested"
    ]
