"""Projection window, output binding and the redaction placeholder (pure: no database)."""

from __future__ import annotations

import pytest

from powercontext.pipeline.generation import ExperienceItem, GeneratorResult, MemoryItem, SessionSource
from powercontext.pipeline.projection import bind, project
from powercontext.pipeline.redact import redact_text


def src(source_id: str, position: int, content: str) -> SessionSource:
    return SessionSource(source_id=source_id, position=position, content=content)


def test_a_session_that_fits_is_projected_whole_in_position_order() -> None:
    p = project(
        scope_id="s",
        session_id="x",
        sources=[src("b", 2, "two"), src("a", 1, "one")],
        budget_bytes=100,
        redact=str,
    )

    assert [s.source_id for s in p.sources] == ["a", "b"] and p.truncated is False


def test_a_long_session_keeps_its_head_and_tail_within_the_budget() -> None:
    sources = [src(f"s{i}", i, "x" * 100) for i in range(1, 21)]

    p = project(scope_id="s", session_id="x", sources=sources, budget_bytes=450, redact=str)

    assert p.truncated is True
    assert sum(len(s.content.encode()) for s in p.sources) <= 450
    ids = [s.source_id for s in p.sources]
    assert ids[0] == "s1" and ids[-1] == "s20" and "s10" not in ids


def test_secrets_are_redacted_before_the_window_is_cut() -> None:
    p = project(
        scope_id="s",
        session_id="x",
        sources=[src("a", 1, "key AKIAIOSFODNN7EXAMPLE here")],
        budget_bytes=20,
        redact=redact_text,
    )

    assert "AKIA" not in p.sources[0].content


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("AKIAIOSFODNN7EXAMPLE", "aws_access_key"),
        ("ghp_" + "a" * 36, "github_token"),
        ("sk-proj-" + "b" * 30, "openai_key"),
        ("xoxb-123456789012-abcdef", "slack_token"),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
            "jwt",
        ),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456", "bearer_token"),
        ("postgres://app:hunter2secret@db:5432/x", "connection_string_password"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "private_key"),
        ("aws_secret_access_key = " + "A" * 40, "aws_secret_key"),
    ],
)
def test_the_pipeline_redacts_obvious_secret_shapes(text: str, kind: str) -> None:
    redacted = redact_text(f"before {text} after")

    # The detector names its own types (``kind`` is what the shape is); what matters is that the
    # secret is gone, a marker stands in its place and the text around it survives.
    assert "[REDACTED:" in redacted and redacted.startswith("before ") and redacted.endswith(" after")
    secret = {"private_key": "MIIE", "connection_string_password": "hunter2secret"}.get(
        kind, text.split()[-1]
    )
    assert secret not in redacted, kind


def test_plain_text_is_left_alone() -> None:
    assert redact_text("run make lint on port 6543") == "run make lint on port 6543"


def exp(**overrides: object) -> ExperienceItem:
    values: dict[str, object] = {
        "situation": "s",
        "action": "a",
        "outcome": "o",
        "lesson": "l",
        "evidence": ("a",),
    }
    values.update(overrides)
    return ExperienceItem(**values)  # type: ignore[arg-type]


IDS = frozenset({"a", "b"})


def test_bind_drops_items_citing_unknown_sources_and_redacts_every_field() -> None:
    result = GeneratorResult(
        outcome="output",
        memories=(
            MemoryItem("note", "k AKIAIOSFODNN7EXAMPLE", ("a",)),
            MemoryItem("note", "x", ("a", "zzz")),
        ),
        experiences=(exp(lesson="AKIAIOSFODNN7EXAMPLE"), exp(evidence=("c",))),
        usage={"input_tokens": 3},
    )

    bound = bind(result, session_source_ids=IDS, redact=redact_text)

    assert bound.outcome == "output" and bound.usage == {"input_tokens": 3}
    assert bound.memories == (MemoryItem("note", "k [REDACTED:aws_access_key]", ("a",)),)
    assert [e.lesson for e in bound.experiences] == ["[REDACTED:aws_access_key]"]


def test_bind_turns_an_answer_with_only_foreign_citations_into_a_no_op() -> None:
    bound = bind(
        GeneratorResult(outcome="output", memories=(MemoryItem("n", "x", ("c",)),)),
        session_source_ids=IDS,
        redact=str,
    )

    assert bound.outcome == "no_output" and bound.memories == ()


@pytest.mark.parametrize(
    "result",
    [
        GeneratorResult(outcome="output", memories=(MemoryItem("", "x", ("a",)),)),
        GeneratorResult(outcome="output", memories=(MemoryItem("n", "  ", ("a",)),)),
        GeneratorResult(outcome="output", memories=(MemoryItem("n", "x", ()),)),
        GeneratorResult(outcome="output", memories=(MemoryItem("n", "é" * 4097, ("a",)),)),
        GeneratorResult(outcome="output", experiences=(exp(outcome=""),)),
        GeneratorResult(outcome="output", experiences=(exp(evidence=tuple(f"a{i}" for i in range(33))),)),
        GeneratorResult(outcome="no_output", memories=(MemoryItem("n", "x", ("a",)),)),
        GeneratorResult(outcome="output", memories=[MemoryItem("n", "x", ("a",))]),  # type: ignore[arg-type]
    ],
)
def test_bind_reports_schema_breaking_answers_as_schema_invalid(result: GeneratorResult) -> None:
    bound = bind(result, session_source_ids=IDS, redact=str)

    assert bound.outcome == "schema_invalid" and bound.error_code == "schema_invalid"


def test_failed_results_pass_through() -> None:
    failed = GeneratorResult(outcome="failed", error_code="timeout")

    assert bind(failed, session_source_ids=IDS, redact=str) is failed
