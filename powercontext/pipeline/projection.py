"""What goes into a generator and what comes out of it may be stored (pure).

``project`` builds the bounded, redacted head + tail window of a session; ``bind`` holds a
generator's answer to the output schema: items citing a source outside the session are
dropped, structurally broken answers become ``schema_invalid``, and every stored field is
redacted again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from powercontext.pipeline.generation import (
    ExperienceItem,
    GeneratorResult,
    MemoryItem,
    Projection,
    SessionSource,
)

Redactor = Callable[[str], str]

MAX_KIND_CHARS = 128
MAX_MEMORY_BYTES = 8192
MAX_EXPERIENCE_FIELD_CHARS = 8000
MAX_EVIDENCE = 32
MAX_ITEMS = 256


def _size(source: SessionSource) -> int:
    return len(source.content.encode("utf-8"))


def _cut(source: SessionSource, budget: int) -> SessionSource:
    """The source with its content cut to ``budget`` UTF-8 bytes (on a character boundary)."""
    cut = source.content.encode("utf-8")[: max(budget, 0)].decode("utf-8", errors="ignore")
    return replace(source, content=cut)


def project(
    *,
    scope_id: str,
    session_id: str,
    sources: Sequence[SessionSource],
    budget_bytes: int,
    redact: Redactor,
) -> Projection:
    """The session's sources (ordered by position), redacted first, then windowed: everything
    when it fits in ``budget_bytes``; otherwise the head (half the budget) and the tail (the
    rest), a boundary source cut to fit, ``truncated`` set."""
    ordered = sorted(sources, key=lambda s: s.position)
    redacted = [replace(s, content=redact(s.content)) for s in ordered]
    if sum(_size(s) for s in redacted) <= budget_bytes:
        return Projection(scope_id=scope_id, session_id=session_id, sources=tuple(redacted))
    head: list[SessionSource] = []
    room = budget_bytes // 2
    index = 0
    while index < len(redacted) and room > 0:
        source = redacted[index]
        head.append(source if _size(source) <= room else _cut(source, room))
        room -= _size(head[-1])
        index += 1
    tail: list[SessionSource] = []
    room = budget_bytes - sum(_size(s) for s in head)
    back = len(redacted) - 1
    while back >= index and room > 0:
        source = redacted[back]
        tail.append(source if _size(source) <= room else _cut(source, room))
        room -= _size(tail[-1])
        back -= 1
    return Projection(
        scope_id=scope_id, session_id=session_id, sources=tuple(head + tail[::-1]), truncated=True
    )


def _text_ok(value: object, max_chars: int) -> bool:
    return isinstance(value, str) and bool(value.strip()) and len(value) <= max_chars


def _evidence_ok(evidence: object) -> bool:
    return (
        isinstance(evidence, tuple)
        and 1 <= len(evidence) <= MAX_EVIDENCE
        and all(isinstance(e, str) and e for e in evidence)
    )


def _memory_ok(item: object) -> bool:
    return (
        isinstance(item, MemoryItem)
        and _text_ok(item.kind, MAX_KIND_CHARS)
        and _text_ok(item.text, MAX_MEMORY_BYTES)
        and len(item.text.encode("utf-8")) <= MAX_MEMORY_BYTES
        and _evidence_ok(item.evidence)
    )


def _experience_ok(item: object) -> bool:
    return (
        isinstance(item, ExperienceItem)
        and all(_text_ok(v, MAX_EXPERIENCE_FIELD_CHARS) for v in item.values())
        and _evidence_ok(item.evidence)
    )


def _schema_invalid(result: GeneratorResult) -> GeneratorResult:
    return GeneratorResult(outcome="schema_invalid", error_code="schema_invalid", usage=result.usage)


def _clean(text: str, redact: Redactor) -> str:
    return redact(text).strip()


def bind(result: GeneratorResult, *, session_source_ids: frozenset[str], redact: Redactor) -> GeneratorResult:
    """Hold ``result`` to the output schema (see the module docstring). A ``failed`` or
    ``schema_invalid`` result passes through unchanged."""
    if result.outcome in ("failed", "schema_invalid"):
        return result
    memories, experiences = result.memories, result.experiences
    if (
        not isinstance(memories, tuple)
        or not isinstance(experiences, tuple)
        or len(memories) + len(experiences) > MAX_ITEMS
        or not all(_memory_ok(m) for m in memories)
        or not all(_experience_ok(e) for e in experiences)
    ):
        return _schema_invalid(result)
    if result.outcome == "no_output" and (memories or experiences):
        return _schema_invalid(result)
    kept_memories = tuple(
        MemoryItem(kind=_clean(m.kind, redact), text=_clean(m.text, redact), evidence=m.evidence)
        for m in memories
        if set(m.evidence) <= session_source_ids
    )
    kept_experiences = tuple(
        ExperienceItem(
            **{name: _clean(value, redact) for name, value in e.as_mapping().items()},
            evidence=e.evidence,
        )
        for e in experiences
        if set(e.evidence) <= session_source_ids
    )
    return GeneratorResult(
        outcome="output" if kept_memories or kept_experiences else "no_output",
        memories=kept_memories,
        experiences=kept_experiences,
        usage=result.usage,
    )
