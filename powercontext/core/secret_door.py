"""The one redaction door: every text that enters the service is redacted before it is stored.

Remember and revise (text and reason), proposals and their revisions (every string of the
proposal, and the reason), session notes, captured sources (content and every string value of
their metadata) and feedback notes all pass through here, whichever way they came in (REST, MCP,
the Review Inbox, the pipeline). The detector is ``powercontext.core.redaction_detectors``; a
detected secret becomes ``[REDACTED:<type>]`` (docs/redaction.md). Redaction is idempotent, so a
text that passes two doors (a pipeline memory made from an already redacted source) is unchanged
by the second.

Reads never pass here: what is stored is already redacted.
"""

from __future__ import annotations

from typing import Any, TypeVar, overload

from powercontext.core.redaction_detectors import redact

T = TypeVar("T")


@overload
def redact_text(text: str) -> str: ...


@overload
def redact_text(text: None) -> None: ...


def redact_text(text: str | None) -> str | None:
    """``text`` with every detected secret replaced (None stays None)."""
    if not text:
        return text
    return redact(text).text


def redact_strings(value: T) -> T:
    """``value`` (JSON-shaped: dicts, lists, strings, numbers, booleans, None) with every string
    value redacted; object keys are names, not content, and are kept as they are."""
    return _redact(value)  # type: ignore[no-any-return]


def _redact(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: _redact(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact(item) for item in value]
    return value
