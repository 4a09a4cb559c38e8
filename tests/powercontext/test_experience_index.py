"""The Experience index joins rebuild and verify: rebuilt from authoritative heads."""

from __future__ import annotations

import math

import pytest

from powercontext import search
from powercontext.core.models import Artifact, ExperienceSearchDocument
from powercontext.search.fulltext import analyzer, language_id
from tests.powercontext.test_search_context import approve_experience


def recall(scope: str, query: str) -> list[tuple[str, int]]:
    return [
        (hit.artifact_ref.artifact_id, hit.artifact_ref.revision)
        for hit in search.search_experience(scope, query, 8)
    ]


@pytest.mark.django_db
def test_a_rebuild_recreates_experience_rows_from_approved_heads_only() -> None:
    for i in range(5):
        approve_experience("exp", f"rollback lesson {i}")
    approve_experience("exp", "rollback skills stay out", family="skill")
    before = recall("exp", "rollback lesson")
    assert len(before) == 5

    ExperienceSearchDocument.objects.all().delete()
    assert recall("exp", "rollback lesson") == []
    report = search.verify_index(scope_id="exp")
    assert report.missing == 5 and not report.ok

    search.rebuild_index(scope_id="exp")
    assert recall("exp", "rollback lesson") == before
    assert ExperienceSearchDocument.objects.count() == 5
    assert search.verify_index().ok


@pytest.mark.django_db
def test_verify_detects_an_experience_row_that_no_longer_matches_its_head() -> None:
    candidate = approve_experience("exp", "cache invalidation lesson")
    head = Artifact.objects.get(pk=candidate.result_head_id)
    assert head.searchable_text == analyzer.searchable_text(
        ["deploying", "migrate first", "fine", "cache invalidation lesson"]
    )
    ExperienceSearchDocument.objects.filter(head=head).update(
        terms=search.engine().document_terms("exp", ["something", "else"])
    )
    report = search.verify_index()
    assert report.mismatched == 1
    assert search.verify_index(repair=True).repaired
    assert search.verify_index().ok
    assert recall("exp", "cache invalidation") == [(head.artifact_id, 1)]


@pytest.mark.django_db
def test_experience_ranks_a_long_prompt_by_bm25_over_its_index_rows() -> None:
    # Each matched head scores FTS5's BM25 of its own index row (term counts, length) with the
    # scope's Experience statistics, whatever the prompt's length; a head matching no term is
    # left out.
    lessons = [
        "rollback rollback rollback the release",
        "rollback the release after the weekly review of every open change",
        "water the office plants",
        "cache invalidation needs a version key",
        "unrelated lesson about lunch",
    ]
    for lesson in lessons:
        approve_experience("exp-long", lesson)
    prompt = "rollback release weekly review water office plants cache version key invalidation tea biscuits"
    terms = analyzer.query_terms(prompt, language_id.identify(prompt))
    assert len(terms) > 8
    db = search.engine()
    tokens = analyzer.scope_tokens("exp-long", terms)
    rows = list(
        ExperienceSearchDocument.objects.filter(scope_id="exp-long").values_list("head_id", "terms", "length")
    )
    counts = {head: [db.token_count(stored, token) for token in tokens] for head, stored, _ in rows}
    n, average = len(rows), sum(length for _, _, length in rows) / len(rows)
    expected = {}
    for head, _, length in rows:
        total = 0.0
        for i, tf in enumerate(counts[head]):
            if tf:
                df = sum(1 for other in counts.values() if other[i])
                idf = max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6)
                total += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
        if total:
            expected[head] = total

    hits = search.search_experience("exp-long", prompt, 8)

    assert [hit.key for hit in hits] == sorted(expected, key=lambda head: (-expected[head], head))
    assert len(hits) == 4  # the lunch lesson shares no word with the prompt
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.key] / (1 + expected[hit.key]), rel=1e-5)
