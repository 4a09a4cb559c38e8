"""Plain factories for the core domain (services only: the same path production writes take)."""

from __future__ import annotations

from itertools import count
from typing import Any

from powercontext.memory import services as memory_services

_counter = count(1)


def make_memory(
    scope_id: str = "repo", text: str | None = None, kind: str = "note", **extra: Any
) -> memory_services.MemoryMutation:
    if text is None:
        text = f"memory note number {next(_counter)}"
    return memory_services.memory_remember(scope_id=scope_id, kind=kind, text=text, **extra)


def citation_of(
    mutation: memory_services.MemoryMutation, *, at: int | None = None
) -> memory_services.Citation:
    """The citation a mutation returned, or the same entry version cited at revision ``at``."""
    assert mutation.entry is not None
    return memory_services.Citation(
        family="memory",
        artifact_id="memory",
        revision=mutation.revision if at is None else at,
        entry_id=mutation.entry.entry_id,
        entry_version_id=mutation.entry.entry_version_id,
    )
