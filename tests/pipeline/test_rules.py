"""The ``rules`` generator, exactly as documented (pure: no database)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from powercontext.pipeline import rules
from powercontext.pipeline.generation import ExperienceItem, MemoryItem, Projection, SessionSource


def projection(*sources: SessionSource) -> Projection:
    return Projection(scope_id="s", session_id="x", sources=sources)


def prompt(source_id: str, content: str) -> SessionSource:
    return SessionSource(source_id=source_id, position=1, content=content, metadata={})


def task(source_id: str, content: str | dict[str, Any]) -> SessionSource:
    text = content if isinstance(content, str) else json.dumps(content)
    return SessionSource(source_id=source_id, position=1, content=text, metadata={"kind": "task-outcome"})


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("remember: the db port is 6543", ("remember", "the db port is 6543")),
        ("Remember:   spaced out  ", ("remember", "spaced out")),
        ("note: use uv", ("note", "use uv")),
        ("NOTE:use uv", ("note", "use uv")),
        ("decision: we ship on fridays", ("decision", "we ship on fridays")),
        ("gotcha: tests need redis", ("gotcha", "tests need redis")),
        ("- remember: bulleted", ("remember", "bulleted")),
        ("  * note: starred", ("note", "starred")),
        ("> gotcha: quoted", ("gotcha", "quoted")),
        ("always run make lint", ("rule", "always run make lint")),
        ("Always pin versions", ("rule", "always pin versions")),
        ("NEVER force push main", ("rule", "never force push main")),
        ("- never commit secrets", ("rule", "never commit secrets")),
        ("remember:", None),
        ("remember:    ", None),
        ("always", None),
        ("alwaysrun", None),
        ("I always forget", None),
        ("please remember: this is mid-line", None),
        ("reminder: not a keyword", None),
        ("", None),
        ("remember: " + "x" * 2001, None),
    ],
)
def test_memory_lines(line: str, expected: tuple[str, str] | None) -> None:
    assert rules.memory_line(line) == expected


def test_memories_are_deduplicated_per_session_and_cite_every_source_in_order() -> None:
    result = rules.generate(
        projection(
            prompt("a", "remember: one\nhello\nnever two"),
            prompt("b", "remember: one\nnote: three"),
        )
    )

    assert result.outcome == "output" and result.experiences == ()
    assert result.memories == (
        MemoryItem(kind="remember", text="one", evidence=("a", "b")),
        MemoryItem(kind="rule", text="never two", evidence=("a",)),
        MemoryItem(kind="note", text="three", evidence=("b",)),
    )


def test_nothing_matching_is_a_valid_empty_answer() -> None:
    result = rules.generate(projection(prompt("a", "fix the build please")))

    assert result.outcome == "no_output" and result.memories == () and result.experiences == ()


OUTCOME: dict[str, Any] = {
    "schema": "powercontext.task-outcome.v1",
    "trust": "untrusted_observation",
    "objective": "green the nightly build",
    "status": "failed",
    "summary": "bumped the resolver",
    "observations": [
        {"text": "the resolver pulls a broken transitive", "basis": "verified", "evidence": []},
        {"text": "pinning probably fixes it", "basis": "declared", "evidence": []},
    ],
    "checks": [
        {"name": "unit", "status": "failed", "basis": "verified", "evidence": []},
        {"name": "lint", "status": "skipped", "basis": "verified", "evidence": []},
        {"name": "e2e", "status": "passed", "basis": "declared", "evidence": []},
    ],
}


def test_a_json_task_outcome_becomes_one_experience_that_never_upgrades_a_check() -> None:
    result = rules.generate(projection(task("t", OUTCOME)))

    assert result.memories == ()
    assert result.experiences == (
        ExperienceItem(
            situation="green the nightly build",
            action="bumped the resolver",
            outcome=(
                "Reported status: failed.\n"
                "Check unit: failed (verified)\n"
                "Check lint: skipped (verified)\n"
                "Check e2e: passed (declared, not verified)"
            ),
            lesson="the resolver pulls a broken transitive\npinning probably fixes it (declared)",
            evidence=("t",),
        ),
    )


@pytest.mark.parametrize(
    "change",
    [
        {"status": "partial"},
        {"status": "blocked"},
        {"status": "cancelled"},
        {"status": "unknown"},
        {"observations": []},
        {"objective": ""},
        {"schema": "something.else.v1"},
    ],
)
def test_task_outcomes_that_teach_nothing_yield_no_experience(change: dict[str, Any]) -> None:
    result = rules.generate(projection(task("t", {**OUTCOME, **change})))

    assert result.outcome == "no_output"


def test_a_plain_text_task_outcome_is_declared() -> None:
    text = (
        "objective: speed up CI\nstatus: succeeded\nsummary: cached the venv\n"
        "observation: cache hits cut 4 minutes\ncheck: ci = passed\nremember: not a memory here"
    )

    result = rules.generate(projection(task("t", text)))

    assert result.memories == ()  # task outcomes are not scanned for memory lines
    (item,) = result.experiences
    assert item.situation == "speed up CI" and item.action == "cached the venv"
    assert item.outcome == "Reported status: succeeded.\nCheck ci: passed (declared, not verified)"
    assert item.lesson == "cache hits cut 4 minutes (declared)"


def test_a_missing_summary_is_reported_as_such_and_broken_json_yields_nothing() -> None:
    (item,) = rules.generate(projection(task("t", {**OUTCOME, "summary": None}))).experiences
    assert item.action == "Not reported."
    assert rules.generate(projection(task("t", "{not json"))).outcome == "no_output"
    assert rules.generate(projection(task("t", "[1, 2]"))).outcome == "no_output"


def test_the_generator_object_has_the_registry_name() -> None:
    generator = rules.RulesGenerator()
    assert generator.name == "rules"
    assert generator.generate(projection(prompt("a", "note: x"))).memories[0].text == "x"
