"""What the agent said and did in its last turn, read from the Stop hook input and the session
transcript, and which prepared citations it mentions there (docs/agents/codex-hook.md).

Only the agent's own words count: the final assistant message and the inputs of the tools it
called. Prompts, tool results and injected context never do (they hold the prepared context
itself). Two transcript formats are read, line by line, whichever each line is:

- Codex rollout JSONL: ``{"timestamp", "type": "response_item" | "event_msg" | ..., "payload"}``;
  the turn starts after the last ``event_msg`` of type ``task_started`` / ``turn_started`` (else
  ``user_message``); the agent's text is a ``message`` with role ``assistant``, its tool calls
  ``function_call`` (``arguments``), ``custom_tool_call`` (``input``) and ``local_shell_call``.
- Claude Code transcript JSONL: ``{"type": "user" | "assistant", "message": {"role", "content"}, ...}``;
  the turn starts after the last ``user`` line that is a prompt (text, not only ``tool_result``
  blocks); the agent's text is an assistant ``text`` block, its tool calls ``tool_use`` blocks
  (``name`` and ``input``). Sidechain (subagent) lines are skipped.

Only the last ``MAX_TRANSCRIPT_BYTES`` of the transcript are read. Standard library only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import Any

if __package__:
    from .hook_state import Citation, citation_ids
else:  # imported by a hook run as a script: its folder is on sys.path
    from hook_state import Citation, citation_ids  # type: ignore[import-not-found, no-redef]

MAX_TRANSCRIPT_BYTES = 4 * 1024 * 1024
MIN_ID_CHARS = 8  # shorter ids would match ordinary words; the server's are 36 characters and more
_ID_CHARACTER = r"A-Za-z0-9_\-"

_CODEX_TURN_STARTS = frozenset({"task_started", "turn_started"})


def read_tail(path: str, limit: int = MAX_TRANSCRIPT_BYTES) -> list[str]:
    """The complete lines among the last ``limit`` bytes of the file (none when it is unreadable)."""

    try:
        with open(os.path.expanduser(path), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            start = max(0, size - limit)
            handle.seek(start)
            data = handle.read(limit)
    except (OSError, ValueError):
        return []
    if start > 0:
        newline = data.find(b"\n")
        data = data[newline + 1 :] if newline >= 0 else b""
    return data.decode("utf-8", "replace").splitlines()


def _records(lines: Iterable[str]) -> list[dict[str, Any]]:
    records = []
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


# --------------------------------------------------------------------------- Codex rollout


def _codex_turn_start(record: dict[str, Any]) -> int:
    """2: the turn starts here; 1: a user message (the start when no turn event is seen); 0: no."""

    payload = record.get("payload")
    if record.get("type") != "event_msg" or not isinstance(payload, dict):
        return 0
    kind = payload.get("type")
    if kind in _CODEX_TURN_STARTS:
        return 2
    return 1 if kind == "user_message" else 0


def _codex_agent_texts(record: dict[str, Any]) -> list[str]:
    payload = record.get("payload")
    if record.get("type") != "response_item" or not isinstance(payload, dict):
        return []
    kind = payload.get("type")
    if kind == "message" and payload.get("role") == "assistant":
        content = payload.get("content")
        if isinstance(content, list):
            return [
                item["text"]
                for item in content
                if isinstance(item, dict)
                and item.get("type") == "output_text"
                and isinstance(item.get("text"), str)
            ]
        return []
    if kind == "function_call":
        return [value for value in (payload.get("name"), payload.get("arguments")) if isinstance(value, str)]
    if kind == "custom_tool_call":
        return [value for value in (payload.get("name"), payload.get("input")) if isinstance(value, str)]
    if kind == "local_shell_call":
        return [json.dumps(payload.get("action"), ensure_ascii=False)]
    return []


# --------------------------------------------------------------------------- Claude Code transcript


def _claude_message(record: dict[str, Any]) -> dict[str, Any] | None:
    message = record.get("message")
    if record.get("isSidechain") is True or not isinstance(message, dict):
        return None
    return message


def _claude_turn_start(record: dict[str, Any]) -> int:
    message = _claude_message(record)
    if record.get("type") != "user" or message is None:
        return 0
    content = message.get("content")
    if isinstance(content, str):
        return 2
    if isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "text" for block in content
    ):
        return 2
    return 0  # tool results come back as user lines: they do not start a turn


def _claude_agent_texts(record: dict[str, Any]) -> list[str]:
    message = _claude_message(record)
    if record.get("type") != "assistant" or message is None:
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            name = block.get("name")
            texts.append(json.dumps([name, block.get("input")], ensure_ascii=False))
    return texts


# --------------------------------------------------------------------------- the turn


def _other_turn(record: dict[str, Any], turn_id: str | None) -> bool:
    """True when a Codex turn start names a turn other than ``turn_id`` (the one that stops)."""

    payload = record.get("payload")
    started = payload.get("turn_id") if isinstance(payload, dict) else None
    return turn_id is not None and isinstance(started, str) and started != turn_id


def last_turn_texts(lines: Iterable[str], turn_id: str | None = None) -> list[str]:
    """The agent's messages and tool-call inputs of the transcript's last turn.

    With no turn start in view (the turn began before the tail that was read), every line read
    counts as the turn. When the last Codex turn start names another turn than ``turn_id``, the
    stopping turn is not in the file yet and nothing counts.
    """

    records = _records(lines)
    start, weak = -1, -1
    for index, record in enumerate(records):
        strength = max(_codex_turn_start(record), _claude_turn_start(record))
        if strength == 2:
            start = index
        elif strength == 1:
            weak = index
    if start >= 0 and _other_turn(records[start], turn_id):
        return []
    if start < 0:
        start = weak
    texts: list[str] = []
    for record in records[start + 1 :]:
        texts.extend(_codex_agent_texts(record))
        texts.extend(_claude_agent_texts(record))
    return texts


def _mentioned(identifier: str, text: str) -> bool:
    if len(identifier) < MIN_ID_CHARS:
        return False
    pattern = rf"(?<![{_ID_CHARACTER}]){re.escape(identifier)}(?![{_ID_CHARACTER}])"
    return re.search(pattern, text) is not None


def used_citations(citations: list[Citation], texts: list[str]) -> list[Citation]:
    """The citations one of whose ids (``citation_ids``) appears as a whole word in ``texts``,
    in their given order."""

    joined = "\n".join(texts)
    if not joined:
        return []
    return [c for c in citations if any(_mentioned(identifier, joined) for identifier in citation_ids(c))]
