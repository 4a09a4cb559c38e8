"""Plain helpers for the /v1 wire tests: request shortcuts, envelope checks and row counts."""

from __future__ import annotations

import re
from typing import Any

from powercontext.core.models import (
    Artifact,
    ArtifactRevision,
    MemoryEntry,
    MemoryEntryVersion,
    MemoryMembership,
    MemorySearchDocument,
    ScopeState,
    Source,
)
from powercontext.recovery.models import RecoverySession, SessionNote, SessionNoteVersion

REQUEST_ID = re.compile(r"[0-9a-f]{16}")
REQUEST_ID_HEADER = "X-PowerContext-Request-ID"

# Every table a /v1 write can touch. A rejected request must leave all of them unchanged.
WRITTEN_MODELS = (
    Source,
    ScopeState,
    Artifact,
    ArtifactRevision,
    MemoryEntry,
    MemoryEntryVersion,
    MemoryMembership,
    MemorySearchDocument,
    RecoverySession,
    SessionNote,
    SessionNoteVersion,
)

ENTRY_KEYS = {"citation", "version", "kind", "text", "state", "source_refs", "artifact_refs"}
CHANGE_KEYS = {"op", "entry_id", "from_entry_version_id", "to_entry_version_id", "reason"}


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in WRITTEN_MODELS}


def memory_ref(revision: int) -> dict[str, Any]:
    return {"family": "memory", "artifact_id": "memory", "revision": revision}


def assert_request_id(response: Any) -> str:
    value = response.get(REQUEST_ID_HEADER)
    assert value is not None, f"no {REQUEST_ID_HEADER} on a {response.status_code}"
    assert REQUEST_ID.fullmatch(value), value
    return value


def assert_error(response: Any, status: int, code: str) -> Any:
    """Check one error response: status, request id, the exact envelope and its code.

    Returns ``error.details`` for further checks.
    """
    assert response.status_code == status, (response.status_code, response.content)
    assert_request_id(response)
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "details"}, error
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"]
    assert error["details"] is None or isinstance(error["details"], dict)
    return error["details"]


def assert_invalid(response: Any) -> list[dict[str, Any]]:
    """A schema violation: 422 invalid_request with ``details.errors`` of ``{loc, msg, type}``."""
    details = assert_error(response, 422, "invalid_request")
    assert isinstance(details, dict) and set(details) == {"errors"}, details
    errors = details["errors"]
    assert isinstance(errors, list) and errors
    for item in errors:
        assert set(item) == {"loc", "msg", "type"}, item
        assert isinstance(item["loc"], list) and item["loc"][0] == "body", item
        assert isinstance(item["msg"], str) and isinstance(item["type"], str)
    return errors


def assert_entry_shape(entry: dict[str, Any]) -> None:
    assert set(entry) == ENTRY_KEYS, entry
    assert set(entry["citation"]) == {"memory_ref", "entry_id", "entry_version_id"}
    assert set(entry["citation"]["memory_ref"]) == {"family", "artifact_id", "revision"}
    assert entry["state"] in ("active", "inactive")


# --- request shortcuts (return the raw response) ---------------------------------------------


def get_entry(api: Any, scope_id: str, citation: dict[str, Any]) -> Any:
    return api.post("/v1/memory/entries/get", {"scope_id": scope_id, "citation": citation})


def list_entries(api: Any, scope_id: str, **extra: Any) -> Any:
    return api.post("/v1/memory/entries/list", {"scope_id": scope_id, **extra})


def revise(
    api: Any, scope_id: str, citation: dict[str, Any], text: str, kind: str = "note", **extra: Any
) -> Any:
    body = {"scope_id": scope_id, "citation": citation, "kind": kind, "text": text, **extra}
    return api.post("/v1/memory/entries/revise", body)


def retire(api: Any, scope_id: str, citation: dict[str, Any], **extra: Any) -> Any:
    return api.post("/v1/memory/entries/retire", {"scope_id": scope_id, "citation": citation, **extra})


def changes(api: Any, scope_id: str, **extra: Any) -> Any:
    return api.post("/v1/memory/changes", {"scope_id": scope_id, **extra})


def capture(api: Any, scope_id: str, source_id: str, content: str, **extra: Any) -> Any:
    body = {"scope_id": scope_id, "source_id": source_id, "content": content, **extra}
    return api.post("/v1/sources/content", body)


def search(api: Any, scope_id: str, query: str, **extra: Any) -> Any:
    return api.post("/v1/memory/search", {"scope_id": scope_id, "query": query, **extra})


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.content)
    assert_request_id(response)
    return response.json()


def make_memory(api: Any, scope_id: str, *texts: str, kind: str = "note") -> list[dict[str, Any]]:
    """Remember each text in order; return the entries as the remember responses gave them."""
    entries = []
    for text in texts:
        result = api.remember(scope_id, text, kind=kind)
        assert result["entry"] is not None, result
        entries.append(result["entry"])
    return entries


def head_of(api: Any, scope_id: str) -> int | None:
    memory = ok(list_entries(api, scope_id))["memory"]
    return None if memory is None else memory["revision"]
