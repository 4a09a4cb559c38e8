"""The whole fake-secret corpus through the pipeline: no secret reaches the generator's input, a
stored output, a Memory entry, a candidate or a log line — neither from the captured sessions
(redaction before the generator) nor from a generator that answers with secrets of its own
(redaction after it)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from powercontext.core.models import ArtifactRevision, MemoryEntryVersion
from powercontext.pipeline.generation import ExperienceItem, GeneratorResult, MemoryItem, Projection
from powercontext.pipeline.models import PipelineOutput
from powercontext.pipeline.rules import RulesGenerator
from review.models import CandidateVersion
from tests.pipeline.helpers import capture, run_pass
from tests.pipeline.secret_corpus import CORPUS

SCOPE = "leaky"
pytestmark = pytest.mark.django_db


def fragments(secret: str) -> list[str]:
    """The secret and each of its lines long enough to identify it (a PEM block has several)."""
    return [secret, *(line for line in secret.splitlines() if len(line) >= 16)]


def leaks(text: str) -> list[str]:
    return [case.name for case in CORPUS for fragment in fragments(case.secret) if fragment in text]


def stored() -> str:
    rows = [
        *MemoryEntryVersion.objects.values_list("text", "kind", "source_refs"),
        *CandidateVersion.objects.values_list("proposal", "reason", "source_refs"),
        *PipelineOutput.objects.values_list("memories", "experiences"),
        *ArtifactRevision.objects.values_list("content", flat=True),
    ]
    return json.dumps(rows, default=str, ensure_ascii=False)


class Recording:
    """Wraps a generator and keeps every projection it was given."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.seen: list[Projection] = []

    def generate(self, projection: Projection) -> GeneratorResult:
        self.seen.append(projection)
        return self.inner.generate(projection)


class Echoing:
    """A generator that answers with every corpus secret, citing the session's sources."""

    name = "echo"

    def generate(self, projection: Projection) -> GeneratorResult:
        ids = tuple(source.source_id for source in projection.sources)
        texts = [case.text for case in CORPUS]
        return GeneratorResult(
            outcome="output",
            memories=tuple(
                MemoryItem(kind="note", text=f"leaked {text}", evidence=ids[:1]) for text in texts
            ),
            experiences=(
                ExperienceItem(
                    situation=texts[0],
                    action=texts[1],
                    outcome=texts[2],
                    lesson=" ".join(texts),
                    evidence=ids[:1],
                ),
            ),
        )


def capture_corpus() -> None:
    for index, case in enumerate(CORPUS):
        capture(SCOPE, f"s{index}", f"remember: {case.text}\nplease keep this", session="leaky-session")


def test_no_corpus_secret_reaches_the_generator_or_anything_stored(caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    capture_corpus()
    generator = Recording(RulesGenerator())

    report = run_pass(SCOPE, generator)

    assert generator.seen, report
    seen = json.dumps([[s.content for s in p.sources] for p in generator.seen], ensure_ascii=False)
    assert leaks(seen) == []
    assert "[REDACTED:" in seen
    assert MemoryEntryVersion.objects.filter(scope_id=SCOPE).exists()
    assert leaks(stored()) == []
    assert leaks(caplog.text) == []


def test_secrets_a_generator_answers_with_are_redacted_before_anything_is_stored(caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    capture(SCOPE, "s0", "an ordinary prompt about the build", session="leaky-session")

    run_pass(SCOPE, Echoing())

    assert MemoryEntryVersion.objects.filter(scope_id=SCOPE).exists()
    assert CandidateVersion.objects.exists()
    assert leaks(stored()) == []
    assert leaks(caplog.text) == []


def test_captured_sources_are_stored_redacted_and_a_retry_is_still_idempotent() -> None:
    from powercontext.core.models import Source

    positions = [capture(SCOPE, f"src-{i}", case.text) for i, case in enumerate(CORPUS)]
    again = [capture(SCOPE, f"src-{i}", case.text) for i, case in enumerate(CORPUS)]

    contents = json.dumps(list(Source.objects.values_list("content", "content_sha256")), ensure_ascii=False)
    assert leaks(contents) == []
    assert again == positions
    assert Source.objects.filter(scope_id=SCOPE).count() == len(CORPUS)


def test_redact_sources_cleans_rows_stored_before_capture_redacted() -> None:
    import io

    from django.core.management import call_command

    from powercontext.core.models import Source
    from powercontext.memory.sources import _digest

    for i, case in enumerate(CORPUS[:20]):  # stored raw, as before issue 20
        Source.objects.create(
            scope_id=SCOPE,
            source_type="content",
            source_id=f"old-{i}",
            content=case.text,
            content_sha256=_digest(case.text, {"session_id": "s1"}),
            metadata={"session_id": "s1"},
            position=i + 1,
        )
    out = io.StringIO()

    call_command("redact_sources", "--batch", "7", stdout=out)

    assert out.getvalue().strip() == "redacted 20 stored source(s)"
    assert leaks(json.dumps(list(Source.objects.values_list("content", flat=True)), ensure_ascii=False)) == []
    assert capture(SCOPE, "old-3", CORPUS[3].text) == 4  # a retried capture is still idempotent
    call_command("redact_sources", stdout=out)
    assert out.getvalue().strip().endswith("redacted 0 stored source(s)")
