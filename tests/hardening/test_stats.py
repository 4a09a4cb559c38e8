"""GET /v1/stats (get_stats): aggregate counts only, authorized like the other reads."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from tests.api.helpers import assert_error, assert_invalid

SECRET = "a private sentence"


def _seed(api: Any) -> None:
    api.remember("s", SECRET, kind="note")
    api.remember("s", "another private sentence", kind="note")
    api.remember("s", "a preference", kind="preference")
    api.remember("elsewhere", "not counted", kind="note")
    entries = api.post("/v1/memory/entries/list", {"scope_id": "s"}).json()["entries"]
    retire = {"scope_id": "s", "citation": entries[0]["citation"]}
    assert api.post("/v1/memory/entries/retire", retire).status_code == 200
    body = {"scope_id": "s", "source_id": "src-1", "content": "source content"}
    assert api.post("/v1/sources/content", body).status_code == 202


def test_it_counts_a_scope_without_exposing_content(api: Any) -> None:
    _seed(api)

    response = api.get("/v1/stats", scope_id="s", period="7d")

    assert response.status_code == 200, response.content
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert set(body) == {"scope_id", "as_of", "inventory", "usage", "recall"}
    inventory = body["inventory"]
    assert inventory["sources"] == {"total": 1, "memory_processed": 0, "memory_pending": 0}
    assert inventory["artifacts"] == {"total": 1, "by_family": [{"family": "memory", "total": 1}]}
    assert inventory["candidates"]["total"] == 0
    assert inventory["memory"]["entries"] == {
        "total": 3,
        "active": 2,
        "inactive": 1,
        "by_kind": [
            {"kind": "note", "total": 2, "active": 1, "inactive": 1},
            {"kind": "preference", "total": 1, "active": 1, "inactive": 0},
        ],
    }
    assert body["usage"]["period"]["preset"] == "7d"
    assert body["recall"]["estimator"] is None
    assert "private" not in response.content.decode()


def test_an_unknown_scope_has_zero_counts(api: Any) -> None:
    body = api.get("/v1/stats", scope_id="nobody").json()
    assert body["inventory"]["memory"]["entries"]["total"] == 0
    assert body["usage"]["period"]["preset"] == "today"


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"scope_id": ""},
        {"scope_id": "   "},
        {"scope_id": "s", "period": "1y"},
        {"scope_id": "s", "x": "1"},
    ],
)
def test_it_rejects_invalid_parameters(api: Any, params: dict[str, str]) -> None:
    assert_invalid(api.get("/v1/stats", **params))


def test_it_is_get_only(api: Any) -> None:
    assert_error(api.post("/v1/stats", {"scope_id": "s"}), 405, "method_not_allowed")


@override_settings(POWERCONTEXT_REQUIRE_TOKEN=True)
def test_it_needs_a_token_when_tokens_are_required(api: Any) -> None:
    assert_error(api.get("/v1/stats", scope_id="s"), 401, "unauthorized")


def test_a_wrong_token_is_refused(api: Any) -> None:
    api.token = "pct_wrong"
    assert_error(api.get("/v1/stats", scope_id="s"), 401, "unauthorized")
