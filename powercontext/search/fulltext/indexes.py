"""The two search indexes and the rows each should hold.

Memory: one row per active membership of each scope's current head. Experience: one row per
recallable Experience head (``Artifact.recallable``), from its ``searchable_text``.
Each index can list, from authoritative rows only, the document rows it should hold; rebuild
and verify compare against that.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import models

from powercontext.core.models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    Artifact,
    ExperienceSearchDocument,
    MemoryMembership,
    MemorySearchDocument,
)
from powercontext.core.recall import EXPERIENCE_FAMILY, recallable_experience_heads
from powercontext.search.fulltext import analyzer

REBUILD_BATCH = 2000


@dataclass(frozen=True)
class Index:
    name: str
    model: type[models.Model]
    key: str  # the document's primary-key column (= the FTS5 rowid)
    fts_table: str
    # Yields (document pk, scope id, terms) for every authoritative row, ordered by pk.
    expected: Callable[[str | None], Iterator[tuple[int, str, list[str]]]]
    # The head rows whose writers maintain this index's rows (in the writer's transaction, holding
    # the head's row lock): a rebuild of a scope locks them too, so no writer commits half way.
    heads: Callable[[], models.QuerySet[Artifact]]

    def scopes(self) -> models.QuerySet[Artifact, str]:
        """The scope ids that have a head (ordered, distinct): evaluated when used, so a
        ``scope_id__in`` filter sees scopes created since the caller started."""
        return self.heads().order_by("scope_id").values_list("scope_id", flat=True).distinct()


def batched(rows: Any, pk: str) -> Iterator[Any]:
    last = 0
    while True:
        batch = list(rows.filter(**{f"{pk}__gt": last}).order_by(pk)[:REBUILD_BATCH])
        if not batch:
            return
        yield from batch
        last = batch[-1][0]


def _expected_memory(scope_id: str | None) -> Iterator[tuple[int, str, list[str]]]:
    rows = MemoryMembership.objects.filter(to_revision__isnull=True, state=MemoryMembership.State.ACTIVE)
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    for pk, scope, text in batched(rows.values_list("pk", "scope_id", "entry_version__text"), "pk"):
        yield pk, scope, analyzer.analyze(text)


def _expected_experience(scope_id: str | None) -> Iterator[tuple[int, str, list[str]]]:
    rows = recallable_experience_heads()
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    for pk, scope, text in batched(rows.values_list("pk", "scope_id", "searchable_text"), "pk"):
        yield pk, scope, text.split()


def _memory_heads() -> models.QuerySet[Artifact]:
    return Artifact.objects.filter(family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID)


def _experience_heads() -> models.QuerySet[Artifact]:
    return Artifact.objects.filter(family=EXPERIENCE_FAMILY)


MEMORY_INDEX = Index(
    "memory", MemorySearchDocument, "membership_id", "memory_fts", _expected_memory, _memory_heads
)
EXPERIENCE_INDEX = Index(
    "experience",
    ExperienceSearchDocument,
    "head_id",
    "experience_fts",
    _expected_experience,
    _experience_heads,
)
INDEXES = (MEMORY_INDEX, EXPERIENCE_INDEX)
# PostgreSQL's Memory postings: one row per index token and Memory index row (token, doc_key,
# tf, length), kept by triggers on the index rows (migration 0024; ``engines``).
POSTINGS = "powercontext_memoryposting"
# The Memory index's totals per scope (scope_id, documents, total_length: BM25's N and the sum
# its average length divides), kept by triggers on the index rows, both databases (migration 0025).
TOTALS = "powercontext_memoryindextotals"


def stored_rows(model: type[models.Model], scope_id: str | None, *columns: str) -> Iterator[Any]:
    """The index rows of ``model`` (of one scope, or all) as tuples of ``columns``, ordered by
    the first column and streamed in batches: the ``actual`` side of ``merge_join``."""
    rows = model._default_manager.all()
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    return rows.order_by(columns[0]).values_list(*columns).iterator(chunk_size=REBUILD_BATCH)


def merge_join(expected: Iterable[Any], actual: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
    """Merge-join two row streams ordered by their first column: ``(expected, actual)`` pairs
    with the same key, ``(expected, None)`` for a missing row, ``(None, actual)`` for an extra."""
    rows = iter(actual)
    have = next(rows, None)
    for want in expected:
        while have is not None and have[0] < want[0]:
            yield None, have
            have = next(rows, None)
        if have is not None and have[0] == want[0]:
            yield want, have
            have = next(rows, None)
        else:
            yield want, None
    while have is not None:
        yield None, have
        have = next(rows, None)


@dataclass
class VerifyReport:
    checked: int = 0
    missing: int = 0
    extra: int = 0
    mismatched: int = 0
    engine: list[str] = field(default_factory=list)
    repaired: bool = False
    # The vector index (entry versions active in their head), counted on its own; not checked
    # (``vectors_available`` False) when the model cannot load, since nothing could repair it.
    vectors_available: bool = True
    vectors_checked: int = 0
    vectors_missing: int = 0
    vectors_extra: int = 0
    vectors_mismatched: int = 0
    # With POWERCONTEXT_EMBED_WRITES=async a missing vector is the embedder's lag, not damage:
    # counted here instead of ``vectors_missing`` and not making the report fail.
    vectors_pending: int = 0
    # This process's in-process vector cache: bytes held and the bound (``vector_inprocess``).
    vector_cache: dict[str, int] = field(default_factory=dict)

    @property
    def vectors_ok(self) -> bool:
        return not (self.vectors_missing or self.vectors_extra or self.vectors_mismatched)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.mismatched or self.engine) and self.vectors_ok

    def as_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "missing": self.missing,
            "extra": self.extra,
            "mismatched": self.mismatched,
            "engine": list(self.engine),
            "repaired": self.repaired,
            "vectors": {
                "available": self.vectors_available,
                "checked": self.vectors_checked,
                "missing": self.vectors_missing,
                "extra": self.vectors_extra,
                "mismatched": self.vectors_mismatched,
                "pending": self.vectors_pending,
                "cache": dict(self.vector_cache),
            },
        }
