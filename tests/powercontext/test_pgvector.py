"""The pgvector vector search path (``powercontext.search.vector_pgvector``) against a real
PostgreSQL with pgvector: the pgvector pass (scripts/test.sh with TEST_PGVECTOR_URL, a server
from scripts/pgvector_server.sh) runs these; elsewhere they are deselected (marker ``pgvector``).

The in-process path is the reference: for the same rows both must rank the same ids in the same
order with scores within 1e-5."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from powercontext import search
from powercontext.core.models import ExperienceVector, MemoryEntryVector
from powercontext.memory import services as memory_services
from powercontext.search import embedding, pending, vector_backend, vector_inprocess, vector_pgvector
from tests.powercontext.factories import citation_of, make_memory
from tests.powercontext.ranking_check import assert_same_memory_ranking as same_ranking
from tests.powercontext.test_experience_vectors import FILLER as EXPERIENCE_FILLER
from tests.powercontext.test_experience_vectors import STATUE, approve

pytestmark = [pytest.mark.pgvector, pytest.mark.django_db]

TEXTS = [
    "Ann painted a sunrise over the lake",
    "a watercolour of the dawn sky",
    "the weather was mild and sunny",
    "lunch is served at noon",
    "the office plants need water",
    "a meeting about the budget",
    "parking is behind the building",
    "Bob carved a marble statue of a horse",
    "deploys go out on tuesdays after review",
    "the database backup runs nightly",
    "rotate the API keys every ninety days",
    "the dog sleeps under the desk",
]
QUERIES = ["artwork of the morning sky", "stone sculpture of an animal", "when is food served", "secrets"]


def mirror_count(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {table}")
        return int(cursor.fetchone()[0])


def assert_same_memory_ranking(scope: str, query: str, limit: int) -> tuple[int, list[tuple[int, float]]]:
    return same_ranking(vector_pgvector, scope, query, limit)


def test_the_pass_has_pgvector_set_up_by_migrate() -> None:
    detected = vector_backend.vector_backend()

    assert detected.search == "pgvector" and detected.pgvector_set_up
    assert vector_backend.ranker() is vector_pgvector
    assert vector_pgvector.is_set_up()


def test_memory_rankings_equal_the_in_process_ones(embeddings: Any) -> None:
    for text in TEXTS:
        make_memory("rank", text)
    make_memory("other", "a sketch of the evening sky")  # never crosses scopes

    for query in QUERIES:
        for limit in (1, 3, len(TEXTS), 50):
            revision, ranked = assert_same_memory_ranking("rank", query, limit)
            assert len(ranked) == min(limit, len(TEXTS))
    top = search.vector_search_memory("rank", QUERIES[0], 2)
    assert [row.text for row in top][0] == TEXTS[0] or [row.text for row in top][0] == TEXTS[1]
    assert {row.head_revision for row in top} == {revision}


def test_identical_vectors_tie_by_membership_id(embeddings: Any) -> None:
    make_memory("tie", "the same words")
    make_memory("tie", "other words entirely")
    make_memory("tie", "the same words", kind="fact")  # a second entry with the identical vector

    _, ranked = assert_same_memory_ranking("tie", "the same words", 3)
    assert ranked[0][0] < ranked[1][0] and ranked[0][1] == ranked[1][1]


def test_head_moves_are_respected(embeddings: Any) -> None:
    mutations = [make_memory("move", text) for text in TEXTS[:6]]
    revision, ranked = assert_same_memory_ranking("move", QUERIES[0], 3)
    assert revision == mutations[-1].revision

    revised = memory_services.memory_revise(
        scope_id="move",
        citation=citation_of(mutations[0], at=revision),
        kind="note",
        text="Ann sold her boat",
    )
    retired = memory_services.memory_retire(
        scope_id="move", citation=citation_of(mutations[1], at=revised.revision)
    )
    moved, ranked = assert_same_memory_ranking("move", QUERIES[0], 10)

    assert moved == retired.revision
    texts = [row.text for row in search.vector_search_memory("move", QUERIES[0], 10)]
    assert TEXTS[0] not in texts and TEXTS[1] not in texts and "Ann sold her boat" in texts
    assert len(ranked) == 5
    # A scope without a head, and a head whose entries are all retired.
    assert (
        vector_pgvector.rank_memory("nobody", embedding.MODEL_ID, embedding.embedder().embed_query("x"), 5)
        is None
    )  # type: ignore[union-attr]
    single = make_memory("empty", "only entry")
    gone = memory_services.memory_retire(scope_id="empty", citation=citation_of(single))
    assert vector_pgvector.rank_memory(
        "empty", embedding.MODEL_ID, embedding.embedder().embed_query("x"), 5
    ) == (  # type: ignore[union-attr]
        gone.revision,
        [],
    )


def test_experience_rankings_equal_the_in_process_ones(embeddings: Any) -> None:
    heads = [approve("ev", STATUE), *(approve("ev", proposal) for proposal in EXPERIENCE_FILLER)]
    approve("elsewhere", STATUE)
    vector = embedding.embedder().embed_query("stone sculpture showing an animal")  # type: ignore[union-attr]

    for limit in (1, 2, 10):
        ours = vector_pgvector.rank_experience("ev", embedding.MODEL_ID, vector, limit)
        reference = vector_inprocess.rank_experience("ev", embedding.MODEL_ID, vector, limit)
        assert [(r.artifact_pk, r.revision, r.content) for r in ours] == [
            (r.artifact_pk, r.revision, r.content) for r in reference
        ]
        assert all(abs(a.score - b.score) < 1e-5 for a, b in zip(ours, reference, strict=True))
    assert ours[0].artifact_pk == heads[0].pk and len(ours) == len(heads)


def test_sync_and_async_writes_are_mirrored_and_deletes_follow(embeddings: Any, settings: Any) -> None:
    first = make_memory("w", TEXTS[0])
    approve("w", STATUE)
    assert mirror_count(vector_pgvector.MEMORY_TABLE) == MemoryEntryVector.objects.count() == 1
    assert mirror_count(vector_pgvector.EXPERIENCE_TABLE) == ExperienceVector.objects.count() == 1

    settings.POWERCONTEXT_EMBED_WRITES = "async"
    second = make_memory("w", TEXTS[1])
    assert mirror_count(vector_pgvector.MEMORY_TABLE) == 1  # not embedded yet
    pending.embed_pending("w", until_done=True)
    assert mirror_count(vector_pgvector.MEMORY_TABLE) == MemoryEntryVector.objects.count() == 2

    memory_services.memory_retire(scope_id="w", citation=citation_of(first, at=second.revision))
    pending.embed_pending("w", until_done=True)
    assert mirror_count(vector_pgvector.MEMORY_TABLE) == MemoryEntryVector.objects.count() == 1
    drift = vector_pgvector.compare()
    assert drift.ok and drift.checked == 2
    assert search.verify_index().ok


def test_rebuild_creates_and_fills_the_side_tables(embeddings: Any) -> None:
    for text in TEXTS[:5]:
        make_memory("rb", text)
    approve("rb", STATUE)
    vector_pgvector.teardown()  # as before an operator's first rebuild
    make_memory("rb", TEXTS[5])  # vector writes go on while not set up

    detected = vector_backend.vector_backend()
    assert detected.search == "in-process exact" and not detected.pgvector_set_up
    assert (
        detected.pgvector_state() == f"installed ({detected.pgvector}), not set up: run rebuild_search_index"
    )
    assert "pgvector_mirror" not in search.verify_index().as_dict()["vectors"]  # type: ignore[operator]
    expected = assert_in_process_search("rb")

    out = io.StringIO()
    call_command("rebuild_search_index", "--no-progress", stdout=out)

    assert f"vector search: pgvector; pgvector: installed ({detected.pgvector}), in use" in out.getvalue()
    assert mirror_count(vector_pgvector.MEMORY_TABLE) == 6
    assert mirror_count(vector_pgvector.EXPERIENCE_TABLE) == 1
    assert vector_backend.ranker() is vector_pgvector
    assert [row.text for row in search.vector_search_memory("rb", QUERIES[0], 6)] == expected
    call_command("rebuild_search_index", "--no-progress", stdout=io.StringIO())  # idempotent
    assert mirror_count(vector_pgvector.MEMORY_TABLE) == 6


def assert_in_process_search(scope: str) -> list[str]:
    vector_inprocess.clear_cache()
    found = [row.text for row in search.vector_search_memory(scope, QUERIES[0], 6)]
    assert scope in vector_inprocess._cache  # served in process
    return found


def test_verify_reports_a_drifted_mirror_and_repair_fixes_it(embeddings: Any) -> None:
    for text in TEXTS[:4]:
        make_memory("v", text)
    heads = [approve("v", STATUE), approve("v", EXPERIENCE_FILLER[0])]
    vector_ids = list(MemoryEntryVector.objects.order_by("id").values_list("id", flat=True))
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {vector_pgvector.MEMORY_TABLE} WHERE vector_id = %s", [vector_ids[0]])
        cursor.execute(
            f"UPDATE {vector_pgvector.MEMORY_TABLE} SET embedding = embedding - embedding WHERE vector_id = %s",
            [vector_ids[1]],
        )
        cursor.execute(
            f"INSERT INTO {vector_pgvector.MEMORY_TABLE} SELECT vector_id + 1000000, entry_version_id, scope_id,"
            f" model, embedding FROM {vector_pgvector.MEMORY_TABLE} WHERE vector_id = %s",
            [vector_ids[2]],
        )
        cursor.execute(
            f"UPDATE {vector_pgvector.EXPERIENCE_TABLE} SET revision = 9 WHERE head_id = %s", [heads[1].pk]
        )

    report = search.verify_index()
    assert not report.ok and report.vectors_missing == report.vectors_extra == 0
    assert report.as_dict()["vectors"]["pgvector_mirror"] == {  # type: ignore[index]
        "checked": 6,
        "missing": 1,
        "extra": 1,
        "mismatched": 2,
    }
    with pytest.raises(CommandError):
        call_command("rebuild_search_index", "--verify-only", stdout=io.StringIO())

    out = io.StringIO()
    call_command("rebuild_search_index", "--verify-only", "--repair", stdout=out)
    assert json.loads(out.getvalue())["repaired"] is True
    assert search.verify_index().ok
    assert vector_pgvector.compare().as_dict() == {"checked": 6, "missing": 0, "extra": 0, "mismatched": 0}
    assert_same_memory_ranking("v", QUERIES[0], 4)


def test_the_settings_auto_and_in_process_keep_the_in_process_path(embeddings: Any, settings: Any) -> None:
    for text in TEXTS[:6]:
        make_memory("force", text)
    by_pgvector = [row.text for row in search.vector_search_memory("force", QUERIES[0], 6)]
    assert "force" not in vector_inprocess._cache

    for setting in ("in-process", "auto"):
        settings.POWERCONTEXT_VECTOR_SEARCH = setting
        detected = vector_backend.vector_backend()

        assert detected.search == "in-process exact"
        assert detected.pgvector_state() == (
            f"installed ({detected.pgvector}), set up, not used (POWERCONTEXT_VECTOR_SEARCH=pgvector uses it)"
        )
        assert vector_backend.ranker() is vector_inprocess
        assert assert_in_process_search("force") == by_pgvector
    make_memory("force", TEXTS[6])  # the mirror is still kept, so switching back needs no rebuild
    assert vector_pgvector.compare().ok


@pytest.mark.django_db(transaction=True)
def test_a_flush_empties_the_mirror_with_the_vector_tables(embeddings: Any) -> None:
    make_memory("flush", TEXTS[0])
    assert mirror_count(vector_pgvector.MEMORY_TABLE) == 1

    call_command("flush", interactive=False, verbosity=0)  # TRUNCATE of the vector tables

    assert mirror_count(vector_pgvector.MEMORY_TABLE) == 0
    assert vector_pgvector.is_set_up()


def test_a_mirror_left_without_its_column_is_not_used_and_a_rebuild_recreates_it(embeddings: Any) -> None:
    for text in TEXTS[:3]:
        make_memory("col", text)
    with connection.cursor() as cursor:  # what DROP EXTENSION vector CASCADE leaves behind
        cursor.execute(f"ALTER TABLE {vector_pgvector.MEMORY_TABLE} DROP COLUMN embedding")
    vector_backend.forget_detection()

    assert not vector_pgvector.is_set_up()
    assert vector_backend.vector_backend().search == "in-process exact"
    make_memory("col", TEXTS[3])  # writes go on (the delete triggers do not need the column)
    expected = assert_in_process_search("col")

    call_command("rebuild_search_index", "--no-progress", stdout=io.StringIO())

    assert vector_backend.vector_backend().search == "pgvector"
    assert mirror_count(vector_pgvector.MEMORY_TABLE) == 4
    assert [row.text for row in search.vector_search_memory("col", QUERIES[0], 6)] == expected


def test_side_tables_removed_behind_a_process_back_fail_no_write_and_no_search(
    embeddings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for text in TEXTS[:4]:
        make_memory("gone", text)
    by_pgvector = [row.text for row in search.vector_search_memory("gone", QUERIES[0], 4)]
    with monkeypatch.context() as patched:  # another process tears down: this one keeps its cache
        patched.setattr(vector_backend, "forget_detection", lambda: None)
        vector_pgvector.teardown()
    assert vector_backend.vector_backend().search == "pgvector"  # still cached

    assert [row.text for row in search.vector_search_memory("gone", QUERIES[0], 4)] == by_pgvector
    assert vector_backend.vector_backend().search == "in-process exact"  # detected again
    with monkeypatch.context() as patched:
        patched.setattr(vector_backend, "forget_detection", lambda: None)
        vector_backend._set_up.add(vector_backend._database_key())  # cached once more
        make_memory("gone", TEXTS[4])  # the write's mirror step finds no table: the write commits
    assert MemoryEntryVector.objects.filter(scope_id="gone").count() == 5
    assert "pgvector side tables are gone" in caplog.text
