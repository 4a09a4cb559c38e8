"""The Experience index joins rebuild and verify: rebuilt from authoritative heads."""

from __future__ import annotations

import pytest

from powercontext import search
from powercontext.core.models import Artifact, ExperienceSearchDocument
from powercontext.search.fulltext import analyzer
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
