"""Session recovery operations (seed 004, R-004; addendum ``powercontext-recovery.openapi.yaml``):
per-session notes, the session's history and the recovery hint. Every call names one scope and one
session; a token's scope limit applies as for every operation (``Operation.call``).

Every call acts as its caller's ``owner_key`` (its token, or ``local`` without one): a session's
notes are its owner's, its history the sources the caller captured, and anyone else's session
answers as an unknown one. ``read_session_note`` with a ``reason`` is the operator's audited read
of any session's note (an operator or reviewer token; ``services.note_read_audited``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from context_api.auth import is_operator
from context_api.operations.base import Caller, Operation, operation
from context_api.validation import (
    NON_BLANK,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    StrictSerializer,
    field_error,
    scope_field,
)
from powercontext.core.exceptions import Forbidden, Unauthorized
from powercontext.core.models import owner_key
from powercontext.recovery import history, limits, selectors, services
from powercontext.recovery.text import LineMatch, LineSearch

# A virtual path, never an OS path: segments of letters, digits, '.', '_' and '-', each starting
# with a letter, digit or '_' (so no '.', '..', empty or absolute segments), joined by '/'.
NOTE_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*(?:/[A-Za-z0-9_][A-Za-z0-9._-]*)*")
QUERY_MAX_CHARS = 1024


def _session_field() -> StrictCharField:
    return StrictCharField(min_length=1, max_length=256, pattern=NON_BLANK)


def _path_field(**kwargs: Any) -> StrictCharField:
    return StrictCharField(
        min_length=1, max_length=limits.PATH_MAX_CHARS, pattern=NOTE_PATH, full=True, **kwargs
    )


def _time(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _session(data: dict[str, Any], caller: Caller) -> dict[str, str]:
    """The scope and session every recovery call names and the caller's owner identity, as
    keyword arguments."""
    return {"scope_id": data["scope_id"], "session_id": data["session_id"], "owner": owner_key(caller.token)}


def _query(data: dict[str, Any]) -> str:
    query: str = data["query"]
    if "\n" in query or "\r" in query:
        raise field_error(["query"], "Must be one line: the search is line by line.", "query_multiline")
    return query


def _line(found: LineMatch) -> dict[str, Any]:
    return {"line": found.line, "text": found.text, "before": list(found.before), "after": list(found.after)}


class WriteNoteInput(StrictSerializer):
    scope_id = scope_field()
    session_id = _session_field()
    path = _path_field()
    content = StrictCharField(allow_blank=True, max_length=limits.NOTE_MAX_BYTES)
    mode = StrictChoiceField(choices=("replace", "append"), required=False, default="replace")
    expected_version = StrictIntegerField(min_value=0, required=False, allow_null=True, default=None)


@operation("write_session_note", "v1/sessions/notes/write", WriteNoteInput)
def write_session_note(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Write a session note's next immutable version (replace its content or append to it)."""
    written = services.note_write(
        **_session(data, caller),
        path=data["path"],
        content=data["content"],
        mode=data["mode"],
        expected_version=data.get("expected_version"),
    )
    return {
        "note": {
            "path": written.path,
            "version": written.version,
            "size_bytes": written.size_bytes,
            "updated_at": _time(written.updated_at),
            "oldest_version": written.oldest_version,
            "stored_bytes": written.stored_bytes,
        },
        "note_count": written.note_count,
        "total_bytes": written.total_bytes,
        "stored_bytes": written.session_stored_bytes,
    }


class ReadNoteInput(StrictSerializer):
    scope_id = scope_field()
    session_id = _session_field()
    path = _path_field()
    version = StrictIntegerField(min_value=1, required=False, allow_null=True, default=None)
    # Operators only: why they read a session they do not own (stored in the audit row).
    reason = StrictCharField(
        min_length=1, max_length=1000, pattern=NON_BLANK, required=False, allow_null=True, default=None
    )


@operation("read_session_note", "v1/sessions/notes/read", ReadNoteInput, read_only=True, idempotent=True)
def read_session_note(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Read a session note: its latest version, or a given one."""
    reason = data.get("reason")
    if reason is None:
        note = selectors.note_read(**_session(data, caller), path=data["path"], version=data.get("version"))
    else:
        # An operator's read of any session's note: a token in every mode, and an audit row.
        if caller.token is None:
            raise Unauthorized()
        if not is_operator(caller.token):
            raise Forbidden()
        note = services.note_read_audited(
            scope_id=data["scope_id"],
            session_id=data["session_id"],
            path=data["path"],
            version=data.get("version"),
            reader=owner_key(caller.token),
            user=caller.token.user,
            reason=reason,
        )
    return {
        "path": note.path,
        "version": note.version,
        "latest_version": note.latest_version,
        "oldest_version": note.oldest_version,
        "mode": note.mode,
        "content": note.content,
        "size_bytes": note.size_bytes,
        "written_at": _time(note.created_at),
    }


class ListNotesInput(StrictSerializer):
    scope_id = scope_field()
    session_id = _session_field()
    prefix = StrictCharField(max_length=limits.PATH_MAX_CHARS, required=False, allow_blank=True, default="")


@operation("list_session_notes", "v1/sessions/notes/list", ListNotesInput, read_only=True, idempotent=True)
def list_session_notes(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """List a session's notes: paths, sizes, versions and last writes."""
    listing = selectors.note_list(**_session(data, caller), prefix=data["prefix"] or None)
    return {
        "notes": [
            {
                "path": n.path,
                "version": n.version,
                "size_bytes": n.size_bytes,
                "updated_at": _time(n.updated_at),
                "oldest_version": n.oldest_version,
                "stored_bytes": n.stored_bytes,
            }
            for n in listing.notes
        ],
        "note_count": listing.note_count,
        "total_bytes": listing.total_bytes,
        "stored_bytes": listing.stored_bytes,
    }


class SearchInput(StrictSerializer):
    scope_id = scope_field()
    session_id = _session_field()
    query = StrictCharField(min_length=1, max_length=QUERY_MAX_CHARS, pattern=NON_BLANK)
    ignore_case = StrictBooleanField(required=False, default=False)
    context_lines = StrictIntegerField(min_value=0, max_value=3, required=False, default=1)
    limit = StrictIntegerField(min_value=1, max_value=100, required=False, default=20)


def _search_arguments(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """The keyword arguments of a note or history search, from a valid ``SearchInput``."""
    search = LineSearch(
        query=_query(data),
        ignore_case=data["ignore_case"],
        context_lines=data["context_lines"],
        limit=data["limit"],
    )
    return {**_session(data, caller), "search": search}


@operation("search_session_notes", "v1/sessions/notes/search", SearchInput, read_only=True, idempotent=True)
def search_session_notes(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Search a session's notes literally, line by line, with context lines."""
    found = selectors.note_search(**_search_arguments(data, caller))
    return {
        "matches": [{"path": m.path, "version": m.version, **_line(m.match)} for m in found.matches],
        "truncated": found.truncated,
    }


class ListHistoryInput(StrictSerializer):
    scope_id = scope_field()
    session_id = _session_field()
    after_position = StrictIntegerField(min_value=0, required=False, default=0)
    limit = StrictIntegerField(min_value=1, max_value=500, required=False, default=100)


def _history_item(item: history.HistoryItem) -> dict[str, Any]:
    return {
        "source_id": item.source_id,
        "position": item.position,
        "kind": item.kind,
        "window_id": item.window_id,
        "size_bytes": item.size_bytes,
        "captured_at": _time(item.captured_at),
    }


@operation(
    "list_session_history", "v1/sessions/history/list", ListHistoryInput, read_only=True, idempotent=True
)
def list_session_history(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """List a session's captured sources in position order (metadata only)."""
    page = history.history_list(
        **_session(data, caller),
        after_position=data["after_position"],
        limit=data["limit"],
    )
    return {"items": [_history_item(i) for i in page.items], "next_after_position": page.next_after}


class HistorySearchInput(SearchInput):
    after_position = StrictIntegerField(min_value=0, required=False, default=0)


@operation(
    "search_session_history",
    "v1/sessions/history/search",
    HistorySearchInput,
    read_only=True,
    idempotent=True,
)
def search_session_history(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Search a session's captured sources literally (as stored: redacted), line by line, within a
    byte budget per call (``partial`` and ``next_after_position`` say where to go on)."""
    found = history.history_search(**_search_arguments(data, caller), after_position=data["after_position"])
    return {
        "matches": [
            {"source_id": m.source_id, "position": m.position, "window_id": m.window_id, **_line(m.match)}
            for m in found.matches
        ],
        "truncated": found.truncated,
        "partial": found.partial,
        "next_after_position": found.next_after,
    }


class ReadHistoryInput(StrictSerializer):
    scope_id = scope_field()
    session_id = _session_field()
    from_position = StrictIntegerField(min_value=1)
    to_position = StrictIntegerField(min_value=1, required=False, allow_null=True, default=None)
    max_bytes = StrictIntegerField(
        min_value=256, max_value=limits.READ_MAX_BYTES, required=False, default=16_000
    )


@operation(
    "read_session_history", "v1/sessions/history/read", ReadHistoryInput, read_only=True, idempotent=True
)
def read_session_history(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Read a session's captured sources by position range within a byte budget (redacted)."""
    found = history.history_read(
        **_session(data, caller),
        from_position=data["from_position"],
        to_position=data.get("to_position"),
        max_bytes=data["max_bytes"],
    )
    return {
        "items": [
            {**_history_item(c.item), "content": c.content, "truncated": c.truncated} for c in found.items
        ],
        "content_bytes": sum(len(c.content.encode("utf-8")) for c in found.items),
        "truncated": found.truncated,
        "next_position": found.next_position,
    }


class HintInput(StrictSerializer):
    scope_id = scope_field()
    session_id = _session_field()


@operation("get_recovery_hint", "v1/sessions/hint", HintInput, read_only=True, idempotent=True)
def get_recovery_hint(data: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """The session's recovery hint: what notes and history exist (metadata only, <= 4,000 bytes)."""
    hint = selectors.recovery_hint(**_session(data, caller))
    return {"hint": hint.text, "hint_bytes": hint.size_bytes, "truncated": hint.truncated}


OPERATIONS: tuple[Operation, ...] = (
    write_session_note,
    read_session_note,
    list_session_notes,
    search_session_notes,
    list_session_history,
    search_session_history,
    read_session_history,
    get_recovery_hint,
)
