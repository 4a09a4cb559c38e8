"""The two search indexes and the rows each should hold.

Memory: one row per active membership of each scope's current head. Experience: one row per
recallable Experience head (``Artifact.recallable``), from its ``searchable_text``.
Each index can list, from authoritative rows only, the document rows it should hold; rebuild
and verify compare against that.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
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
from powercontext.search import analyzer

REBUILD_BATCH = 2000


@dataclass(frozen=True)
class Index:
    name: str
    model: type[models.Model]
    key: str  # the document's primary-key column (= the FTS5 rowid)
    fts_table: str
    # Yields (document pk, scope id, terms) for every authoritative row, ordered by pk.
    expected: Callable[[str | None], Iterator[tuple[int, str, list[str]]]]
    scopes: Callable[[], list[str]]


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


def _memory_scopes() -> list[str]:
    return list(
        Artifact.objects.filter(family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID)
        .order_by("scope_id")
        .values_list("scope_id", flat=True)
    )


def _experience_scopes() -> list[str]:
    return list(
        Artifact.objects.filter(family=EXPERIENCE_FAMILY)
        .order_by("scope_id")
        .values_list("scope_id", flat=True)
        .distinct()
    )


MEMORY_INDEX = Index(
    "memory", MemorySearchDocument, "membership_id", "memory_fts", _expected_memory, _memory_scopes
)
EXPERIENCE_INDEX = Index(
    "experience",
    ExperienceSearchDocument,
    "head_id",
    "experience_fts",
    _expected_experience,
    _experience_scopes,
)
INDEXES = (MEMORY_INDEX, EXPERIENCE_INDEX)
