"""The vector index's maintenance: which vectors are expected (Memory entries active in their
head, recallable Experience heads), the writers' own vectors (``add_vectors``: with
``POWERCONTEXT_EMBED_WRITES=sync``, in their transaction), verify by merge-join against the stored
rows, embed what is missing outside any transaction, and rebuild. Derived rows only: citations
never change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from django.conf import settings
from django.db import OperationalError, transaction
from django.db.models import Exists, OuterRef

from powercontext.core.models import (
    MEMORY_ARTIFACT_ID,
    MEMORY_FAMILY,
    Artifact,
    ExperienceVector,
    MemoryEntryVector,
    MemoryEntryVersion,
    MemoryMembership,
)
from powercontext.core.recall import recallable_experience_heads
from powercontext.search.fulltext.indexes import REBUILD_BATCH, VerifyReport, batched, merge_join, stored_rows
from powercontext.search.vectors import embedding, vector_cache

if TYPE_CHECKING:
    import numpy as np
else:
    from powercontext.search.lazy_numpy import np

EMBED_BATCH = 256
# Tries of store_vectors' write when it times out waiting for a writer's lock (PostgreSQL's
# lock_timeout, POWERCONTEXT_DB_LOCK_TIMEOUT_MS); the computed vectors are kept meanwhile.
WRITE_ATTEMPTS = 5


# -- writes (inside the writers' transactions) ---------------------------------------------------


def add_vectors(versions: Iterable[MemoryEntryVersion | tuple[int, str, str]]) -> int:
    """Embed and store the vectors of entry versions (objects or (pk, scope id, text)).

    Skipped, returning 0, when the model is unavailable: the index is derived and a write never
    fails for it; ``verify`` reports the missing rows once the model is back.
    """
    model = embedding.embedder()
    items = [(v.pk, v.scope_id, v.text) if isinstance(v, MemoryEntryVersion) else v for v in versions]
    if model is None or not items:
        return 0
    rows = [
        MemoryEntryVector(
            entry_version_id=pk,
            scope_id=scope,
            model=model.model_id,
            vector=embedding.to_bytes(model.embed(text)),
        )
        for pk, scope, text in items
    ]
    MemoryEntryVector.objects.filter(entry_version_id__in=[pk for pk, _, _ in items]).delete()
    MemoryEntryVector.objects.bulk_create(rows)
    return len(rows)


def add_experience_vector(head: Artifact) -> int:
    """Embed and store the vector of a recallable Experience head at its current revision (in
    the writer's transaction); skipped, returning 0, when the model is unavailable."""
    model = embedding.embedder()
    if model is None:
        return 0
    ExperienceVector.objects.filter(head_id=head.pk).delete()
    ExperienceVector.objects.create(
        head_id=head.pk,
        revision=head.current_revision,
        scope_id=head.scope_id,
        model=model.model_id,
        vector=embedding.to_bytes(model.embed(head.searchable_text)),
    )
    return 1


def remove_vectors_of_memberships(membership_ids: Sequence[int]) -> None:
    if membership_ids:
        MemoryEntryVector.objects.filter(
            entry_version_id__in=MemoryMembership.objects.filter(pk__in=membership_ids).values(
                "entry_version_id"
            )
        ).delete()


# -- verify, embed what is missing, rebuild ------------------------------------------------------


def _expected_vectors(scope_id: str | None) -> Iterator[tuple[int, str, str]]:
    """(entry version pk, scope id, text) of every entry version active in its current head,
    ordered by entry version pk."""
    rows = MemoryMembership.objects.filter(to_revision__isnull=True, state=MemoryMembership.State.ACTIVE)
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    yield from batched(
        rows.values_list("entry_version_id", "scope_id", "entry_version__text"), "entry_version_id"
    )


def _sound(model_id: str, actual: tuple[int, str, str, bytes | memoryview], expected_scope: str) -> bool:
    vector = actual[3]
    if actual[1] != expected_scope or actual[2] != model_id or len(vector) != 4 * embedding.DIMENSIONS:
        return False
    # A damaged vector is rarely still of unit length (every stored vector is normalized).
    return abs(float(np.linalg.norm(embedding.from_bytes(vector))) - 1.0) < 1e-3


def verify_vectors(
    scope_id: str | None, report: VerifyReport, model_id: str
) -> tuple[list[int], list[VectorWork]]:
    """Merge-compare expected and stored vectors; return (rows to delete, versions to embed)."""
    actual = stored_rows(MemoryEntryVector, scope_id, "entry_version_id", "scope_id", "model", "vector")
    verdicts = _Verdicts(report)
    for want, have in merge_join(_expected_vectors(scope_id), actual):
        if want is None:
            verdicts.unexpected(have[0])
        elif have is None:
            verdicts.absent(VectorWork(*want))
        else:
            verdicts.present(VectorWork(*want), sound=_sound(model_id, have, want[1]))
    return verdicts.delete, verdicts.embed


class VectorWork(NamedTuple):
    """One vector to compute: of an entry version (``pk`` = its pk) or, with ``experience``, of a
    recallable Experience head (``pk`` = the head's pk). Memory and Experience vectors share the
    missing query, the embedder and ``store_vectors``."""

    pk: int
    scope_id: str
    text: str
    experience: bool = False


@dataclass
class _Verdicts:
    """What a verify found, Memory's and Experience's alike: the counts (in the report), the
    vectors to delete (by ``pk``) and the ones to compute again."""

    report: VerifyReport
    delete: list[int] = field(default_factory=list)
    embed: list[VectorWork] = field(default_factory=list)
    lag_is_pending: bool = field(default_factory=lambda: settings.POWERCONTEXT_EMBED_WRITES == "async")

    def unexpected(self, pk: int) -> None:
        self.report.vectors_extra += 1
        self.delete.append(pk)

    def absent(self, work: VectorWork) -> None:
        """Expected and not stored: pending while async writes lag, missing otherwise."""
        self.report.vectors_checked += 1
        if self.lag_is_pending:
            self.report.vectors_pending += 1
        else:
            self.report.vectors_missing += 1
        self.embed.append(work)

    def present(self, work: VectorWork, *, sound: bool) -> None:
        self.report.vectors_checked += 1
        if not sound:
            self.report.vectors_mismatched += 1
            self.delete.append(work.pk)
            self.embed.append(work)


def _expected_experience(scope_id: str | None) -> dict[int, tuple[str, str, int]]:
    """head pk -> (scope id, searchable text, current revision) of every recallable head."""
    heads = recallable_experience_heads()
    if scope_id is not None:
        heads = heads.filter(scope_id=scope_id)
    return {
        int(pk): (str(scope), str(text), int(revision))
        for pk, scope, text, revision in heads.values_list(
            "pk", "scope_id", "searchable_text", "current_revision"
        )
    }


def verify_experience_vectors(
    scope_id: str | None, report: VerifyReport, model_id: str
) -> tuple[list[int], list[VectorWork]]:
    """Compare recallable Experience heads with their vectors (few rows: read at once); return
    (head pks whose vector to delete, work items to embed). Counted with Memory's."""
    expected = _expected_experience(scope_id)
    rows = ExperienceVector.objects.all()
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    verdicts = _Verdicts(report)
    actual = {
        int(row[0]): row for row in rows.values_list("head_id", "scope_id", "model", "vector", "revision")
    }
    for pk in sorted(actual):
        if pk not in expected:
            verdicts.unexpected(pk)
    for pk, (scope, text, revision) in sorted(expected.items()):
        work = VectorWork(pk, scope, text, experience=True)
        have = actual.get(pk)
        if have is None:
            verdicts.absent(work)
        else:
            sound = have[4] == revision and _sound(model_id, (pk, have[1], have[2], have[3]), scope)
            verdicts.present(work, sound=sound)
    return verdicts.delete, verdicts.embed


def _missing_experience(scope_id: str | None) -> Any:
    heads = recallable_experience_heads().filter(experience_vector__isnull=True)
    return heads.filter(scope_id=scope_id) if scope_id is not None else heads


def _memory_gaps(scope_id: str | None) -> Any:
    """Active memberships whose entry version has no vector row (of any model): an anti-join of
    the memberships on the vectors' one-to-one column, nothing else read. Joining the versions
    first (the ORM's way through ``entry_version__vector``) read every active version's row, text
    included, to keep the few without a vector: at 100,000 entries ~0.55 s on PostgreSQL (~0.1 s
    on SQLite) for each call, and the embedder calls this twice per write."""
    gaps = MemoryMembership.objects.filter(
        ~Exists(MemoryEntryVector.objects.filter(entry_version_id=OuterRef("entry_version_id"))),
        to_revision__isnull=True,
        state=MemoryMembership.State.ACTIVE,
    )
    return gaps.filter(scope_id=scope_id) if scope_id is not None else gaps


def missing_vectors(scope_id: str | None, limit: int) -> list[VectorWork]:
    """Up to ``limit`` work items with no vector row, oldest first: entry versions active in
    their head, then recallable Experience heads — what the after-commit embedder still has to
    do. The gap's version ids are found first (``_memory_gaps``: indexes only, no text), then
    the texts of those alone."""
    ids = list(
        _memory_gaps(scope_id).order_by("entry_version_id").values_list("entry_version_id", flat=True)[:limit]
    )
    texts = {
        pk: (scope, text)
        for pk, scope, text in MemoryEntryVersion.objects.filter(pk__in=ids).values_list(
            "pk", "scope_id", "text"
        )
    }
    # (a version is never deleted but with its whole database: a flush between the two reads)
    items = [VectorWork(int(pk), str(texts[pk][0]), str(texts[pk][1])) for pk in ids if pk in texts]
    if len(items) < limit:
        items.extend(
            VectorWork(int(pk), str(scope), str(text), experience=True)
            for pk, scope, text in _missing_experience(scope_id)
            .order_by("pk")
            .values_list("pk", "scope_id", "searchable_text")[: limit - len(items)]
        )
    return items


def drop_other_model_vectors(model_id: str) -> int:
    """Delete the Memory and Experience vectors another model computed (one transaction): their
    entries become gaps the embedder fills with ``model_id``'s vectors. Only the primary model's
    embedder calls this (``pending``), never a process running the fallback model, so two
    models can never keep deleting each other's vectors. Returns the rows deleted."""
    with transaction.atomic():
        memory = MemoryEntryVector.objects.exclude(model=model_id).delete()[0]
        experience = ExperienceVector.objects.exclude(model=model_id).delete()[0]
    return int(memory) + int(experience)


def scopes_missing_vectors() -> list[str]:
    """Scopes with at least one active entry version or recallable Experience head that has
    no vector row."""
    return sorted(
        set(_memory_gaps(None).values_list("scope_id", flat=True).distinct())
        | set(_missing_experience(None).values_list("scope_id", flat=True).distinct())
    )


def store_vectors(
    model: embedding.Embedder,
    batch: list[VectorWork],
    before_each: Callable[[], None] | None = None,
) -> int:
    """Embed ``batch`` outside any transaction, then store in one transaction the vectors of the
    versions still active and still without a vector; returns the rows inserted.

    The write locks the Memory heads of the batch's scopes (sorted; PostgreSQL row locks, the
    SQLite write lock), as writers do: a retire cannot close a membership between the check and
    the insert (no vector of an inactive version is left behind), and vector ids of one scope
    are allocated in commit order (the in-process matrix cache reads ``id`` > its largest).
    Concurrent embedders never fail or duplicate: the insert skips rows that exist by then
    (``ON CONFLICT DO NOTHING`` / ``INSERT OR IGNORE`` on the one-to-one column).
    ``before_each`` runs before each model run (the embedder thread yields to writers there);
    the model runs up to ``embedding.embed_threads()`` texts of the batch at once."""
    if not batch:
        return 0
    assert _outside_transactions(), "a model run never happens inside a transaction"
    memory: dict[int, tuple[str, bytes]] = {}  # entry version pk -> (scope id, vector)
    experience: dict[int, tuple[str, bytes]] = {}  # head pk -> (embedded text, vector)
    vectors = model.embed_many([item.text for item in batch], before_each)
    for item, computed in zip(batch, vectors, strict=True):
        vector = embedding.to_bytes(computed)
        if item.experience:
            experience[item.pk] = (item.text, vector)
        else:
            memory[item.pk] = (item.scope_id, vector)
    attempt = 1
    while True:
        try:
            return _write_vectors(model, memory, experience)
        except OperationalError as exc:
            # A writer holding the scope's head longer than the lock timeout (a bulk import's
            # transaction): keep the computed vectors and wait for it again, rather than
            # computing them all over at the next signal.
            if attempt >= WRITE_ATTEMPTS or not lock_timed_out(exc):
                raise
            attempt += 1


def lock_timed_out(exc: BaseException) -> bool:
    """Whether a database error is PostgreSQL's lock timeout (SQLSTATE 55P03)."""
    cause = exc.__cause__
    return getattr(cause, "sqlstate", None) == "55P03"


def _write_vectors(
    model: embedding.Embedder,
    memory: dict[int, tuple[str, bytes]],
    experience: dict[int, tuple[str, bytes]],
) -> int:
    """``store_vectors``' transaction: the computed vectors of the versions (and heads) still
    active and still without one; returns the rows inserted."""
    with transaction.atomic():
        list(
            Artifact.objects.select_for_update()
            .filter(
                scope_id__in=sorted({scope for scope, _ in memory.values()}),
                family=MEMORY_FAMILY,
                artifact_id=MEMORY_ARTIFACT_ID,
            )
            .order_by("scope_id")
            .values_list("pk", flat=True)
        )
        active = set(
            MemoryMembership.objects.filter(
                entry_version_id__in=list(memory),
                to_revision__isnull=True,
                state=MemoryMembership.State.ACTIVE,
            ).values_list("entry_version_id", flat=True)
        )
        present = set(
            MemoryEntryVector.objects.filter(entry_version_id__in=list(active)).values_list(
                "entry_version_id", flat=True
            )
        )
        rows = [
            MemoryEntryVector(
                entry_version_id=pk,
                scope_id=memory[pk][0],
                model=model.model_id,
                vector=memory[pk][1],
            )
            for pk in sorted(active - present)
        ]
        MemoryEntryVector.objects.bulk_create(rows, ignore_conflicts=True)
        stored = len(rows) + _store_experience_vectors(model, experience)
    return stored


def _store_experience_vectors(model: embedding.Embedder, computed: dict[int, tuple[str, bytes]]) -> int:
    """Inside ``store_vectors``' transaction: store the vectors of the Experience heads of the
    batch (head pk -> (embedded text, vector)) that are still recallable with the embedded text and still have none;
    each head row is locked as its writers lock it, so a retire or a new revision cannot slip
    between the check and the insert."""
    heads = {
        head.pk: head
        for head in Artifact.objects.select_for_update().filter(pk__in=sorted(computed)).order_by("pk")
    }
    present = set(ExperienceVector.objects.filter(head_id__in=list(heads)).values_list("head_id", flat=True))
    rows = [
        ExperienceVector(
            head_id=pk,
            revision=head.current_revision,
            scope_id=head.scope_id,
            model=model.model_id,
            vector=computed[pk][1],
        )
        for pk, head in sorted(heads.items())
        if pk not in present and head.recallable and head.searchable_text == computed[pk][0]
    ]
    ExperienceVector.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def _outside_transactions() -> bool:
    # pytest-django wraps non-transactional tests in a transaction; code under test runs as at
    # the outer level there (durable blocks are allowed too), so those blocks do not count.
    connection = transaction.get_connection()
    return all(getattr(block, "_from_testcase", False) for block in connection.atomic_blocks)


def rebuild_vectors(*, scope_id: str | None = None, progress: Callable[[int], None] | None = None) -> int:
    """Bring the vector index in line with authoritative rows; returns vectors computed.

    Vectors are expensive (a model run each) and entry versions immutable, so sound rows are
    kept and only missing or damaged ones are computed, outside any transaction; each batch is
    then written in one transaction, for the versions still active by then. Nothing happens
    when the model is unavailable.
    """
    model = embedding.embedder()
    if model is None:
        return 0
    report = VerifyReport()
    delete, embed = verify_vectors(scope_id, report, model.model_id)
    delete_experience, embed_experience = verify_experience_vectors(scope_id, report, model.model_id)
    embed.extend(embed_experience)
    with transaction.atomic():
        ExperienceVector.objects.filter(head_id__in=delete_experience).delete()
        for start in range(0, len(delete), REBUILD_BATCH):
            MemoryEntryVector.objects.filter(
                entry_version_id__in=delete[start : start + REBUILD_BATCH]
            ).delete()
    written = 0
    for start in range(0, len(embed), EMBED_BATCH):
        batch = embed[start : start + EMBED_BATCH]
        written += store_vectors(model, batch)
        if progress:
            progress(len(batch))
    vector_cache.clear_cache()
    return written
