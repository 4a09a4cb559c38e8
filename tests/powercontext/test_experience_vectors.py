"""Experience vectors: one per recallable Experience head at its current revision, written by the
same paths as Memory's (``sync`` in the approving transaction, ``async`` by the embedder after
commit), rebuilt and verified with them, and fused into prepare's Experience window. Runs on
both databases."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from django.db import connection, transaction
from django.db.models import Count, Max
from django.test.utils import CaptureQueriesContext

from powercontext import search
from powercontext.core.hits import ExperienceContent
from powercontext.core.models import Artifact, ArtifactRevision, ExperienceVector
from powercontext.core.recall import EXPERIENCE_FAMILY
from powercontext.memory.artifacts import artifact_head_retire
from powercontext.prepare.selection import context_candidates
from powercontext.search.vectors import embedding, pending, vector_cache, vector_index, vector_inprocess
from review import services as review
from tests.powercontext.factories import make_memory
from tests.review.factories import make_approved, make_candidate, make_reviewer, result_ref

# Shares no word (and no stem) with QUERY: only the vector ranking can find it.
STATUE = {
    "situation": "Bob carved a marble statue of a horse",
    "action": "he chiselled for weeks",
    "outcome": "the figure was finished",
    "lesson": "patience with marble",
}
QUERY = "stone sculpture showing an animal"
FILLER = [
    {
        "situation": f"the weather report number {n}",
        "action": "read the forecast",
        "outcome": "it was sunny",
        "lesson": "check the weather first",
    }
    for n in range(3)
]

# Shares one word ("showing") with QUERY and nothing of its meaning.
DASHBOARD = {
    "situation": "the dashboard was showing stale numbers",
    "action": "cleared the cache",
    "outcome": "fresh numbers",
    "lesson": "cache dashboards briefly",
}


def seed_window() -> None:
    """A word match, three unrelated heads, then the meaning match (approved last: largest pk)."""
    approve("ev", DASHBOARD)
    for proposal in FILLER:
        approve("ev", proposal)
    approve("ev", STATUE)


def approve(scope: str, proposal: dict[str, str], **fields: Any) -> Artifact:
    approved, _ = make_approved(scope, proposal=proposal, **fields)
    assert approved.result_head is not None
    return Artifact.objects.get(pk=approved.result_head.pk)


def vector_of(head: Artifact) -> ExperienceVector | None:
    return ExperienceVector.objects.filter(head_id=head.pk).first()


def prepare_body(api: Any, scope: str, query: str) -> dict[str, Any]:
    response = api.post("/v1/context/prepare", {"scope_id": scope, "query": query})
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def window(scope: str, query: str) -> list[str]:
    found = context_candidates(scope_id=scope, query=query, memory_limit=16, experience_limit=2)
    return [hit.content.situation for hit in found.experience_hits]


@pytest.mark.django_db
def test_a_sync_approval_writes_the_vector_of_the_head_at_its_revision(embeddings: Any) -> None:
    head = approve("ev", STATUE)

    row = vector_of(head)
    assert row is not None
    assert (row.revision, row.scope_id, row.model) == (1, "ev", embedding.MODEL_ID)
    stored = embedding.from_bytes(row.vector)
    assert stored.tolist() == pytest.approx(embeddings.embed(head.searchable_text).tolist(), abs=1e-6)


@pytest.mark.django_db
def test_an_approval_never_fails_when_the_model_is_missing() -> None:
    head = approve("ev", STATUE)

    assert head.current_revision == 1 and vector_of(head) is None
    assert search.missing_vectors("ev", 10) == [
        vector_index.VectorWork(head.pk, "ev", head.searchable_text, experience=True)
    ]
    assert window("ev", "marble statue") == [STATUE["situation"]]


@pytest.mark.django_db
def test_an_async_approval_is_embedded_after_commit(
    embeddings: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.POWERCONTEXT_EMBED_WRITES = "async"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        head = approve("ev", STATUE)

    assert vector_of(head) is None and len(callbacks) == 1
    assert search.scopes_missing_vectors() == ["ev"]
    report = search.verify_index(scope_id="ev")
    assert report.ok and report.vectors_pending == 1

    run = pending.embed_pending("ev", until_done=True)

    assert (run.written, run.remaining) == (1, False)
    row = vector_of(head)
    assert row is not None and row.revision == 1
    assert search.missing_vectors("ev", 10) == []
    assert search.verify_index(scope_id="ev").vectors_pending == 0


@pytest.mark.django_db
def test_the_embedder_stores_nothing_for_a_head_that_moved_while_it_embedded(
    embeddings: Any, settings: Any
) -> None:
    settings.POWERCONTEXT_EMBED_WRITES = "async"
    head = approve("ev", STATUE)
    batch = search.missing_vectors("ev", 10)
    with transaction.atomic():
        Artifact.objects.filter(pk=head.pk).update(state=Artifact.State.RETIRED, recallable=False)

    assert vector_index.store_vectors(embeddings, batch) == 0
    assert vector_of(head) is None


@pytest.mark.django_db
def test_a_new_revision_replaces_the_vector_and_a_retired_head_loses_it(embeddings: Any) -> None:
    approved, first = make_approved("ev", proposal=STATUE)
    head = Artifact.objects.get(pk=approved.result_head_id)
    old = vector_of(head)
    assert old is not None

    candidate = make_candidate(
        "ev", proposal={**STATUE, "lesson": "a better lesson"}, artifact_refs=[first], target=first
    )
    review.candidate_approve(
        scope_id="ev", candidate_id=candidate.candidate_id, expected_version=1, reviewer=make_reviewer()
    )
    head.refresh_from_db()
    new = vector_of(head)
    assert new is not None and head.current_revision == 2
    assert new.revision == 2 and new.pk != old.pk and new.vector != old.vector
    assert result_ref(approved)["revision"] == 1

    with transaction.atomic():  # the artifact kernel retires the head, in its transaction
        artifact_head_retire(head=head)
    assert vector_of(head) is None
    assert search.verify_index(scope_id="ev").ok


@pytest.mark.django_db
def test_verify_counts_experience_vectors_and_repair_restores_them(embeddings: Any) -> None:
    heads = [approve("ev", STATUE), *(approve("ev", proposal) for proposal in FILLER)]
    assert search.verify_index().ok
    before = search.verify_index().vectors_checked

    ExperienceVector.objects.filter(head_id=heads[0].pk).delete()
    ExperienceVector.objects.filter(head_id=heads[1].pk).update(vector=b"\0" * 4 * embedding.DIMENSIONS)
    ExperienceVector.objects.filter(head_id=heads[2].pk).update(revision=7)
    retired = heads[3]
    Artifact.objects.filter(pk=retired.pk).update(
        state=Artifact.State.RETIRED, recallable=False
    )  # its vector is now extra
    report = search.verify_index()

    assert not report.ok
    assert (report.vectors_missing, report.vectors_mismatched, report.vectors_extra) == (1, 2, 1)
    assert report.vectors_checked == before - 1

    search.rebuild_index()
    assert search.verify_index().ok
    assert vector_of(heads[0]) is not None and vector_of(retired) is None
    assert ExperienceVector.objects.get(head_id=heads[2].pk).revision == 1


def floor_off(settings: Any) -> None:
    settings.POWERCONTEXT_RELEVANCE_MIN_SIMILARITY = 0.0
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SHARE = 0.0
    settings.POWERCONTEXT_RELEVANCE_MIN_LEXICAL_SIMILARITY = 0.0


@pytest.mark.django_db
def test_prepare_ranks_an_experience_found_only_by_meaning_into_its_window(
    embeddings: Any, settings: Any
) -> None:
    seed_window()
    lexical = [hit.content.situation for hit in search.search_experience("ev", QUERY, 32)]
    assert lexical == [DASHBOARD["situation"]]  # full text finds only the word match

    # The word-only match is below the relevance floor; the meaning match is not.
    assert window("ev", QUERY) == [STATUE["situation"]]
    floor_off(settings)
    assert window("ev", QUERY) == [DASHBOARD["situation"], STATUE["situation"]]


@pytest.mark.django_db
def test_without_the_model_prepare_ranks_experience_by_full_text_alone(settings: Any) -> None:
    seed_window()

    assert window("ev", QUERY) == []  # one shared word of four is below the floor
    floor_off(settings)
    assert window("ev", QUERY) == [DASHBOARD["situation"]]


@pytest.mark.django_db
def test_prepare_output_is_byte_identical_for_identical_inputs(embeddings: Any, api: Any) -> None:
    approve("ev", STATUE)
    for proposal in FILLER:
        approve("ev", proposal)
    api.remember("ev", "the horse statue stands in the garden")

    first = prepare_body(api, "ev", QUERY)
    second = prepare_body(api, "ev", QUERY)

    assert first["content"] == second["content"]
    assert STATUE["lesson"] in first["content"]


# -- the in-process cache of a scope's Experience vectors ---------------------------------------

# The ranking as read before the cache existed: every vector of the scope joined to its head at
# the vector's revision and to that revision's content, the recallable rule re-checked, in one
# statement; ranked by cosine, ties by head pk.
_UNCACHED_SQL = (
    f"SELECT a.id, a.artifact_id, a.current_revision, r.content, x.vector"
    f" FROM {ExperienceVector._meta.db_table} x"
    f" JOIN {Artifact._meta.db_table} a ON a.id = x.head_id AND a.current_revision = x.revision"
    f" JOIN {ArtifactRevision._meta.db_table} r ON r.head_id = a.id AND r.revision = a.current_revision"
    f" WHERE x.scope_id = %s AND a.scope_id = %s AND x.model = %s AND a.recallable"
)


def uncached(scope: str, query_vector: Any, limit: int) -> list[tuple[int, str, int, Any, float]]:
    with connection.cursor() as cursor:
        cursor.execute(_UNCACHED_SQL, [scope, scope, embedding.MODEL_ID])
        rows = cursor.fetchall()
    scored = [(float(np.dot(embedding.from_bytes(row[4]), query_vector)), int(row[0]), row) for row in rows]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [
        (
            pk,
            str(row[1]),
            int(row[2]),
            ExperienceContent.from_mapping(json.loads(row[3]) if isinstance(row[3], str) else row[3]),
            score,
        )
        for score, pk, row in scored[:limit]
    ]


def cached(scope: str, query_vector: Any, limit: int) -> list[tuple[int, str, int, Any, float]]:
    return [
        (hit.key, hit.artifact_ref.artifact_id, hit.artifact_ref.revision, hit.content, hit.score)
        for hit in vector_inprocess.rank_experience(scope, embedding.MODEL_ID, query_vector, limit)
    ]


def assert_same_ranking(scope: str, query_vector: Any, limit: int = 32) -> list[int]:
    got, want = cached(scope, query_vector, limit), uncached(scope, query_vector, limit)
    assert [row[:4] for row in got] == [row[:4] for row in want]
    assert [row[4] for row in got] == pytest.approx([max(0.0, row[4]) for row in want], abs=1e-5)
    return [row[0] for row in got]


def unit(rng: np.random.Generator) -> Any:
    vector = rng.standard_normal(embedding.DIMENSIONS).astype(np.float32)
    return vector / np.linalg.norm(vector)


def seed_heads(
    scope: str, count: int, rng: np.random.Generator, start: int = 0, vector_ids: list[int] | None = None
) -> list[Artifact]:
    """Recallable heads at revision 1 with a random vector each, written directly (no model)."""
    heads = []
    for i, n in enumerate(range(start, start + count)):
        head = Artifact.objects.create(
            scope_id=scope,
            family=EXPERIENCE_FAMILY,
            artifact_id=f"exp_{n}",
            current_revision=1,
            searchable_text=f"lesson {n}",
            recallable=True,
        )
        ArtifactRevision.objects.create(
            head=head,
            scope_id=scope,
            family=EXPERIENCE_FAMILY,
            artifact_id=head.artifact_id,
            revision=1,
            content={"situation": f"situation {n}"},
            searchable_text=head.searchable_text,
        )
        ExperienceVector.objects.create(
            pk=vector_ids[i] if vector_ids else None,
            head=head,
            revision=1,
            scope_id=scope,
            model=embedding.MODEL_ID,
            vector=embedding.to_bytes(unit(rng)),
        )
        heads.append(head)
    return heads


def queries_of(call: Any) -> int:
    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured.captured_queries)


@pytest.mark.django_db
def test_the_cached_ranking_equals_a_full_read_after_approve_revise_retire_and_rebuild(
    embeddings: Any, settings: Any
) -> None:
    query = embeddings.embed_query(QUERY)
    approve("ev", DASHBOARD)
    for proposal in FILLER:
        approve("ev", proposal)
    approved, first = make_approved("ev", proposal=STATUE)
    statue = Artifact.objects.get(pk=approved.result_head_id)
    assert assert_same_ranking("ev", query)[:1] == [statue.pk]  # cold: the scope is read

    approve("ev", {**STATUE, "situation": "a bronze sculpture of a stallion"})  # approve
    assert len(assert_same_ranking("ev", query)) == 6

    candidate = make_candidate(  # a new revision of the statue
        "ev", proposal={**STATUE, "lesson": "patience with stone"}, artifact_refs=[first], target=first
    )
    review.candidate_approve(
        scope_id="ev", candidate_id=candidate.candidate_id, expected_version=1, reviewer=make_reviewer()
    )
    assert_same_ranking("ev", query)
    assert [row[2] for row in cached("ev", query, 32) if row[0] == statue.pk] == [2]

    with transaction.atomic():  # retire the statue through the artifact kernel
        statue.refresh_from_db()
        artifact_head_retire(head=statue)
    assert statue.pk not in assert_same_ranking("ev", query)

    dashboard = Artifact.objects.get(scope_id="ev", searchable_text__contains="dashboard")
    ExperienceVector.objects.filter(head_id=dashboard.pk).delete()  # a lost vector, then repair
    assert dashboard.pk not in assert_same_ranking("ev", query)
    settings.POWERCONTEXT_EMBED_WRITES = "async"
    assert pending.embed_pending("ev", until_done=True).written == 1  # the embedder: no cache reset
    assert dashboard.pk in assert_same_ranking("ev", query)
    ExperienceVector.objects.filter(head_id=dashboard.pk).delete()
    assert vector_index.rebuild_vectors(scope_id="ev") == 1
    assert dashboard.pk in assert_same_ranking("ev", query)


@pytest.mark.django_db
def test_a_warm_cache_never_returns_a_retired_or_superseded_head() -> None:
    rng = np.random.default_rng(7)
    heads = seed_heads("ev", 6, rng)
    retired, superseded = heads[0], heads[1]
    query = embedding.from_bytes(ExperienceVector.objects.get(head=retired).vector)  # retired ranks first
    superseded_vector = embedding.from_bytes(ExperienceVector.objects.get(head=superseded).vector)
    query = (query + 0.9 * superseded_vector) / np.linalg.norm(query + 0.9 * superseded_vector)
    assert assert_same_ranking("ev", query, 3)[:2] == [retired.pk, superseded.pk]  # warm

    # Heads changed behind the cache, their vectors left in place (a write racing the key read,
    # or a writer that skipped the index): the key is unchanged, the hits read catches both.
    Artifact.objects.filter(pk=retired.pk).update(state=Artifact.State.RETIRED, recallable=False)
    ArtifactRevision.objects.create(
        head=superseded,
        scope_id="ev",
        family=EXPERIENCE_FAMILY,
        artifact_id=superseded.artifact_id,
        revision=2,
        parent_revision=1,
        content={"situation": "moved on"},
    )
    Artifact.objects.filter(pk=superseded.pk).update(current_revision=2)

    found = assert_same_ranking("ev", query, 3)
    assert retired.pk not in found and superseded.pk not in found and len(found) == 3
    # From the warm cache: the key with the best 3 heads (two passed over), then the next 6.
    assert queries_of(lambda: vector_inprocess.rank_experience("ev", embedding.MODEL_ID, query, 3)) == 2
    assert [row[2] for row in cached("ev", query, 6)] == [1, 1, 1, 1]


@pytest.mark.django_db
def test_the_key_sees_a_change_that_keeps_the_count_and_the_largest_id() -> None:
    """On PostgreSQL writers of two heads of one scope commit in either order: a vector whose id
    is below the largest can appear while another disappears. The count and the largest id stay
    the same; the key does not, so the cache is not used."""
    rng = np.random.default_rng(11)
    base = 10**9  # explicit ids, far above what the sequence hands out in a test run
    heads = seed_heads("ev", 4, rng, vector_ids=[base + 100, base + 200, base + 300, base + 400])
    query = unit(rng)
    assert_same_ranking("ev", query)
    before = ExperienceVector.objects.filter(scope_id="ev").aggregate(n=Count("id"), top=Max("id"))

    late = seed_heads("ev", 1, rng, start=10, vector_ids=[base + 250])[0]  # committed late
    ExperienceVector.objects.filter(head=heads[1]).delete()  # the other writer's delete

    assert ExperienceVector.objects.filter(scope_id="ev").aggregate(n=Count("id"), top=Max("id")) == before
    found = assert_same_ranking("ev", query)
    assert late.pk in found and heads[1].pk not in found
    # The key is the ids as one text; read in another order it still names the same set.
    assert vector_inprocess._key_ids(f"{base + 300},{base + 100}") == (base + 100, base + 300)


@pytest.mark.django_db
def test_a_warm_call_reads_the_same_number_of_statements_at_5_and_50_heads() -> None:
    rng = np.random.default_rng(3)
    query = unit(rng)
    counts = []
    for scope, size in (("few", 5), ("many", 50)):
        seed_heads(scope, size, rng, start=1000 * size)

        def rank(scope: str = scope) -> None:
            assert len(vector_inprocess.rank_experience(scope, embedding.MODEL_ID, query, 4)) == 4

        cold = queries_of(rank)
        warm = [queries_of(rank) for _ in range(3)]
        seed_heads(scope, 1, rng, start=1000 * size + 999)
        delta = queries_of(rank)
        counts.append((cold, warm, delta))
    # Cold: every row, then the heads. Warm: the key with the heads. After a write: that, the
    # added row, the heads of the new ranking.
    assert counts[0] == counts[1] == (2, [1, 1, 1], 3)


@pytest.mark.django_db
def test_the_experience_cache_is_bounded_in_bytes_like_memorys(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    query = unit(rng)
    for scope in ("s1", "s2", "s3"):
        seed_heads(scope, 3, rng, start=100 * int(scope[1]))
    vector_inprocess.rank_experience("s1", embedding.MODEL_ID, query, 2)
    one = vector_cache.cache_stats()["bytes"]  # one scope of 3 heads
    assert one >= 3 * embedding.DIMENSIONS * 4  # at least its float32 matrix
    monkeypatch.setattr(vector_cache, "cache_bound_bytes", lambda: 2 * one + one // 2)  # two fit
    for scope in ("s2", "s1", "s3"):  # s2 is the least recently used when s3 arrives
        vector_inprocess.rank_experience(scope, embedding.MODEL_ID, query, 2)
    assert len(vector_inprocess._experience_cache) == 2
    assert vector_inprocess._experience_cache.get("s2") is None
    assert vector_inprocess._experience_cache.get("s1") is not None
    assert vector_cache.cache_stats()["bytes"] <= 2 * one + one // 2


@pytest.mark.django_db
def test_the_scope_state_is_what_each_family_reads_for_itself() -> None:
    assert vector_inprocess.scope_state("none") == vector_inprocess.ScopeState(0, 0, "")
    rng = np.random.default_rng(11)
    seed_heads("ev", 3, rng)
    make_memory("ev", "the harbour opens at six")

    state = vector_inprocess.scope_state("ev")
    assert (state.revision, state.max_id) == vector_inprocess._head_and_max_id("ev")
    assert state.experience_key == vector_inprocess._key_and_hits("ev", [])[0]
    assert vector_inprocess._key_ids(state.experience_key) == tuple(
        sorted(ExperienceVector.objects.filter(scope_id="ev").values_list("id", flat=True))
    )


@pytest.mark.django_db
def test_a_key_read_ahead_ranks_like_the_ranking_s_own_read_and_sees_a_change() -> None:
    rng = np.random.default_rng(12)
    seed_heads("ev", 4, rng)
    query = unit(rng)
    assert_same_ranking("ev", query, 3)  # warm
    key = vector_inprocess.scope_state("ev").experience_key

    def ranked(key_text: str) -> list[int]:
        return [
            hit.key for hit in vector_inprocess.rank_experience("ev", embedding.MODEL_ID, query, 3, key_text)
        ]

    # The key read ahead: only the heads are read (one statement), the same ranking.
    assert queries_of(lambda: ranked(key)) == 1
    assert ranked(key) == assert_same_ranking("ev", query, 3)
    # A vector added since the cache was filled: the key read ahead names it, the ranking reads it.
    (added,) = seed_heads("ev", 1, rng, start=4)
    ExperienceVector.objects.filter(head=added).update(vector=embedding.to_bytes(query))
    assert ranked(vector_inprocess.scope_state("ev").experience_key)[0] == added.pk
    # A scope without Experience vectors: nothing to read at all.
    assert_same_ranking("empty", query, 3)
    empty = vector_inprocess.scope_state("empty").experience_key
    assert (
        queries_of(lambda: vector_inprocess.rank_experience("empty", embedding.MODEL_ID, query, 3, empty))
        == 0
    )


@pytest.mark.django_db
def test_a_hybrid_prepare_reads_both_families_vector_freshness_in_one_statement(embeddings: Any) -> None:
    seed_window()
    make_memory("ev", "the statue in the square is bronze")
    window("ev", QUERY)  # warm

    with CaptureQueriesContext(connection) as captured:
        assert window("ev", "a bronze horse in stone")
    statements = [q["sql"] for q in captured.captured_queries]
    # The Experience key (its vector ids, aggregated) is read once, with the Memory head and its
    # largest vector id, and the Memory head is not read again on its own.
    key_reads = [sql for sql in statements if "group_concat" in sql or "string_agg" in sql]
    assert len(key_reads) == 1 and "memoryentryvector" in key_reads[0]
    assert not [sql for sql in statements if sql.startswith("SELECT a.current_revision, (SELECT MAX(x.id)")]
