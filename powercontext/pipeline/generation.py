"""What a pipeline generator sees and answers (pure: no Django, no clock, no I/O).

Phase 1 builds a ``Projection`` of one session (a bounded head + tail window of its sources,
already redacted), hands it to the configured generator (``rules``, ``openai`` or ``off``) outside
any transaction, and gets a ``GeneratorResult`` back. Every item must cite sources of that session
only (``evidence`` holds their ``source_id``s); Phase 1 drops items with unknown citations and
redacts every output field again before anything is stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from powercontext.core.hits import ExperienceContent

# output: at least one item; no_output: a valid, empty answer (a no-op, seed 4.4);
# schema_invalid: the answer broke the output schema; failed: the call failed (error_code says how).
Outcome = Literal["output", "no_output", "schema_invalid", "failed"]


@dataclass(frozen=True)
class SessionSource:
    source_id: str
    position: int
    content: str  # redacted
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Projection:
    scope_id: str
    session_id: str
    sources: tuple[SessionSource, ...]
    truncated: bool = False  # the window left sources (or bytes) out between head and tail


@dataclass(frozen=True)
class MemoryItem:
    kind: str
    text: str
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class ExperienceItem(ExperienceContent):
    """An Experience a generator proposes: the family's fields (``ExperienceContent``, i.e.
    ``families.EXPERIENCE``), then the sources it cites."""

    evidence: tuple[str, ...]


@dataclass(frozen=True)
class GeneratorResult:
    outcome: Outcome
    memories: tuple[MemoryItem, ...] = ()
    experiences: tuple[ExperienceItem, ...] = ()
    error_code: str | None = None  # e.g. timeout, rate_limited, provider_error, schema_invalid
    usage: Mapping[str, int] = field(default_factory=dict)  # e.g. input_tokens, output_tokens


class Generator(Protocol):
    """A generator turns one projection into schema-bound output. It never raises for a
    provider problem: that is a ``failed`` result with an ``error_code``."""

    name: str

    def generate(self, projection: Projection) -> GeneratorResult: ...
