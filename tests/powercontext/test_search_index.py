"""The derived index: incremental maintenance, rebuild, verify, repair, the command and tasks."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from powercontext import search
from powercontext.core.models import MemorySearchDocument
from powercontext.memory import services as memory_services
from powercontext.memory.selectors import memory_search
from powercontext.search import tasks
from powercontext.search.fulltext import analyzer, bm25, engines
from tests.powercontext.factories import citation_of, make_memory

QUERIES = ["deploy database", "迁移", "🚀", "cafe\u0301", "tests", "note 7", "rollback plan"]


def seed_history() -> None:
    """Two scopes with adds, revisions and retirements: a realistic index to rebuild."""
    texts = [
        "deploy the database migration before the app",
        "数据库迁移需要先备份",
        "ship it 🚀 after the tests pass",
        "the café runs integration tests",
        "rollback plan: restore the snapshot",
    ]
    for scope in ("alpha", "Alpha"):
        mutations = [make_memory(scope, f"{text} ({scope})") for text in texts]
        mutations += [make_memory(scope, f"note {i} about tests") for i in range(12)]
        head = mutations[-1].revision
        revised = memory_services.memory_revise(
            scope_id=scope,
            citation=citation_of(mutations[0], at=head),
            kind="note",
            text=f"deploy the database carefully ({scope})",
        )
        memory_services.memory_retire(scope_id=scope, citation=citation_of(mutations[2], at=revised.revision))


def snapshot() -> dict[tuple[str, str], list[tuple[int, str, str, float]]]:
    results = {}
    for scope in ("alpha", "Alpha"):
        for query in QUERIES:
            found = memory_search(scope_id=scope, query=query, limit=50)
            results[(scope, query)] = [
                (h.revision, h.entry_id, h.entry_version_id, round(h.score, 9)) for h in found.hits
            ]
    return results


@pytest.mark.django_db
def test_a_rebuild_from_scratch_gives_the_same_results_as_the_incremental_index() -> None:
    seed_history()
    before = snapshot()
    assert any(before.values())

    MemorySearchDocument.objects.all().delete()
    assert all(not hits for hits in snapshot().values())
    written = search.rebuild_index()

    assert written == search.count_expected()
    assert snapshot() == before
    assert search.verify_index().ok


@pytest.mark.django_db
def test_the_index_holds_exactly_the_active_head_entries() -> None:
    seed_history()
    report = search.verify_index()
    assert report.ok, report.as_dict()
    # 17 remembered, one revised (still one row), one retired: 16 rows per scope.
    assert report.checked == 32
    assert MemorySearchDocument.objects.filter(scope_id="alpha").count() == 16


@pytest.mark.django_db
def test_verify_detects_a_corrupted_row_and_repair_restores_it() -> None:
    seed_history()
    before = snapshot()
    victim = MemorySearchDocument.objects.filter(scope_id="alpha").order_by("pk").first()
    MemorySearchDocument.objects.filter(pk=victim.pk).update(
        terms=search.engine().document_terms("alpha", ["garbage", "words"])
    )

    report = search.verify_index()
    assert not report.ok
    assert report.mismatched == 1 and report.missing == 0 and report.extra == 0

    repaired = search.verify_index(repair=True)
    assert repaired.repaired
    assert search.verify_index().ok
    assert snapshot() == before


@pytest.mark.django_db
def test_rows_of_the_previous_token_format_are_reported_and_a_rebuild_makes_them_searchable() -> None:
    make_memory("alpha", "Ann painted a sunrise")
    # Token format 2 indexed words unstemmed: what an index from before the upgrade holds.
    unstemmed = analyzer.scope_tokens("alpha", ["ann", "painted", "a", "sunrise"])
    if connection.vendor == "postgresql":
        old_terms = " ".join(f"{token}:{n}" for n, token in enumerate(unstemmed, start=1))
    else:
        old_terms = " ".join(unstemmed)
    MemorySearchDocument.objects.filter(scope_id="alpha").update(terms=old_terms)
    if connection.vendor == "sqlite":
        search.engine().repair_engine(search.MEMORY_INDEX)
    assert memory_search(scope_id="alpha", query="paintings", limit=5).hits == []

    report = search.verify_index(scope_id="alpha")
    assert report.mismatched == 1 and not report.ok

    call_command("rebuild_search_index", "--no-progress", stdout=io.StringIO(), stderr=io.StringIO())

    assert search.verify_index().ok
    assert [h.text for h in memory_search(scope_id="alpha", query="paintings", limit=5).hits] == [
        "Ann painted a sunrise"
    ]


@pytest.mark.django_db
def test_verify_detects_missing_and_extra_rows() -> None:
    seed_history()
    MemorySearchDocument.objects.filter(scope_id="Alpha").order_by("pk").first().delete()
    report = search.verify_index(scope_id="Alpha")
    assert (report.missing, report.extra) == (1, 0)
    # Scope filtering: the other scope is untouched and clean.
    assert search.verify_index(scope_id="alpha").ok


@pytest.mark.django_db
def test_verify_detects_engine_level_corruption_and_repairs_it() -> None:
    # SQLite: the FTS5 table; PostgreSQL: the Memory postings (migration 0024; its tsvector is a
    # generated column and cannot drift).
    seed_history()
    assert search.verify_index().ok  # the engine followed every add, revision and retirement
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("INSERT INTO memory_fts(rowid, terms) VALUES (999999, 'kbogus')")
        else:
            cursor.execute(f"INSERT INTO {engines.POSTINGS} VALUES ('kbogus', 999999, 1, 1)")
            cursor.execute(
                f"DELETE FROM {engines.POSTINGS} WHERE ctid IN (SELECT ctid FROM {engines.POSTINGS} LIMIT 1)"
            )
    report = search.verify_index()
    assert report.engine and not report.ok
    if connection.vendor == "postgresql":
        assert report.engine == ["memory: 2 postings differ from the documents"]
    search.verify_index(repair=True)
    assert search.verify_index().ok
    assert (
        memory_search(scope_id="alpha", query="rollback plan", limit=5)
        .hits[0]
        .text.startswith("rollback plan")
    )


@pytest.mark.django_db(transaction=True)
def test_the_engine_follows_updates_and_truncation_of_the_index_rows() -> None:
    seed_history()
    db = search.engine()
    row = MemorySearchDocument.objects.filter(scope_id="alpha").order_by("pk").first()
    stored, length = db.document("alpha", analyzer.analyze("zeppelin hangar"))
    MemorySearchDocument.objects.filter(pk=row.pk).update(terms=stored, length=length)
    assert db.engine_problems(search.INDEXES[0]) == []
    assert [hit.key for hit in memory_search(scope_id="alpha", query="zeppelin", limit=5).hits] == [row.pk]
    with connection.cursor() as cursor:
        table = MemorySearchDocument._meta.db_table
        cursor.execute(f"TRUNCATE {table}" if connection.vendor == "postgresql" else f"DELETE FROM {table}")
    assert db.engine_problems(search.INDEXES[0]) == []
    assert memory_search(scope_id="alpha", query="zeppelin", limit=5).hits == []
    assert memory_search(scope_id="alpha", query="rollback plan", limit=5).hits == []


@pytest.mark.django_db
def test_the_command_rebuilds_one_scope_and_reports() -> None:
    seed_history()
    MemorySearchDocument.objects.all().delete()
    out, err = io.StringIO(), io.StringIO()
    call_command("rebuild_search_index", "--scope", "alpha", stdout=out, stderr=err)
    assert "rebuilt 16 index rows" in out.getvalue()
    assert MemorySearchDocument.objects.filter(scope_id="alpha").count() == 16
    assert MemorySearchDocument.objects.filter(scope_id="Alpha").count() == 0


@pytest.mark.django_db
def test_the_command_verify_only_fails_on_drift_and_repairs_on_request() -> None:
    seed_history()
    MemorySearchDocument.objects.filter(scope_id="alpha").delete()
    with pytest.raises(CommandError):
        call_command("rebuild_search_index", "--verify-only", stdout=io.StringIO())
    out = io.StringIO()
    call_command("rebuild_search_index", "--verify-only", "--repair", stdout=out)
    assert json.loads(out.getvalue())["repaired"] is True
    out = io.StringIO()
    call_command("rebuild_search_index", "--verify-only", stdout=out)
    assert json.loads(out.getvalue())["ok"] is True


@pytest.mark.django_db
def test_the_tasks_rebuild_and_verify_in_eager_mode() -> None:
    seed_history()
    MemorySearchDocument.objects.all().delete()
    assert tasks.verify_search_index.delay().get()["missing"] == 32
    assert tasks.rebuild_search_index.delay().get() == {"rebuilt_rows": 32}
    assert tasks.verify_search_index.delay().get()["ok"] is True


@pytest.mark.django_db
def test_task_results_carry_no_scope_ids_or_text() -> None:
    seed_history()
    report = tasks.verify_search_index.delay(scope_id="alpha").get()
    assert "alpha" not in json.dumps(report)


def _totals() -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """(stored, counted): the Memory index's totals per scope as kept, and as counted."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT scope_id, documents, total_length FROM {engines.TOTALS} WHERE documents <> 0")
        stored = {scope: (int(n), int(total)) for scope, n, total in cursor.fetchall()}
        cursor.execute(
            f"SELECT scope_id, count(*), sum(length) FROM {MemorySearchDocument._meta.db_table} GROUP BY scope_id"
        )
        counted = {scope: (int(n), int(total)) for scope, n, total in cursor.fetchall()}
    return stored, counted


@pytest.mark.django_db
def test_the_memory_totals_follow_every_write_are_read_by_bm25_and_drift_is_repaired() -> None:
    seed_history()  # adds, revisions and retirements in two scopes
    stored, counted = _totals()
    assert stored == counted and set(counted) == {"alpha", "Alpha"}
    search.rebuild_index()  # a rebuild's rows (a bulk insert of a whole scope) count too
    assert _totals() == (counted, counted)

    documents, total = counted["alpha"]
    bm25.clear_cache()
    statistics = bm25.memory_statistics("alpha")
    assert (statistics.count, statistics.average_length) == (documents, total / documents)
    figures = bm25.scope_figures(search.MEMORY_INDEX, "alpha", [])
    assert (figures.count, figures.average_length) == (documents, total / documents)
    nothing = bm25.memory_statistics("no-such-scope")
    assert (nothing.head, nothing.count, nothing.average_length) == (None, 0.0, 0.0)

    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {engines.TOTALS} SET documents = documents + 1 WHERE scope_id = 'alpha'")
    report = search.verify_index()
    assert report.engine == ["memory: 2 scope totals differ from the documents"] and not report.ok
    search.verify_index(repair=True)
    assert search.verify_index().ok
    assert _totals() == (counted, counted)

    # A full rebuild converges too: a drifted scope's totals are set from its rows again, and
    # totals of a scope without rows (kept for rows long gone) are refilled away.
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {engines.TOTALS} SET total_length = total_length + 7 WHERE scope_id = 'Alpha'"
        )
        cursor.execute(f"INSERT INTO {engines.TOTALS} VALUES ('gone', 3, 30)")
    search.rebuild_index()
    assert _totals() == (counted, counted) and search.verify_index().ok
    with connection.cursor() as cursor:  # a scope's rebuild alone settles that scope's totals
        cursor.execute(f"UPDATE {engines.TOTALS} SET documents = documents + 2 WHERE scope_id = 'alpha'")
    search.rebuild_index(scope_id="alpha")
    assert _totals() == (counted, counted)
