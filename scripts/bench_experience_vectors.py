#!/usr/bin/env python
"""Per-call cost of the in-process Experience vector ranking: uncached (the statement read on
every call before the cache) against the per-scope cache (warm; after one new head; cold), at
50 and 500 heads, measured in one run. Seeds heads with random unit vectors directly (no model)
inside one transaction that is rolled back (tables analyzed in it, so the plans are those of a
live database), so any migrated database will do:

    DATABASE_URL=sqlite:///$PWD/data/bench/expvec.sqlite3 .venv/bin/python scripts/bench_experience_vectors.py
    DATABASE_URL=postgres://.../db .venv/bin/python scripts/bench_experience_vectors.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "powercontext.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from powercontext.core.models import Artifact, ArtifactRevision, ExperienceVector  # noqa: E402
from powercontext.core.recall import EXPERIENCE_FAMILY  # noqa: E402
from powercontext.search.vectors import embedding, vector_cache, vector_inprocess  # noqa: E402

SIZES = (50, 500)
SAMPLES = 200
LIMIT = 32  # prepare reads the Experience vector ranking to FUSION_DEPTH
CONTENT = {
    "situation": "the nightly import stalled on a locked table for most of an hour",
    "action": "split the import into batches of a thousand rows and committed each",
    "outcome": "the import finished in minutes and the table stayed readable",
    "lesson": "commit long imports in batches so readers are never blocked",
}

# The statement every call read before the cache (kept here as the baseline). Table names and a
# fixed fragment only; every value is a bound parameter.
_UNCACHED_SQL = (
    f"SELECT a.id, a.artifact_id, a.current_revision, r.content, x.vector"  # noqa: S608
    f" FROM {ExperienceVector._meta.db_table} x"
    f" JOIN {Artifact._meta.db_table} a ON a.id = x.head_id AND a.current_revision = x.revision"
    f" JOIN {ArtifactRevision._meta.db_table} r ON r.head_id = a.id AND r.revision = a.current_revision"
    f" WHERE x.scope_id = %s AND a.scope_id = %s AND x.model = %s AND a.recallable"
)


def rank_uncached(scope: str, query: Any, limit: int) -> list[tuple[int, float, Any]]:
    with connection.cursor() as cursor:
        cursor.execute(_UNCACHED_SQL, [scope, scope, embedding.MODEL_ID])
        rows = cursor.fetchall()
    data = b"".join(bytes(row[4]) for row in rows)
    matrix = np.frombuffer(data, dtype="<f4").astype(np.float32).reshape(len(rows), embedding.DIMENSIONS)
    scores = matrix @ query
    order = sorted(range(len(rows)), key=lambda i: (-float(scores[i]), int(rows[i][0])))[:limit]
    return [
        (
            int(rows[i][0]),
            float(scores[i]),
            json.loads(rows[i][3]) if isinstance(rows[i][3], str) else rows[i][3],
        )
        for i in order
    ]


def unit(rng: np.random.Generator) -> Any:
    vector = rng.standard_normal(embedding.DIMENSIONS).astype(np.float32)
    return vector / np.linalg.norm(vector)


def add_heads(scope: str, start: int, count: int, rng: np.random.Generator) -> None:
    heads = Artifact.objects.bulk_create(
        [
            Artifact(
                scope_id=scope,
                family=EXPERIENCE_FAMILY,
                artifact_id=f"exp_bench_{n}",
                current_revision=1,
                searchable_text=" ".join(CONTENT.values()),
                recallable=True,
            )
            for n in range(start, start + count)
        ]
    )
    if any(head.pk is None for head in heads):  # backends without RETURNING ids
        heads = list(Artifact.objects.filter(scope_id=scope, artifact_id__in=[h.artifact_id for h in heads]))
    ArtifactRevision.objects.bulk_create(
        ArtifactRevision(
            head=head,
            scope_id=scope,
            family=EXPERIENCE_FAMILY,
            artifact_id=head.artifact_id,
            revision=1,
            content=CONTENT,
            searchable_text=head.searchable_text,
        )
        for head in heads
    )
    ExperienceVector.objects.bulk_create(
        ExperienceVector(
            head=head,
            revision=1,
            scope_id=scope,
            model=embedding.MODEL_ID,
            vector=embedding.to_bytes(unit(rng)),
        )
        for head in heads
    )


def replace_vector(scope: str, rng: np.random.Generator) -> None:
    """A write: one head's vector replaced by a new row (as a new revision's would be)."""
    row = ExperienceVector.objects.filter(scope_id=scope).order_by("?").first()
    assert row is not None
    ExperienceVector.objects.filter(pk=row.pk).delete()
    ExperienceVector.objects.create(
        head_id=row.head_id,
        revision=row.revision,
        scope_id=scope,
        model=row.model,
        vector=embedding.to_bytes(unit(rng)),
    )


def medians_ms(
    calls: dict[str, tuple[Callable[[], object] | None, Callable[[], object]]],
) -> dict[str, float]:
    """Median ms of each call, the calls interleaved sample by sample (each after its untimed
    setup), so a busy machine weighs on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(SAMPLES):
        for name, (before, call) in calls.items():
            if before is not None:
                before()
            start = time.perf_counter()
            call()
            times[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


class _Rollback(Exception):
    pass


def main() -> None:
    call_command("migrate", verbosity=0)
    rng = np.random.default_rng(1)
    query = unit(rng)
    results: dict[str, dict[str, float]] = {}
    try:
        with transaction.atomic():
            for size in SIZES:
                scope = f"bench-expvec-{size}"
                add_heads(scope, 0, size, rng)
                with connection.cursor() as cursor:  # planner statistics, as a live database has
                    for model in (Artifact, ArtifactRevision, ExperienceVector):
                        cursor.execute(f"ANALYZE {model._meta.db_table}")
                vector_cache.clear_cache()

                def cached(scope: str = scope) -> list[Any]:
                    return vector_inprocess.rank_experience(scope, embedding.MODEL_ID, query, LIMIT)

                want = rank_uncached(scope, query, LIMIT)
                got = cached()
                assert [(r.key, r.content.as_mapping()) for r in got] == [(pk, c) for pk, _, c in want]
                results[str(size)] = medians_ms(
                    {
                        "uncached_ms": (None, lambda scope=scope: rank_uncached(scope, query, LIMIT)),
                        "warm_ms": (cached, cached),  # warmed by its setup call
                        "after_a_write_ms": (lambda scope=scope: replace_vector(scope, rng), cached),
                        "cold_ms": (vector_cache.clear_cache, cached),
                    }
                )
            raise _Rollback
    except _Rollback:
        pass
    print(f"{connection.vendor}: per call, median of {SAMPLES}, top {LIMIT}")
    for size, row in results.items():
        print(
            f"  {size:>4} heads: uncached {row['uncached_ms']:.3f} ms, warm {row['warm_ms']:.3f} ms"
            f" (uncached/warm {row['uncached_ms'] / row['warm_ms']:.1f}x),"
            f" after a write {row['after_a_write_ms']:.3f} ms, cold {row['cold_ms']:.3f} ms"
        )
    print(json.dumps({"vendor": connection.vendor, "samples": SAMPLES, "limit": LIMIT, "sizes": results}))


if __name__ == "__main__":
    main()
