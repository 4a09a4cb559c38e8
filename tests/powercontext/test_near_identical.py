"""Near-identical candidates are collapsed before the builder (``powercontext.prepare.selection``):
two entries with the same words in the same order (case, punctuation, spacing and Unicode form
aside) take one slot, the better-ranked one; explain shows the other as its duplicate."""

from __future__ import annotations

import re
from typing import Any

import pytest

from powercontext.core.hits import ArtifactRef, MemoryHit
from powercontext.memory.services import memory_remember
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from powercontext.prepare.explain_selectors import prepare_explain
from powercontext.prepare.selection import admits, context_candidates, select, wording
from powercontext.search.ranking import relevance
from tests.review.factories import make_approved

HEAD = ArtifactRef(family="memory", artifact_id="memory", revision=1)


def hit(text: str, n: int) -> MemoryHit:
    return MemoryHit(memory_ref=HEAD, entry_id=f"e{n}", entry_version_id=f"v{n}", text=text)


def test_wording_ignores_case_punctuation_spacing_and_unicode_form_only() -> None:
    same = wording(hit("Use psycopg 3 for PostgreSQL.", 1))
    assert same == wording(hit("  use PSYCOPG 3 -- for postgresql  ", 2))
    assert same == wording(hit("Use ｐｓｙｃｏｐｇ ３ for PostgreSQL", 3))  # full-width forms (NFKC)
    assert wording(hit("STRASSE port", 4)) == wording(hit("straße port", 5))  # case folding
    assert wording(hit("the staging database runs on port 6543", 6)) != wording(
        hit("the staging database runs on port 5432", 7)
    )
    assert wording(hit("deploy on Fridays", 8)) != wording(hit("do not deploy on Fridays", 9))
    assert wording(hit("deploy on Fridays", 8)) != wording(hit("Fridays on deploy", 10))  # order counts
    assert wording(hit("🙂", 11)) is None and wording(hit("!!", 12)) is None


def test_a_near_identical_hit_gives_its_slot_to_the_next_one(settings: Any) -> None:
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY = 0
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SHARE = 0
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SIMILARITY = 0
    hits = [
        hit("Run ruff before every push.", 1),
        hit("run ruff before every push", 2),
        hit("🙂", 3),
        hit("🙂", 4),  # no words: never taken for another
        hit("Run RUFF, before every push!", 5),
        hit("Migrations run first.", 6),
        hit("Backups are restored weekly.", 7),
    ]

    kept, decisions = select("memory", hits, admits(hits, relevance.query_floor("ruff")), 4)

    assert [h.entry_id for h in kept] == ["e1", "e3", "e4", "e6"]
    assert [(d.rank, d.hit.entry_id, d.decision, d.reason, d.duplicate_of) for d in decisions] == [
        (5, "e2", "duplicate", "near_identical", 1),
        (6, "e5", "duplicate", "near_identical", 1),
        (7, "e7", "skipped", "window", None),
    ]


CITED = re.compile(r'"entry_id":\s*"([^"]+)"')


@pytest.mark.django_db
def test_a_pack_cites_one_of_two_near_identical_entries(embeddings: Any) -> None:
    check_one_of_two_cited()


@pytest.mark.django_db
def test_without_the_model_too() -> None:
    check_one_of_two_cited()


def check_one_of_two_cited() -> None:
    scope = "near-identical"
    first = memory_remember(scope_id=scope, kind="note", text="Use psycopg 3 for PostgreSQL connections.")
    second = memory_remember(scope_id=scope, kind="note", text="use psycopg 3 for postgresql connections")
    other = memory_remember(
        scope_id=scope, kind="note", text="psycopg 3 keeps a pool of PostgreSQL connections per worker."
    )
    ids = {m.entry.entry_id for m in (first, second, other) if m.entry is not None}
    assert len(ids) == 3  # three entries: their texts differ
    query = "psycopg PostgreSQL connections"

    prepared = ScopedContextApplication().prepare(PrepareRequest(scope_id=scope, query=query))

    cited = set(CITED.findall(prepared.content or ""))
    twins = {first.entry.entry_id, second.entry.entry_id}  # type: ignore[union-attr]
    assert len(cited & twins) == 1 and other.entry.entry_id in cited  # type: ignore[union-attr]
    found = context_candidates(scope_id=scope, query=query, memory_limit=16, experience_limit=8)
    (collapsed,) = [d for d in found.dropped if d.reason == "near_identical"]
    assert collapsed.hit.entry_id in twins - cited and collapsed.decision == "duplicate"
    explained = prepare_explain(scope_id=scope, query=query, max_bytes=8000)
    assert any(row.outcome == "duplicate of #1 (near_identical)" for row in explained.rows())


@pytest.mark.django_db
def test_experiences_with_the_same_wording_take_one_slot() -> None:
    lesson = {
        "situation": "The nightly backup failed",
        "action": "we restored from the replica",
        "outcome": "nothing was lost",
        "lesson": "check the backup job's exit code",
    }
    make_approved("exp-twins", proposal=lesson)
    make_approved("exp-twins", proposal={name: value.upper() + "." for name, value in lesson.items()})
    make_approved("exp-twins", proposal={**lesson, "outcome": "two hours of data were lost"})

    found = context_candidates(
        scope_id="exp-twins", query="nightly backup failed", memory_limit=16, experience_limit=8
    )

    assert sorted(h.content.outcome.lower() for h in found.experience_hits) == [
        "nothing was lost",
        "two hours of data were lost",
    ]
    assert [d.reason for d in found.dropped] == ["near_identical"]
