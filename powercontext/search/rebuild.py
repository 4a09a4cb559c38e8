"""Rebuild and verify both indexes, full text and vectors: recompute their rows from
authoritative rows at any time.

Only derived rows change, so citations are untouched; each scope is rebuilt in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import models, transaction

from powercontext.search.fulltext import bm25
from powercontext.search.fulltext.engines import Engine, engine
from powercontext.search.fulltext.indexes import INDEXES, REBUILD_BATCH, Index, merge_join, stored_rows
from powercontext.search.fulltext.indexes import VerifyReport as VerifyReport
from powercontext.search.vectors import embedding, vector_cache
from powercontext.search.vectors.vector_index import (
    rebuild_vectors,
    verify_experience_vectors,
    verify_vectors,
)


def count_expected(scope_id: str | None = None) -> int:
    return sum(1 for index in INDEXES for _ in index.expected(scope_id))


def _rebuild_scope(index: Index, scope: str, db: Engine, progress: Callable[[int], None] | None) -> int:
    written = 0
    with transaction.atomic():
        # Writers change a scope's index rows in their own transaction while holding its head's
        # row lock. Taking those locks first (in pk order, as writers that lock several heads do)
        # waits for a writer in flight and holds back the next, so what is deleted and what is
        # read below are one state: no writer's row reappears as a duplicate key, no entry
        # written meanwhile is left out. (SQLite: the IMMEDIATE transaction already excludes
        # every writer.)
        list(index.heads().filter(scope_id=scope).select_for_update().order_by("pk").values_list("pk"))
        index.model._default_manager.filter(scope_id=scope).delete()
        batch: list[models.Model] = []
        for pk, doc_scope, terms in index.expected(scope):
            stored, length = db.document(doc_scope, terms)
            batch.append(index.model(pk=pk, scope_id=doc_scope, terms=stored, length=length))
            if len(batch) >= REBUILD_BATCH:
                _insert(index, batch)
                written += len(batch)
                if progress:
                    progress(len(batch))
                batch = []
        if batch:
            _insert(index, batch)
            written += len(batch)
            if progress:
                progress(len(batch))
        db.settle_scope(index, scope)
    return written


def _insert(index: Index, rows: list[models.Model]) -> None:
    # A head created after the locks above were taken (a new Experience artifact) may commit
    # its own row, identical to the one computed here, before this insert: keep the writer's.
    index.model._default_manager.bulk_create(rows, ignore_conflicts=True)


def rebuild_index(*, scope_id: str | None = None, progress: Callable[[int], None] | None = None) -> int:
    """Recompute the index rows of one scope (or every scope) from authoritative rows.

    Each scope is rebuilt in one transaction, so a concurrent reader sees the old or the new
    rows, never a half-built index; citations are untouched because only derived rows change.
    Returns the number of rows written (Memory and Experience together).
    """
    db = engine()
    written = 0
    rebuild_vectors(scope_id=scope_id)
    for index in INDEXES:
        scopes = [scope_id] if scope_id is not None else list(index.scopes())
        for scope in scopes:
            written += _rebuild_scope(index, scope, db, progress)
        if scope_id is None:
            with transaction.atomic():
                # Rows of scopes without authoritative rows cannot come from the services, but
                # a full rebuild must converge whatever the index held. The scopes are read
                # again here, by the delete itself: a scope an agent created during the rebuild
                # keeps its rows.
                index.model._default_manager.exclude(scope_id__in=index.scopes()).delete()
            # Every scope's rows were written again, and the engine's structures with them (by
            # triggers, each scope's totals settled): refilled as a whole only if they still
            # differ (rows the engine kept for rows long gone). A refill holds writers back
            # (``Engine.repair_engine``), so it is not done when nothing needs it.
            if db.engine_problems(index):
                with transaction.atomic():
                    db.repair_engine(index)
    bm25.clear_cache()
    return written


def _verify(index: Index, scope_id: str | None, report: VerifyReport, db: Engine) -> set[str]:
    """Merge-compare expected and actual rows (both ordered by pk); return drifted scopes."""
    drifted: set[str] = set()
    actual = stored_rows(index.model, scope_id, "pk", "scope_id", "terms", "length")
    for want, have in merge_join(index.expected(scope_id), actual):
        if want is None:
            report.extra += 1
            drifted.add(have[1])
            continue
        report.checked += 1
        _, scope, terms = want
        if have is None:
            report.missing += 1
            drifted.add(scope)
        elif have[1] != scope or (have[2], have[3]) != db.document(scope, terms):
            report.mismatched += 1
            drifted.update({scope, have[1]})
    return drifted


def verify_index(*, scope_id: str | None = None, repair: bool = False) -> VerifyReport:
    """Compare both indexes with authoritative rows; optionally rebuild what drifted.

    The report carries counts only: no scope ids, entry ids or text.
    """
    report = VerifyReport(vector_cache=vector_cache.cache_stats())
    db = engine()
    drifted = {index.name: _verify(index, scope_id, report, db) for index in INDEXES}
    model = embedding.embedder()
    report.vectors_available = model is not None
    if model is not None:
        verify_vectors(scope_id, report, model.model_id)
        verify_experience_vectors(scope_id, report, model.model_id)
    broken = []
    for index in INDEXES:
        problems = db.engine_problems(index)
        report.engine.extend(problems)
        if problems:
            broken.append(index)
    if repair and (not report.ok or report.vectors_pending):
        if not report.vectors_ok or report.vectors_pending:
            rebuild_vectors(scope_id=scope_id)
        for index in INDEXES:
            for scope in sorted(drifted[index.name]):
                _rebuild_scope(index, scope, db, None)
        for index in broken:
            with transaction.atomic():
                db.repair_engine(index)
        bm25.clear_cache()
        report.repaired = True
    return report
