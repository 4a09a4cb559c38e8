"""Shortcuts for the session recovery operations over the /v1 test client."""

from __future__ import annotations

from typing import Any

PATHS = {
    "write": "/v1/sessions/notes/write",
    "read": "/v1/sessions/notes/read",
    "list": "/v1/sessions/notes/list",
    "search": "/v1/sessions/notes/search",
    "history": "/v1/sessions/history/list",
    "history_search": "/v1/sessions/history/search",
    "history_read": "/v1/sessions/history/read",
    "hint": "/v1/sessions/hint",
}


def call(api: Any, name: str, scope_id: str, session_id: str, **body: Any) -> Any:
    return api.post(PATHS[name], {"scope_id": scope_id, "session_id": session_id, **body})


def ok(api: Any, name: str, scope_id: str, session_id: str, **body: Any) -> dict[str, Any]:
    response = call(api, name, scope_id, session_id, **body)
    assert response.status_code == 200, response.content
    result: dict[str, Any] = response.json()
    return result
