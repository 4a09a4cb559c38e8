"""The pack's cut (``powercontext.prepare.cut``): after the relevance floor, selection leaves out
the Memory hits after the first whose estimated chance of being evidence is below
``POWERCONTEXT_PACK_CUT``; explain shows each estimate and the reason ``below_pack_cut``."""

from __future__ import annotations

import io
import json
import math
from typing import Any

import pytest
from django.core.management import call_command

from powercontext.core.hits import ArtifactRef, MemoryHit
from powercontext.memory.services import memory_remember
from powercontext.prepare import audit, cut
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from powercontext.prepare.cut import CutFigures, EvidenceModel, estimates, keeps
from powercontext.prepare.models import PrepareAggregate
from powercontext.prepare.selection import context_candidates, cut_figures, select
from powercontext.search.ranking import relevance

HEAD = ArtifactRef(family="memory", artifact_id="memory", revision=1)
SCOPE = "repo-cut"
NOTES = [
    "The staging database listens on port 6543; production uses the default 5432.",
    "Port numbers for every service are listed in deploy/ports.md.",
    "The staging database is restored from the nightly backup every Monday.",
    "Staging database: ok.",
    "database?",
    "Ruff runs before every push.",
]
QUERY = "Which port does the staging database listen on?"
GERMAN = "Auf welchem Port hört die Datenbank von Staging, und wo steht das?"


def figures(
    score: float,
    similarity: float | None = 0.5,
    lexical: float | None = 0.5,
    chars: int = 80,
    **more: Any,
) -> CutFigures:
    return CutFigures(score=score, similarity=similarity, lexical_share=lexical, chars=chars, **more)


def test_the_estimate_is_the_documented_logistic_of_the_eleven_figures() -> None:
    model = EvidenceModel(
        intercept=-1.0,
        position=-0.5,
        relative_score=2.0,
        score=1.0,
        similarity=0.5,
        similarity_gap=3.0,
        lexical_share=1.5,
        length=0.25,
        both_channels=0.7,
        asks=-0.9,
        speaker=1.1,
        near_better=0.6,
    )
    hits = [
        CutFigures(0.8, 0.6, 0.9, 120, both_channels=True, speaker=True, position=10),
        CutFigures(0.4, 0.3, None, 900, asks=True, position=12),
    ]
    first, second = estimates(hits, model)
    logit_first = -1.0 + 2.0 * 1.0 + 0.8 + 0.5 * 0.6 + 3.0 * 0.0 + 1.5 * 0.9 + 0.25 * 1.2 + 0.7 + 1.1
    # second: position 1, half the best score, 0.3 below the best similarity, no lexical share
    # measured (0), length capped at LENGTH_CAP characters, asks a question, one better hit
    # two entries away
    logit_second = (
        -1.0 - 0.5 * math.log(2) + 2.0 * 0.5 + 0.4 + 0.5 * 0.3 + 3.0 * -0.3 + 0.25 * 4.0 - 0.9 + 0.6
    )
    assert first == pytest.approx(1 / (1 + math.exp(-logit_first)))
    assert second == pytest.approx(1 / (1 + math.exp(-logit_second)))
    assert estimates([]) == []


def test_near_better_counts_the_better_placed_hits_remembered_within_two_entries() -> None:
    def near(*positions: int | None) -> list[float]:
        return [row[-1] for row in cut.figures([figures(1.0, position=p) for p in positions])]

    assert cut.FIGURES[-1] == "near_better"
    assert near(10, 12, 13, 7, 11) == [0, 1, 1, 0, 3]  # 7 is three from 10: not a neighbour
    assert near(10, 8, 9) == [0, 1, 2]  # before or after it in the head alike
    assert near(None, 10, None, 11) == [0, 0, 0, 1]  # place unknown: no neighbours either way
    assert near(10, 10) == [0, 1]


def test_what_the_cut_reads_of_a_hit() -> None:
    def read(
        text: str, matched_by: tuple[str, ...] = ("fts", "vector"), position: int | None = 4
    ) -> CutFigures:
        found = MemoryHit(HEAD, "e1", "v1", text, 0.5, matched_by, 0.4, 0.3, key=9, position=position)
        return cut_figures(found, {"caroline", "research"})

    plain = read("Caroline: I researched adoption agencies last week.")
    assert plain == CutFigures(0.5, 0.4, 0.3, 51, both_channels=True, asks=False, speaker=True, position=4)
    assert not read("Caroline: hi", matched_by=("vector",)).both_channels
    assert not read("Caroline: hi", matched_by=("fts",)).both_channels
    assert not read("Caroline: hi", matched_by=("neighbour",)).both_channels
    assert read("Caroline: what did you research?").asks
    assert read("Caroline: 研究は何でしたか\uff1f").asks  # full-width question mark
    assert read('Did it pass? "No," said Bob.').asks
    assert read("(did it pass?) no").asks
    # A question mark inside a link's query string asks nothing.
    assert not read("The dashboard is at https://grafana.example/d/db?orgId=1&refresh=30s now.").asks
    assert not read("Melanie: I researched it.").speaker  # a speaker the prompt does not name
    assert not read("I researched it with Caroline.").speaker  # no speaker label
    assert read("x", position=None).position is None


def test_the_fitted_model_reads_the_new_figures_the_way_the_dev_data_did() -> None:
    def second(**changes: Any) -> float:
        return estimates([figures(1.0, position=20), figures(0.5, **changes)])[1]

    base = second(position=40)
    assert second(position=40, asks=True) < base  # a question rarely carries the answer
    assert second(position=40, speaker=True) > base  # the speaker the prompt names
    assert second(position=21) > base  # remembered next to the best hit


def test_better_figures_raise_the_estimate_and_a_later_position_lowers_it() -> None:
    def second(**changes: Any) -> float:
        base = {"score": 0.5, "similarity": 0.4, "lexical": 0.3, "chars": 60}
        return estimates([figures(1.0), figures(**{**base, **changes})])[1]

    base = second()
    assert second(score=0.9) > base
    assert second(lexical=0.9) > base
    assert second(chars=300) > base
    assert second(chars=LONG) == second(chars=cut.LENGTH_CAP)  # length counts up to the cap
    early = estimates([figures(1.0), figures(0.5)])[1]
    late = estimates([figures(1.0), *[figures(0.99)] * 5, figures(0.5)])[-1]
    assert late < early


LONG = 5000


def test_the_first_hit_always_stays_and_the_threshold_is_inclusive() -> None:
    assert keeps([0.0, 0.035, 0.0349, 0.9], 0.035) == [True, True, False, True]
    assert keeps([0.0, 0.0], 0.0) == [True, True]  # 0: the cut is off
    assert keeps([], 0.5) == []


def hit(text: str, n: int) -> MemoryHit:
    return MemoryHit(memory_ref=HEAD, entry_id=f"e{n}", entry_version_id=f"v{n}", text=text)


def test_select_ranks_cut_hits_after_the_kept_ones_and_moves_duplicate_ranks_with_them() -> None:
    hits = [hit("alpha one", 1), hit("Alpha one.", 2), hit("beta two", 3), hit("gamma three", 4)]
    refused = {"e1", "e4"}

    kept, decisions = select(
        "memory", hits, [True] * 4, 8, keep=lambda kept: [h.entry_id not in refused for h in kept]
    )

    assert [h.entry_id for h in kept] == ["e3"]
    assert [(d.rank, d.hit.entry_id, d.reason, d.duplicate_of) for d in decisions] == [
        (2, "e1", "below_pack_cut", None),
        (3, "e4", "below_pack_cut", None),
        (4, "e2", "near_identical", 2),  # the copy of e1 points at e1's new rank
    ]


def remember_notes(scope_id: str = SCOPE) -> None:
    for note in NOTES:
        memory_remember(scope_id=scope_id, kind="note", text=note)


def explain_json(query: str = QUERY) -> dict[str, Any]:
    out = io.StringIO()
    call_command("explain_prepare", "--scope", SCOPE, "--query", query, "--json", stdout=out)
    return dict(json.loads(out.getvalue()))


@pytest.mark.django_db
def test_hits_below_the_threshold_leave_the_pack_and_explain_says_why(embeddings: Any, settings: Any) -> None:
    remember_notes()
    settings.POWERCONTEXT_PACK_CUT = 0
    everything = context_candidates(scope_id=SCOPE, query=QUERY, memory_limit=16, experience_limit=4)
    assert len(everything.memory_hits) >= 3 and everything.cut_threshold == 0

    settings.POWERCONTEXT_PACK_CUT = 0.5
    found = context_candidates(scope_id=SCOPE, query=QUERY, memory_limit=16, experience_limit=4)
    assert found.cut_threshold == 0.5
    assert len(found.estimates) == len(everything.memory_hits)  # every hit the floor kept is judged
    kept = [h.entry_version_id for h in found.memory_hits]
    expected = [
        h.entry_version_id
        for rank, h in enumerate(everything.memory_hits)
        if rank == 0 or found.estimates[f"m:{h.entry_version_id}"] >= 0.5
    ]
    assert kept == expected and len(kept) < len(everything.memory_hits)

    body = explain_json()
    assert body["pack_cut"] == 0.5
    memory_rows = [row for row in body["candidates"] if row["source"] == "memory"]
    cut_rows = [row for row in memory_rows if row["reason"] == "below_pack_cut"]
    assert cut_rows and all(row["evidence_estimate"] < 0.5 for row in cut_rows)
    for row in memory_rows:  # each estimate comes with the figures it was computed from
        figures_of = row["evidence_figures"]
        if row["evidence_estimate"] is None:
            assert figures_of is None
            continue
        assert list(figures_of) == list(cut.FIGURES)
        recomputed = cut.estimate([figures_of[name] for name in cut.FIGURES])
        assert recomputed == pytest.approx(row["evidence_estimate"], abs=1e-3)
    admitted = [row for row in memory_rows if row["decision"] == "admitted"]
    assert all(row["evidence_estimate"] >= 0.5 for row in admitted[1:])
    table = io.StringIO()
    call_command("explain_prepare", "--scope", SCOPE, "--query", QUERY, stdout=table)
    assert (
        "pack cut Memory hits after the first with an evidence estimate below 0.5 left out"
        in table.getvalue()
    )
    assert "skipped: below_pack_cut" in table.getvalue()


@pytest.mark.django_db
def test_the_default_cut_is_on_and_the_prepare_aggregate_counts_its_skips(
    embeddings: Any, settings: Any
) -> None:
    remember_notes()
    assert settings.POWERCONTEXT_PACK_CUT == 0.042
    settings.POWERCONTEXT_PACK_CUT = 0.99  # only the first hit survives
    audit.buffer().clear()
    ScopedContextApplication(audit=True).prepare(PrepareRequest(scope_id=SCOPE, query=QUERY))
    audit.buffer().flush()
    row = PrepareAggregate.objects.get(scope_id=SCOPE)
    found = context_candidates(scope_id=SCOPE, query=QUERY, memory_limit=16, experience_limit=4)
    assert row.memory_admitted == 1
    assert row.skipped_below_cut == sum(1 for d in found.dropped if d.reason == "below_pack_cut") > 0


@pytest.mark.django_db
def test_the_cut_stays_off_without_vectors_and_for_prompts_in_other_languages(
    embeddings: Any, settings: Any
) -> None:
    remember_notes()
    settings.POWERCONTEXT_PACK_CUT = 0.99
    assert relevance.query_floor(GERMAN).language == "de"
    german = context_candidates(scope_id=SCOPE, query=GERMAN, memory_limit=16, experience_limit=4)
    assert german.cut_threshold == 0 and not german.estimates
    assert not any(d.reason == "below_pack_cut" for d in german.dropped)
    assert "off (query language de)" in io_table(GERMAN)


@pytest.mark.django_db
def test_full_text_rankings_keep_the_floor_as_their_only_stop(settings: Any) -> None:
    remember_notes()  # no ``embeddings`` fixture: the model is off, ranking is full text
    settings.POWERCONTEXT_PACK_CUT = 0.99
    found = context_candidates(scope_id=SCOPE, query=QUERY, memory_limit=16, experience_limit=4)
    assert found.cut_threshold == 0 and len(found.memory_hits) >= 2
    assert "pack cut off (fts ranking)" in io_table(QUERY)


def io_table(query: str) -> str:
    out = io.StringIO()
    call_command("explain_prepare", "--scope", SCOPE, "--query", query, stdout=out)
    return out.getvalue()
