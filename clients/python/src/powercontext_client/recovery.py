"""The client's session-recovery methods (the recovery addendum: notes, history and the hint of
one agent session), mixed into both clients."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

ResultT = TypeVar("ResultT")


class RecoveryOperations(Generic[ResultT]):
    """Session recovery; ``_call`` sends one operation (the clients define it)."""

    def _call(self, name: str, fields: Mapping[str, Any] | None = None) -> ResultT:
        raise NotImplementedError

    def write_session_note(
        self,
        *,
        scope_id: str,
        session_id: str,
        path: str,
        content: str,
        mode: str | None = None,
        expected_version: int | None = None,
    ) -> ResultT:
        return self._call(
            "write_session_note",
            {
                "scope_id": scope_id,
                "session_id": session_id,
                "path": path,
                "content": content,
                "mode": mode,
                "expected_version": expected_version,
            },
        )

    def read_session_note(
        self, *, scope_id: str, session_id: str, path: str, version: int | None = None
    ) -> ResultT:
        return self._call(
            "read_session_note",
            {"scope_id": scope_id, "session_id": session_id, "path": path, "version": version},
        )

    def list_session_notes(self, *, scope_id: str, session_id: str, prefix: str | None = None) -> ResultT:
        return self._call(
            "list_session_notes", {"scope_id": scope_id, "session_id": session_id, "prefix": prefix}
        )

    def search_session_notes(
        self,
        *,
        scope_id: str,
        session_id: str,
        query: str,
        ignore_case: bool | None = None,
        context_lines: int | None = None,
        limit: int | None = None,
    ) -> ResultT:
        return self._call(
            "search_session_notes",
            {
                "scope_id": scope_id,
                "session_id": session_id,
                "query": query,
                "ignore_case": ignore_case,
                "context_lines": context_lines,
                "limit": limit,
            },
        )

    def list_session_history(
        self, *, scope_id: str, session_id: str, after_position: int | None = None, limit: int | None = None
    ) -> ResultT:
        return self._call(
            "list_session_history",
            {
                "scope_id": scope_id,
                "session_id": session_id,
                "after_position": after_position,
                "limit": limit,
            },
        )

    def search_session_history(
        self,
        *,
        scope_id: str,
        session_id: str,
        query: str,
        ignore_case: bool | None = None,
        context_lines: int | None = None,
        limit: int | None = None,
        after_position: int | None = None,
    ) -> ResultT:
        return self._call(
            "search_session_history",
            {
                "scope_id": scope_id,
                "session_id": session_id,
                "query": query,
                "ignore_case": ignore_case,
                "context_lines": context_lines,
                "limit": limit,
                "after_position": after_position,
            },
        )

    def read_session_history(
        self,
        *,
        scope_id: str,
        session_id: str,
        from_position: int,
        to_position: int | None = None,
        max_bytes: int | None = None,
    ) -> ResultT:
        return self._call(
            "read_session_history",
            {
                "scope_id": scope_id,
                "session_id": session_id,
                "from_position": from_position,
                "to_position": to_position,
                "max_bytes": max_bytes,
            },
        )

    def get_recovery_hint(self, *, scope_id: str, session_id: str) -> ResultT:
        return self._call("get_recovery_hint", {"scope_id": scope_id, "session_id": session_id})
