"""Vector search in SQLite with sqlite-vec: the driver that can load it, the ranking it gives
(the same as the in-process path on the same rows), the settings that choose it
(``POWERCONTEXT_VECTOR_SEARCH=sqlite-vec``; ``auto`` stays in process) or force the in-process
path, the reports, and the fallback to the in-process path on the standard library's driver.

On PostgreSQL nothing of this applies: the tests there check that the SQLite path stays out."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection

from powercontext import search
from powercontext.models import MemoryEntryVector, MemoryMembership
from powercontext.search import embedding, vector_backend, vector_inprocess, vector_sqlitevec, vectors
from powercontext.services import memory as memory_services
from tests.powercontext.factories import citation_of, make_memory
from tests.powercontext.ranking_check import assert_same_memory_ranking as same_ranking
from tests.powercontext.test_experience_vectors import FILLER as EXPERIENCE_FILLER
from tests.powercontext.test_experience_vectors import QUERY as EXPERIENCE_QUERY
from tests.powercontext.test_experience_vectors import STATUE, approve

ROOT = Path(__file__).resolve().parents[2]
EXPECT_SQLITE_VEC = os.environ.get("POWERCONTEXT_TEST_EXPECT_SQLITE_VEC") == "1"

TEXTS = [
    "Ann painted a sunrise over the lake",
    "the weather was mild and sunny",
    "lunch is served at noon",
    "the office plants need water",
    "a meeting about the budget",
    "parking is behind the building",
    "Bob repaired the bicycle chain",
    "the release train leaves on Thursday",
    "coffee machine on floor three is broken",
    "Carol wrote the onboarding guide",
    "the database migration ran overnight",
    "a watercolour of the dawn",
]
QUERIES = ["artwork of the morning sky", "fixing a bike", "when is the release", "food at midday"]


@pytest.fixture(autouse=True)
def fresh_detection(settings: Any) -> Iterator[None]:
    # Each test starts from the default path choice, whatever the pass set (tests change it).
    settings.POWERCONTEXT_VECTOR_SEARCH = "auto"
    vector_backend.forget_detection()
    yield
    vector_backend.forget_detection()


def sqlite_vec_loaded() -> str | None:
    connection.ensure_connection()
    return getattr(connection, "sqlite_vec_version", None)


def assert_same_memory_ranking(scope: str, query: str, limit: int) -> tuple[int, list[tuple[int, float]]]:
    return same_ranking(vector_sqlitevec, scope, query, limit)


# --- the driver and which path is used ----------------------------------------------------------


@pytest.mark.django_db
def test_sqlite_vec_is_loaded_where_the_platform_has_the_driver_and_used_when_chosen(settings: Any) -> None:
    by_default = vector_backend.vector_backend()
    # auto keeps the in-process path on both databases.
    assert by_default.search == vector_backend.IN_PROCESS
    assert vector_backend.ranker() is vector_inprocess
    settings.POWERCONTEXT_VECTOR_SEARCH = "sqlite-vec"
    chosen = vector_backend.vector_backend()
    if connection.vendor != "sqlite":
        assert chosen.search == vector_backend.IN_PROCESS and chosen.sqlite_vec is None
        assert "sqlite_vec" not in chosen.as_dict() and vector_backend.ranker() is vector_inprocess
        return
    from powercontext.db.sqlite3 import base

    version = sqlite_vec_loaded()
    if EXPECT_SQLITE_VEC:  # the SQLite CI pass on Linux x86_64: the wheels are installed
        assert base.driver() == "pysqlite3"
        assert version is not None and version.startswith("v")
    assert by_default.sqlite_vec == chosen.sqlite_vec == version
    if version is None:
        assert chosen.search == vector_backend.IN_PROCESS
        assert vector_backend.ranker() is vector_inprocess
        return
    assert by_default.sqlite_vec_state() == f"loaded ({version}), not used"
    assert chosen.search == f"sqlite-vec {version}" and chosen.sqlite_vec_state() == f"loaded ({version})"
    assert vector_backend.ranker() is vector_sqlitevec
    with connection.cursor() as cursor:
        cursor.execute("SELECT vec_version()")
        assert cursor.fetchone()[0] == version
        # Extension loading is switched off again once sqlite-vec is in.
        with pytest.raises(Exception, match="not authorized"):
            cursor.execute("SELECT load_extension('vec0')")
        # The bundled SQLite keeps what the rest of the service needs.
        cursor.execute("CREATE VIRTUAL TABLE temp.fts_probe USING fts5(body)")
        cursor.execute("DROP TABLE temp.fts_probe")


@pytest.mark.django_db
def test_in_process_setting_forces_the_in_process_path(settings: Any) -> None:
    settings.POWERCONTEXT_VECTOR_SEARCH = "in-process"

    detected = vector_backend.vector_backend()

    assert detected.search == vector_backend.IN_PROCESS
    assert vector_backend.ranker() is vector_inprocess
    if connection.vendor == "sqlite":
        version = sqlite_vec_loaded()
        state = "not loaded" if version is None else f"loaded ({version}), not used"
        assert detected.as_dict() == {
            "search": "in-process exact",
            "pgvector": "not applicable",
            "sqlite_vec": state,
        }
        assert detected.describe() == f"vector search: in-process exact; sqlite-vec: {state}"


def reports() -> tuple[str, dict[str, Any]]:
    out = io.StringIO()
    call_command("rebuild_search_index", "--no-progress", stdout=out)
    verify_out = io.StringIO()
    call_command("rebuild_search_index", "--verify-only", stdout=verify_out)
    return out.getvalue(), json.loads(verify_out.getvalue())["vectors"]


@pytest.mark.django_db
def test_reports_name_the_path_and_the_sqlite_vec_version(settings: Any) -> None:
    make_memory("alpha", "deploy the database")
    default_out, default_vectors = reports()
    settings.POWERCONTEXT_VECTOR_SEARCH = "sqlite-vec"
    out, vectors = reports()

    if connection.vendor != "sqlite":
        assert "sqlite_vec" not in vectors and "sqlite-vec" not in out + default_out
        assert vectors["search"] == default_vectors["search"] == "in-process exact"
        return
    version = sqlite_vec_loaded()
    assert default_vectors["search"] == "in-process exact"
    if version is None:
        assert vectors["search"] == "in-process exact" and vectors["sqlite_vec"] == "not loaded"
        assert "vector search: in-process exact; sqlite-vec: not loaded" in out
        return
    assert default_vectors["sqlite_vec"] == f"loaded ({version}), not used"
    assert f"vector search: in-process exact; sqlite-vec: loaded ({version}), not used" in default_out
    assert vectors["search"] == f"sqlite-vec {version}"
    assert vectors["sqlite_vec"] == f"loaded ({version})"
    assert f"vector search: sqlite-vec {version}; sqlite-vec: loaded ({version})" in out


# --- the same ranking as in process ------------------------------------------------------------


def require_sqlite_vec() -> bool:
    """Whether this database can run the sqlite-vec statements. False on PostgreSQL and on a
    SQLite driver without sqlite-vec (a platform without the wheels: never on the CI pass, which
    expects it), where the test asserts the path is not chosen instead."""
    if connection.vendor == "sqlite" and sqlite_vec_loaded() is not None:
        return True
    assert not (EXPECT_SQLITE_VEC and connection.vendor == "sqlite"), "sqlite-vec is not loaded"
    assert vector_backend.ranker() is not vector_sqlitevec
    return False


@pytest.mark.django_db
def test_memory_ranking_matches_the_in_process_path(embeddings: Any) -> None:
    if not require_sqlite_vec():
        return
    for text in TEXTS:
        make_memory("same", text)
    rows = list(MemoryEntryVector.objects.filter(scope_id="same").order_by("pk"))
    # Ties (identical vectors: by membership id) and a vector of norm zero (score 0 both ways).
    MemoryEntryVector.objects.filter(pk=rows[3].pk).update(vector=rows[0].vector)
    MemoryEntryVector.objects.filter(pk=rows[5].pk).update(vector=rows[0].vector)
    MemoryEntryVector.objects.filter(pk=rows[7].pk).update(vector=b"\0" * 4 * embedding.DIMENSIONS)
    make_memory("other", "a painting of the morning")  # another scope's rows stay out

    for query in QUERIES:
        for limit in (1, 3, 5, len(TEXTS), 100):
            revision, ranked = assert_same_memory_ranking("same", query, limit)
            assert len(ranked) == min(limit, len(TEXTS))
    _, everything = assert_same_memory_ranking("same", QUERIES[0], 100)
    order = [pk for pk, _ in everything]
    tied = sorted(
        MemoryMembership.objects.filter(
            entry_version_id__in=[rows[i].entry_version_id for i in (0, 3, 5)], to_revision=None
        ).values_list("pk", flat=True)
    )
    at = order.index(tied[0])
    assert order[at : at + 3] == tied and len({score for pk, score in everything if pk in tied}) == 1
    zero = MemoryMembership.objects.get(entry_version_id=rows[7].entry_version_id, to_revision=None).pk
    assert dict(everything)[zero] == 0.0
    assert (
        vector_sqlitevec.rank_memory("nobody", embedding.MODEL_ID, np.ones(embedding.DIMENSIONS), 5) is None
    )
    assert vector_sqlitevec.rank_memory("same", "another-model", np.ones(embedding.DIMENSIONS), 5) == (
        revision,
        [],
    )


@pytest.mark.django_db
def test_identical_vectors_tie_by_membership_id(embeddings: Any) -> None:
    if not require_sqlite_vec():
        return
    for text in TEXTS[:4]:
        make_memory("tie", text)
    vector = MemoryEntryVector.objects.filter(scope_id="tie").order_by("pk").first()
    assert vector is not None
    MemoryEntryVector.objects.filter(scope_id="tie").update(vector=vector.vector)

    revision, ranked = assert_same_memory_ranking("tie", "anything at all", 10)

    assert [pk for pk, _ in ranked] == sorted(pk for pk, _ in ranked)
    assert len({score for _, score in ranked}) == 1


@pytest.mark.django_db
def test_the_ranking_follows_the_head_as_it_moves(embeddings: Any, settings: Any) -> None:
    settings.POWERCONTEXT_VECTOR_SEARCH = "sqlite-vec"  # the end-to-end searches below too
    if not require_sqlite_vec():
        return
    assert vector_backend.ranker() is vector_sqlitevec
    mutations = [make_memory("moving", text) for text in TEXTS[:6]]
    head = mutations[-1].revision
    revision, ranked = assert_same_memory_ranking("moving", QUERIES[0], 3)
    assert revision == head

    revised = memory_services.memory_revise(
        scope_id="moving", citation=citation_of(mutations[0], at=head), kind="note", text="Ann sold her boat"
    )
    retired = memory_services.memory_retire(
        scope_id="moving", citation=citation_of(mutations[1], at=revised.revision)
    )
    added = make_memory("moving", "a watercolour of the dawn")
    revision, ranked = assert_same_memory_ranking("moving", QUERIES[0], 10)

    assert revision == added.revision == retired.revision + 1
    assert len(ranked) == 6  # six entries: one revised (new membership), one retired, one added
    top = search.vector_search_memory("moving", QUERIES[0], 1)
    assert [row.text for row in top] == ["a watercolour of the dawn"] and top[0].head_revision == revision
    found = {row.text for row in search.vector_search_memory("moving", QUERIES[0], 10)}
    assert TEXTS[0] not in found and TEXTS[1] not in found and "Ann sold her boat" in found


@pytest.mark.django_db
def test_experience_ranking_matches_the_in_process_path(embeddings: Any, settings: Any) -> None:
    settings.POWERCONTEXT_VECTOR_SEARCH = "sqlite-vec"  # the end-to-end searches below too
    if not require_sqlite_vec():
        return
    assert vector_backend.ranker() is vector_sqlitevec
    for proposal in EXPERIENCE_FILLER:
        approve("ev", proposal)
    statue = approve("ev", STATUE)
    query_vector = embedding.embedder().embed_query(EXPERIENCE_QUERY)  # type: ignore[union-attr]

    for limit in (1, 2, 10):
        by_sql = vector_sqlitevec.rank_experience("ev", embedding.MODEL_ID, query_vector, limit)
        in_process = vector_inprocess.rank_experience("ev", embedding.MODEL_ID, query_vector, limit)
        assert [(r.artifact_pk, r.artifact_id, r.revision, r.content) for r in by_sql] == [
            (r.artifact_pk, r.artifact_id, r.revision, r.content) for r in in_process
        ]
        assert [r.score for r in by_sql] == pytest.approx([r.score for r in in_process], abs=1e-5)
        assert len(by_sql) == min(limit, len(EXPERIENCE_FILLER) + 1)
    assert by_sql[0].artifact_pk == statue.pk
    assert vectors.vector_search_experience("ev", EXPERIENCE_QUERY, 1)[0].key == statue.pk
    assert vector_sqlitevec.rank_experience("nobody", embedding.MODEL_ID, query_vector, 5) == []


# --- the standard library's driver ----------------------------------------------------------------

_FALLBACK = textwrap.dedent(
    """
    import json, sys
    sys.modules["pysqlite3"] = None  # as where the wheel is not installed: import fails
    import django
    django.setup()
    from django.core.management import call_command
    from django.db import connection
    call_command("migrate", verbosity=0)
    from powercontext import search
    from powercontext.db.sqlite3 import base
    from powercontext.search import vector_backend
    from powercontext.services import memory
    for text in ("Ann painted a sunrise over the lake", "lunch is served at noon"):
        memory.memory_remember(scope_id="fb", kind="note", text=text)
    found = search.vector_search_memory("fb", "artwork of the morning sky", 1)
    print(json.dumps({
        "driver": base.driver(),
        "loaded": connection.sqlite_vec_version,
        "report": vector_backend.vector_backend().as_dict(),
        "ranker": vector_backend.ranker().__name__,
        "found": [row.text for row in found],
    }))
    """
)


def test_on_the_standard_library_driver_vector_search_runs_in_process(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "powercontext.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'fallback.sqlite3'}",
        "POWERCONTEXT_DATA_DIR": str(tmp_path),
        "POWERCONTEXT_VECTOR_SEARCH": "sqlite-vec",  # asked for, but it cannot load
        "POWERCONTEXT_EMBED_WRITES": "sync",
    }
    env.pop("CELERY_BROKER_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", _FALLBACK], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])

    assert result["driver"] == "sqlite3" and result["loaded"] is None
    assert result["report"] == {
        "search": "in-process exact",
        "pgvector": "not applicable",
        "sqlite_vec": "not loaded",
    }
    assert result["ranker"] == "powercontext.search.vector_inprocess"
    assert result["found"] == ["Ann painted a sunrise over the lake"]


# --- the benchmark --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_benchmark_times_prepare_on_the_database_path_and_in_process_in_one_run(
    embeddings: Any, tmp_path: Path
) -> None:
    out = tmp_path / "bench.json"
    call_command(
        "bench",
        "--sections",
        "store",
        "--sizes",
        "30",
        "--samples",
        "4",
        "--json",
        str(out),
        stdout=io.StringIO(),
    )
    store = json.loads(out.read_text())["store"]
    row = store["sizes"]["30"]

    backend = vector_backend.vector_backend()
    own = "sqlite-vec" if backend.sqlite_vec else "pgvector" if backend.pgvector_set_up else None
    if own is None:  # the database has no path of its own: nothing to compare
        assert "vector_paths" not in row and not EXPECT_SQLITE_VEC
        return
    if own == "sqlite-vec":
        assert store["driver"] == "pysqlite3"
    paths = row["vector_paths"]
    assert paths["path"] == own
    assert paths["version"] == (backend.sqlite_vec or backend.pgvector)
    for name in (own, "in-process"):
        assert set(paths[name]) == {"prepare_p50_ms", "prepare_p95_ms", "rank_p50_ms", "rank_p95_ms"}
        assert 0 < paths[name]["prepare_p50_ms"] <= paths[name]["prepare_p95_ms"]
    slug = own.replace("-", "_")
    assert paths[f"prepare_p50_{slug}_vs_in_process"] == pytest.approx(
        paths[own]["prepare_p50_ms"] / paths["in-process"]["prepare_p50_ms"], abs=0.01
    )
    assert paths["in_process_first_rank_ms"] > 0
