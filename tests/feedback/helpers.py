"""Helpers of the feedback tests: prepare over HTTP, the citations of a pack, reports."""

from __future__ import annotations

import json
from typing import Any

from powercontext.prepare.render import CONTENT_PREFIX, CONTENT_SUFFIX


def items_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The items of a prepare answer (none for ``empty``)."""
    content = body["content"]
    if content is None:
        return []
    assert content.startswith(CONTENT_PREFIX) and content.endswith(CONTENT_SUFFIX)
    return list(json.loads(content[len(CONTENT_PREFIX) : len(content) - len(CONTENT_SUFFIX)])["items"])


def citations_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [item["citation"] for item in items_of(body)]


def prepare(api: Any, scope_id: str, query: str) -> dict[str, Any]:
    response = api.post("/v1/context/prepare", {"scope_id": scope_id, "query": query})
    assert response.status_code == 200, response.content
    return dict(response.json())


def report(api: Any, scope_id: str, *items: tuple[dict[str, Any], str]) -> Any:
    return api.post(
        "/v1/context/feedback",
        {"scope_id": scope_id, "items": [{"citation": c, "outcome": o} for c, o in items]},
    )
