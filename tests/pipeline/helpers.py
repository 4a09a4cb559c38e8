"""Shared helpers for the pipeline tests: capture through the service, a deterministic stub
generator, one pass."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from powercontext.memory.sources import source_capture
from powercontext.pipeline import runner
from powercontext.pipeline.generation import (
    ExperienceItem,
    GeneratorResult,
    MemoryItem,
    Projection,
)

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def capture(scope_id: str, source_id: str, content: str, session: str | None = "s1", **metadata: Any) -> int:
    meta = {**({"session_id": session} if session is not None else {}), **metadata}
    return source_capture(scope_id=scope_id, source_id=source_id, content=content, metadata=meta).position


def memory(text: str, *evidence: str, kind: str = "note") -> MemoryItem:
    return MemoryItem(kind=kind, text=text, evidence=tuple(evidence))


def experience(lesson: str, *evidence: str) -> ExperienceItem:
    return ExperienceItem(
        situation="the nightly build broke on a resolver upgrade",
        action="pinned the resolver version",
        outcome="Reported status: succeeded.",
        lesson=lesson,
        evidence=tuple(evidence),
    )


class StubGenerator:
    """Answers whatever ``answer(projection)`` says; counts calls; never touches I/O."""

    name = "stub"

    def __init__(self, answer: Callable[[Projection], GeneratorResult] | GeneratorResult) -> None:
        self.answer = answer
        self.calls: list[Projection] = []

    def generate(self, projection: Projection) -> GeneratorResult:
        self.calls.append(projection)
        if isinstance(self.answer, GeneratorResult):
            return self.answer
        return self.answer(projection)


def output(*memories: MemoryItem, experiences: tuple[ExperienceItem, ...] = ()) -> GeneratorResult:
    return GeneratorResult(outcome="output", memories=memories, experiences=experiences)


NO_OUTPUT = GeneratorResult(outcome="no_output")
FAILED = GeneratorResult(outcome="failed", error_code="timeout")
PROVIDER_DOWN = GeneratorResult(outcome="failed", error_code="provider_error")


def run_pass(scope_id: str, generator: Any = None) -> runner.PassReport:
    return runner.run_pass(scope_id=scope_id, ignore_idle=True, generator=generator)
