"""Operators see feedback in explain (command, JSON, admin page) and in /metrics."""

from __future__ import annotations

import io
import json
from typing import Any

from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.test import Client

from tests.feedback.helpers import citations_of, prepare, report
from tests.review.factories import create_token

SCOPE = "repo"
QUERY = "which port does the staging database listen on?"


def explain_json() -> dict[str, Any]:
    out = io.StringIO()
    call_command("explain_prepare", "--scope", SCOPE, "--query", QUERY, "--json", stdout=out)
    return dict(json.loads(out.getvalue()))


def test_explain_shows_uses_reports_and_the_prior_of_each_candidate(api: Any) -> None:
    api.remember(SCOPE, "The staging database listens on port 6543.")
    api.remember(SCOPE, "The port the staging database listens on is set in deploy/staging.env.")
    used, reported = citations_of(prepare(api, SCOPE, QUERY))
    api.token, _ = create_token("agent-a")
    report(api, SCOPE, (used, "used"), (reported, "outdated"))

    body = explain_json()
    assert body["feedback_policy"]["cap"] == 0.10 and body["feedback_policy"]["hold_reporters"] == 2
    by_version = {row["citation"]["entry_version_id"]: row["feedback"] for row in body["candidates"]}
    assert by_version[used["entry_version_id"]]["uses"] == 1
    assert by_version[used["entry_version_id"]]["prior"] > 0
    assert by_version[reported["entry_version_id"]]["outdated_reporters"] == 1
    assert by_version[reported["entry_version_id"]]["prior"] == 0  # an open report: no preference

    api.token, _ = create_token("agent-b")
    report(api, SCOPE, (reported, "wrong"))
    body = explain_json()
    held = [row for row in body["candidates"] if row["reason"] == "held_by_reports"]
    assert [row["citation"]["entry_version_id"] for row in held] == [reported["entry_version_id"]]

    out = io.StringIO()
    call_command("explain_prepare", "--scope", SCOPE, "--query", QUERY, stdout=out)
    table = out.getvalue()
    assert "feedback use prior within \u00b10.10; Memory held out at 2 reporters" in table
    assert "skipped: held_by_reports" in table and "wrong 1, outdated 1" in table and "+0.0" in table


def test_the_admin_page_shows_the_feedback_columns(api: Any, django_user_model: Any) -> None:
    api.remember(SCOPE, "The staging database listens on port 6543.")
    (cited,) = citations_of(prepare(api, SCOPE, QUERY))
    report(api, SCOPE, (cited, "used"))
    user = django_user_model.objects.create_user(username="ops", password="pw", is_staff=True)
    for codename in ("explain_prepare", "view_memoryentryversion"):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = Client()
    client.force_login(user)
    page = client.post(
        "/admin/prepare/prepareaggregate/explain/", {"scope": SCOPE, "query": QUERY, "max_bytes": 8000}
    )
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="feedback-policy"' in html and '<th title="the use prior' in html
    assert ">1, last " in html


def test_metrics_count_feedback_by_outcome_without_ids(api: Any, settings: Any) -> None:
    scope = "acme-ops-metrics-7"
    api.remember(scope, "The staging database listens on port 6543.")
    (cited,) = citations_of(prepare(api, scope, QUERY))

    def scrape() -> str:
        settings.POWERCONTEXT_OPERATOR_TOKEN = "operator-secret"
        response = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer operator-secret")
        assert response.status_code == 200, response.content
        return response.content.decode()

    def counted(text: str, outcome: str) -> float:
        line = next(
            (
                line
                for line in text.splitlines()
                if line.startswith(f'powercontext_feedback_total{{outcome="{outcome}"}}')
            ),
            None,
        )
        return float(line.rsplit(" ", 1)[1]) if line else 0.0

    before = scrape()
    report(api, scope, (cited, "used"), (cited, "outdated"))
    report(api, scope, (cited, "used"))  # already recorded today: not counted again
    after = scrape()
    assert counted(after, "used") - counted(before, "used") == 1
    assert counted(after, "outdated") - counted(before, "outdated") == 1
    assert scope not in after and cited["entry_version_id"] not in after
