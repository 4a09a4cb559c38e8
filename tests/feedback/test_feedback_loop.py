"""The loop end to end: agents report through HTTP and MCP, prepare holds what two tokens called
outdated, explain says why, a reviewer's decision brings the item (or its new version) back."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from powercontext.feedback.models import FeedbackCounter, ReportDecision
from powercontext.prepare.explain_selectors import prepare_explain
from review.services import reports
from tests.feedback.helpers import citations_of, prepare, report
from tests.review.factories import create_token, make_approved, make_reviewer

SCOPE = "repo"
QUERY = "which port does the staging database listen on?"
STALE = "The staging database listens on port 6543."
OTHER = "The port the staging database listens on is set in deploy/staging.env."


def mcp_report(client: Client, token: str, citation: dict[str, Any], outcome: str) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "report_context_feedback",
            "arguments": {"scope_id": SCOPE, "items": [{"citation": citation, "outcome": outcome}]},
        },
    }
    response = client.post(
        "/mcp", data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 200, response.content
    result = response.json()["result"]
    assert not result["isError"], result
    return dict(result["structuredContent"])


def texts(api: Any) -> list[str]:
    from tests.feedback.helpers import items_of

    return [item["content"] for item in items_of(prepare(api, SCOPE, QUERY))]


@pytest.fixture
def stale(api: Any) -> dict[str, Any]:
    api.remember(SCOPE, STALE)
    api.remember(SCOPE, OTHER)
    by_text = dict(zip(texts(api), citations_of(prepare(api, SCOPE, QUERY)), strict=True))
    assert STALE in by_text
    return by_text[STALE]


def held_in_explain() -> list[str]:
    report_ = prepare_explain(scope_id=SCOPE, query=QUERY, max_bytes=8000)
    return [row["reason"] for row in report_.as_dict()["candidates"] if row["reason"] == "held_by_reports"]


def test_two_tokens_reporting_outdated_hold_the_entry_until_a_person_decides(
    api: Any, client: Client, stale: dict[str, Any]
) -> None:
    first, _ = create_token("agent-a")
    second, _ = create_token("agent-b")
    api.token = first
    assert report(api, SCOPE, (stale, "outdated")).json()["recorded"] == 1
    assert STALE in texts(api)  # one reporter lowers it, never hides it
    assert mcp_report(client, second, stale, "outdated")["recorded"] == 1

    assert STALE not in texts(api) and OTHER in texts(api)
    assert held_in_explain() == ["held_by_reports"]
    # a third report from a token that already reported is not counted twice
    api.token = first
    assert report(api, SCOPE, (stale, "wrong")).json()["recorded"] == 1
    assert FeedbackCounter.objects.get(target=f"m:{stale['entry_version_id']}").reporters == 2

    reviewer = make_reviewer()
    counter = FeedbackCounter.objects.get(target=f"m:{stale['entry_version_id']}")
    newest = max(counter_ids(counter))
    dismissal = reports.report_dismiss(
        scope_id=SCOPE, target=counter.target, seen_through=newest, reviewer=reviewer, reason="Still true."
    )
    assert STALE in texts(api) and held_in_explain() == []
    reports.report_decision_undo(decision_id=dismissal.pk, reviewer=reviewer)
    assert STALE not in texts(api)


def counter_ids(counter: FeedbackCounter) -> list[int]:
    from powercontext.feedback.models import Feedback

    return list(Feedback.objects.filter(target=counter.target).values_list("id", flat=True))


def test_a_revision_is_recalled_again_and_carries_no_reports(api: Any, stale: dict[str, Any]) -> None:
    for name in ("agent-a", "agent-b"):
        api.token, _ = create_token(name)
        report(api, SCOPE, (stale, "outdated"))
    assert STALE not in texts(api)
    target = f"m:{stale['entry_version_id']}"
    decision = reports.report_revise_memory(
        scope_id=SCOPE,
        target=target,
        text="The staging database listens on port 5433.",
        reviewer=make_reviewer(),
        reason="Moved in December.",
    )
    assert "The staging database listens on port 5433." in texts(api)
    assert decision.new_target and not FeedbackCounter.objects.filter(target=decision.new_target).exists()
    # undo brings the reported version back, with its reports: held again
    reports.report_decision_undo(decision_id=decision.pk, reviewer=make_reviewer("other"))
    assert STALE not in texts(api) and "The staging database listens on port 5433." not in texts(api)
    assert ReportDecision.objects.filter(action="undone").count() == 1


def test_retire_takes_the_entry_out_and_undo_restores_it(api: Any, stale: dict[str, Any]) -> None:
    api.token, _ = create_token("agent-a")
    report(api, SCOPE, (stale, "wrong"))
    decision = reports.report_retire(
        scope_id=SCOPE, target=f"m:{stale['entry_version_id']}", reviewer=make_reviewer(), reason="False."
    )
    entries = api.post("/v1/memory/entries/list", {"scope_id": SCOPE}).json()["entries"]
    assert STALE not in [entry["text"] for entry in entries]
    reports.report_decision_undo(decision_id=decision.pk, reviewer=make_reviewer())
    entries = api.post("/v1/memory/entries/list", {"scope_id": SCOPE}).json()["entries"]
    assert STALE in [entry["text"] for entry in entries]
    assert STALE in texts(api)  # one reporter: lowered, not held


def test_an_approved_experience_is_never_held_by_agents_alone(api: Any) -> None:
    _, ref = make_approved(
        SCOPE,
        proposal={
            "situation": "The staging database port changed.",
            "action": "Checked which port the staging database listens on.",
            "outcome": "Connections on the old port failed.",
            "lesson": "Read the staging database port from the deploy config.",
        },
    )
    before = prepare(api, SCOPE, QUERY)
    assert {"artifact_ref": ref} in citations_of(before)
    for name in ("agent-a", "agent-b", "agent-c"):
        api.token, _ = create_token(name)
        report(api, SCOPE, ({"artifact_ref": ref}, "wrong"))
    assert {"artifact_ref": ref} in citations_of(prepare(api, SCOPE, QUERY))
    assert FeedbackCounter.objects.get().reporters == 3
