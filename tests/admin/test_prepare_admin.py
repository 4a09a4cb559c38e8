"""The admin page "Explain a prepare" and the view-only prepare aggregates."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from powercontext.core.models import ScopeState
from powercontext.memory.sources import source_capture
from powercontext.prepare import audit as prepare_audit
from powercontext.prepare import explain_selectors as prepare_explain
from powercontext.prepare import selection as context_selectors
from powercontext.prepare.models import PREPARE_AGGREGATE_COUNTERS, PrepareAggregate
from powercontext.prepare.selection import ContextCandidates
from powercontext.prepare.stats import AggregateDelta, prepare_aggregates_add
from tests.conftest import Api
from tests.review.factories import experience_proposal, make_approved

EXPLAIN = "/admin/prepare/prepareaggregate/explain/"
PAYLOAD = '<script>alert("pc")</script>'
SHORT = f"deploy on tuesdays only {PAYLOAD}"
LONG = "deploy " + " ".join(["checklist"] * 150)
MISSES = "deploy with the old script, now retired"
QUERY = "deploy quokka-marker"


@pytest.fixture(autouse=True)
def _no_relevance_floor(settings: Any) -> None:
    """These tests count what the builder decided for fixed hits; the relevance floor (which
    would keep these test entries out of unrelated queries) has its own tests."""
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY = 0.0
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SHARE = 0.0
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SIMILARITY = 0.0


@pytest.fixture(autouse=True)
def fast_password_hasher(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def staff(django_user_model: Any, username: str, *codenames: str) -> Any:
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return user


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def ops(api: Api, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Scope "ops": three Memory entries read in a fixed order with the first repeated, and one
    approved Experience, so one prepare at 1,400 bytes shows every kind of decision."""
    entries = {text: api.remember("ops", text)["entry"] for text in (SHORT, LONG, MISSES)}
    make_approved("ops", "experience", proposal=experience_proposal(situation="deploy froze in the release"))
    original = context_selectors.context_candidates

    def ordered(**kwargs: Any) -> ContextCandidates:
        found = original(**kwargs)
        hits = sorted(found.memory_hits, key=lambda hit: [SHORT, LONG, MISSES].index(hit.text))
        return ContextCandidates(found.memory_ref, [*hits, hits[0]], found.experience_hits)

    monkeypatch.setattr(context_selectors, "context_candidates", ordered)
    monkeypatch.setattr(prepare_explain, "context_candidates", ordered)
    return entries


def explain_page(client: Client, **fields: Any) -> Any:
    return client.post(EXPLAIN, {"scope": "ops", "query": QUERY, "max_bytes": 1400, **fields})


def candidate_rows(html: str) -> list[list[str]]:
    body = html.split('id="explain-candidates"', 1)[1]
    rows = re.findall(r'<tr class="decision-[a-z]+">(.*?)</tr>', body, re.S)
    return [
        [unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<td>(.*?)</td>", row, re.S)]
        for row in rows
    ]


# --- who may use it --------------------------------------------------------------------------------


def test_a_non_staff_user_is_sent_to_the_admin_log_in(django_user_model: Any, db: None) -> None:
    user = django_user_model.objects.create_user(username="plain", password="pw")
    response = client_for(user).get(EXPLAIN)

    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_staff_without_the_permission_is_forbidden(django_user_model: Any, db: None) -> None:
    client = client_for(
        staff(django_user_model, "viewer", "view_prepareaggregate", "view_memoryentryversion")
    )

    assert client.get(EXPLAIN).status_code == 403
    assert client.post(EXPLAIN, {"scope": "ops", "query": "x", "max_bytes": 8000}).status_code == 403


def test_the_admin_index_and_a_scope_page_link_to_it(
    admin_client: Client, django_user_model: Any, api: Api
) -> None:
    source_capture(scope_id="ops", source_id="s1", content="a captured prompt", metadata=None)
    index = admin_client.get("/admin/").content.decode()
    scope = ScopeState.objects.get(scope_id="ops")
    scope_page = admin_client.get(
        reverse("admin:powercontext_scopestate_change", args=[scope.pk])
    ).content.decode()
    prefilled = admin_client.get(EXPLAIN + "?scope=ops").content.decode()
    outsider = client_for(staff(django_user_model, "outsider")).get("/admin/").content.decode()

    assert f'href="{EXPLAIN}"' in index
    assert 'href="/admin/prepare/prepareaggregate/"' in index
    assert f'href="{EXPLAIN}?scope=ops"' in scope_page
    assert 'name="scope" value="ops"' in prefilled
    assert EXPLAIN not in outsider


# --- what it shows -----------------------------------------------------------------------------------


def test_it_shows_each_candidate_decision_with_bytes_and_the_budget_used(
    django_user_model: Any, ops: dict[str, Any], api: Api
) -> None:
    client = client_for(staff(django_user_model, "operator", "explain_prepare", "view_memoryentryversion"))
    response = explain_page(client)
    prepared = api.post("/v1/context/prepare", {"scope_id": "ops", "query": QUERY, "max_bytes": 1400}).json()

    assert response.status_code == 200
    html = response.content.decode()
    rows = candidate_rows(html)
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("memory", "1", "1"),
        ("memory", "2", "3"),
        ("memory", "3", "4"),
        ("memory", "4", "-"),
        ("experience", "1", "2"),
    ]
    outcomes = [r[9] for r in rows]
    assert re.fullmatch(rf"admitted {len(SHORT.encode())}B content, \d+B item", outcomes[0])
    assert re.fullmatch(r"admitted \d+B content, \d+B item truncated\(budget\)", outcomes[1])
    assert outcomes[2:] == ["skipped: over_budget", "duplicate of #1", outcomes[4]]
    assert outcomes[4].startswith("admitted ") and "truncated" not in outcomes[4]
    item_bytes = [int(re.search(r"(\d+)B item", o).group(1)) for o in outcomes if o.startswith("admitted")]
    # The items, their separators and the envelope fill exactly the content the endpoint returns.
    assert sum(item_bytes) < prepared["content_bytes"] <= 1400
    budget = re.search(r'id="budget-used">(.*?)<', html).group(1)
    assert budget == f"{prepared['content_bytes']} of 1400 bytes ({prepared['content_bytes'] * 100 // 1400}%)"
    assert re.search(r'id="admitted-count">3<', html)
    assert "memory@" in html  # the Memory head read
    mode = re.search(r"search mode</th><td>(.*?)</td>", html).group(1)
    # In hybrid mode, this process's vector cache after the prepare: bytes against the bound.
    assert re.fullmatch(r"hybrid \(vector cache \d+\.\d of 256 MiB, \d+ scopes?\)", mode) or mode == "fts"
    # Text is off by default: neither hit text nor the query is on the page.
    assert "tuesdays" not in html and "checklist" not in html and "release" not in html
    assert "quokka" not in html.split('id="explain-summary"', 1)[1]


def test_show_text_shows_escaped_first_characters_to_those_who_may_read_memory(
    admin_client: Client, django_user_model: Any, ops: dict[str, Any]
) -> None:
    html = explain_page(admin_client, show_text="on").content.decode()
    refused = explain_page(
        client_for(staff(django_user_model, "operator", "explain_prepare")), show_text="on"
    )

    assert "deploy on tuesdays only &lt;script&gt;alert(&quot;p\u2026" in html
    assert "<script>alert(" not in html
    assert "deploy checklist checklist checklist che\u2026" in html
    assert refused.status_code == 403 and b"tuesdays" not in refused.content


def test_the_explain_permission_alone_does_not_show_memory_citations_and_scores(
    django_user_model: Any, ops: dict[str, Any]
) -> None:
    # Issue 20: the report lists citations, entry ids and scores, so it needs the Memory view
    # permission as well as the explain one.
    client = client_for(staff(django_user_model, "operator", "explain_prepare"))

    assert client.get(EXPLAIN).status_code == 403
    assert explain_page(client).status_code == 403


@pytest.mark.parametrize(
    "fields, field",
    [
        ({"query": "   "}, "query"),
        ({"query": ""}, "query"),
        ({"query": "x" * 8193}, "query"),
        ({"query": "nul\x00byte"}, "query"),
        ({"scope": ""}, "scope"),
        ({"scope": "s" * 257}, "scope"),
        ({"max_bytes": "100"}, "max_bytes"),
        ({"max_bytes": "40000"}, "max_bytes"),
        ({"max_bytes": "lots"}, "max_bytes"),
    ],
)
def test_invalid_input_is_a_form_error_not_a_500(
    admin_client: Client, fields: dict[str, str], field: str
) -> None:
    response = explain_page(admin_client, **fields)

    assert response.status_code == 200
    assert field in response.context["form"].errors
    assert b"errorlist" in response.content and b'id="explain-candidates"' not in response.content


def test_it_writes_nothing_and_never_logs_the_query(
    admin_client: Client, ops: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG), CaptureQueriesContext(connection) as queries:
        response = explain_page(admin_client, show_text="on")
        invalid = explain_page(admin_client, max_bytes="1")

    assert response.status_code == invalid.status_code == 200
    assert "quokka" not in caplog.text and "tuesdays" not in caplog.text
    writes = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert writes == []
    assert prepare_audit.buffer().pending() == 0  # an explain is not a prepare


# --- the aggregates --------------------------------------------------------------------------------


def add(scope_id: str, hour: datetime, mode: str = "fts", **counts: int) -> None:
    row = tuple(counts.get(name, 0) for name in PREPARE_AGGREGATE_COUNTERS)
    prepare_aggregates_add(deltas=[AggregateDelta(scope_id, hour, mode, row)], now=hour)


def test_the_aggregate_list_shows_means_and_filters_by_scope_hour_and_mode(admin_client: Client) -> None:
    now = datetime(2026, 3, 2, 12, 30, tzinfo=UTC)
    hour = now.replace(minute=0)
    add(
        "ops",
        hour,
        prepares=4,
        content_bytes=6000,
        max_bytes=32000,
        latency_us=10000,
        latency_le_2ms=2,
        latency_le_5ms=2,
    )
    add("ops", hour - timedelta(days=3), prepares=1, max_bytes=8000, latency_us=1000, latency_le_1ms=1)
    add("web", hour, mode="hybrid", prepares=2, max_bytes=16000, latency_us=4000, latency_le_5ms=2)
    url = reverse("admin:prepare_prepareaggregate_changelist")

    with time_machine.travel(now, tick=False):
        listing = admin_client.get(url).content.decode()
        by_scope = admin_client.get(url, {"q": "ops"}).content.decode()
        recent = admin_client.get(url, {"q": "ops", "since": "24"}).content.decode()
        hybrid = admin_client.get(url, {"mode": "hybrid"}).content.decode()
        broken = admin_client.get(url, {"since": "<script>"})

    assert "1500" in listing and "18.8%" in listing and "2.50 ms" in listing  # 6000/4, 6000/32000, 10 ms/4
    assert "\u2264 2 ms" in listing and "\u2264 5 ms" in listing  # p50, p95 from the histogram
    assert by_scope.count('class="field-scope_id"') == 2 and ">web<" not in by_scope
    assert recent.count('class="field-scope_id"') == 1
    assert hybrid.count('class="field-scope_id"') == 1 and ">web<" in hybrid
    assert broken.status_code == 200


def test_the_aggregates_are_view_only(admin_client: Client) -> None:
    add("ops", datetime(2026, 3, 2, 12, tzinfo=UTC), prepares=1)
    row = PrepareAggregate.objects.get()

    view = admin_client.get(reverse("admin:prepare_prepareaggregate_change", args=[row.pk]))
    assert view.status_code == 200 and f'href="{EXPLAIN}?scope=ops"' in view.content.decode()
    assert admin_client.get(reverse("admin:prepare_prepareaggregate_add")).status_code == 403
    assert (
        admin_client.post(reverse("admin:prepare_prepareaggregate_delete", args=[row.pk])).status_code == 403
    )
    assert PrepareAggregate.objects.get().prepares == 1
