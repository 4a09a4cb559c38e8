"""Benchmark sections beyond the store: the builder and review (used by ``manage.py bench``)."""

from __future__ import annotations

import contextlib
import json
import random
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from powercontext.evaluation.bench.common import Corpus, percentile, timed
from powercontext.memory.services import memory_remember
from powercontext.memory.sources import source_capture
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from powercontext.prepare.builder import (
    CONTENT_PREFIX,
    CONTENT_SUFFIX,
    ArtifactRef,
    MemoryHit,
    PreparedContextBuilder,
    render_content,
)
from review import services as review_services
from review.models import Candidate

REVIEW_SCOPE = "bench-review"


def _p(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(samples), 4), "p95_ms": round(percentile(samples, 0.95), 4)}


def bench_builder(samples: int) -> dict[str, Any]:
    """Builder cost vs rendering its final output once, for typical and for worst-case hits."""
    rng = random.Random(3)
    typical = [
        " ".join(
            rng.choice(["deploy", "migrate", "tests", "cache", "the", "after", "run", "api"])
            for _ in range(rng.randint(15, 60))
        )
        for _ in range(16)
    ]
    worst = ["".join(rng.choice('abcdé漢\\"\n ') for _ in range(rng.randint(200, 2600))) for _ in range(16)]
    return {
        "typical_16_short_ascii_hits": _bench_builder_case(typical, samples),
        "worst_16_long_escaped_hits": _bench_builder_case(worst, samples),
    }


def _bench_builder_case(texts: list[str], samples: int) -> dict[str, Any]:
    head = ArtifactRef("memory", "memory", 7)
    hits = [MemoryHit(head, f"mem_ent_{i:032x}", f"mem_ver_{i:032x}", text) for i, text in enumerate(texts)]
    builder = PreparedContextBuilder()
    result = builder.build(memory_ref=head, memory_hits=hits, experience_hits=[], max_bytes=8000).context
    assert result.content is not None
    items = json.loads(result.content[len(CONTENT_PREFIX) : -len(CONTENT_SUFFIX)])["items"]
    build = timed(
        lambda: builder.build(memory_ref=head, memory_hits=hits, experience_hits=[], max_bytes=8000), samples
    )
    render = timed(lambda: render_content(items), samples)
    return {
        "build": _p(build),
        "render_once": _p(render),
        "ratio_build_vs_render_p50": round(statistics.median(build) / statistics.median(render), 2),
        "items": len(items),
        "content_bytes": result.content_bytes,
    }


def _reviewer() -> Any:
    user, _ = get_user_model().objects.get_or_create(username="bench-reviewer")
    user.user_permissions.add(
        Permission.objects.get(codename="review_candidate", content_type__app_label="review")
    )
    return get_user_model().objects.get(pk=user.pk)


def _submission(corpus: Corpus, n: int) -> review_services.Submission:
    return review_services.Submission(
        proposal={
            "situation": corpus.note(),
            "action": corpus.note(),
            "outcome": corpus.note(),
            "lesson": f"lesson {n} " + corpus.note(),
        },
        source_refs=[{"name": "content", "source_id": "bench-evidence"}],
        artifact_refs=[],
        target=None,
        reason=None,
    )


def _approve_one(corpus: Corpus, reviewer: Any, n: int) -> None:
    candidate = review_services.candidate_propose(
        scope_id=REVIEW_SCOPE, family="experience", submission=_submission(corpus, n)
    )
    review_services.candidate_approve(
        scope_id=REVIEW_SCOPE, candidate_id=candidate.candidate_id, expected_version=1, reviewer=reviewer
    )


def bench_review(samples: int, experiences: int, write: Callable[[str], Any]) -> dict[str, Any]:
    corpus = Corpus(seed=11)
    reviewer = _reviewer()
    source_capture(scope_id=REVIEW_SCOPE, source_id="bench-evidence", content="evidence", metadata=None)
    for _ in range(2000):
        memory_remember(scope_id=REVIEW_SCOPE, kind="note", text=corpus.note())
    app = ScopedContextApplication()
    queries = [corpus.query() for _ in range(samples)]

    def prepare_p50() -> float:
        it = iter(queries * 2)
        return statistics.median(
            timed(lambda: app.prepare(PrepareRequest(REVIEW_SCOPE, next(it), 8000)), samples)
        )

    results: dict[str, Any] = {"prepare_memory_only_p50_ms": round(prepare_p50(), 4)}
    counter = iter(range(10**9))
    for _ in range(10):
        _approve_one(corpus, reviewer, next(counter))
    approve_small = timed(lambda: _approve_one(corpus, reviewer, next(counter)), min(samples, 100))
    while next(counter) < experiences:
        _approve_one(corpus, reviewer, next(counter))
    approve_large = timed(lambda: _approve_one(corpus, reviewer, next(counter)), min(samples, 100))
    results["approve_with_10"] = _p(approve_small)
    results[f"approve_with_{experiences}"] = _p(approve_large)
    results["approve_ratio_p50"] = round(
        statistics.median(approve_large) / statistics.median(approve_small), 2
    )
    results["prepare_with_experiences_p50_ms"] = round(prepare_p50(), 4)
    results["prepare_experiences_vs_memory_only"] = round(
        results["prepare_with_experiences_p50_ms"] / results["prepare_memory_only_p50_ms"], 2
    )
    results.update(_bench_inbox(corpus, reviewer, samples))
    write(str({"review": results}))
    return results


def _bench_inbox(corpus: Corpus, reviewer: Any, samples: int) -> dict[str, Any]:
    """Inbox pages with 10 vs 10,000 pending candidates: latency and query count of the queue
    (default order, by scope, newest first, a scope prefix) and of a candidate page (with its
    position, neighbours and evidence)."""
    try:
        from django.urls import reverse

        url = reverse("review:queue")
    except Exception:
        return {"inbox": "not available in this build"}
    from django.db import connection

    client = Client()
    client.force_login(reviewer)
    out: dict[str, Any] = {}
    pending = 0
    pages = {
        "queue": url,
        "queue_by_scope": url + "?sort=scope",
        "queue_newest": url + "?sort=newest",
        "queue_scope_prefix": url + "?scope=" + REVIEW_SCOPE[:6],
    }
    for target in (10, 10000):
        while pending < target:
            review_services.candidate_propose(
                scope_id=REVIEW_SCOPE, family="experience", submission=_submission(corpus, pending)
            )
            pending += 1
        middle = Candidate.objects.filter(scope_id=REVIEW_SCOPE, status="pending").order_by("pk")
        middle_pk = middle.values_list("pk", flat=True)[target // 2]
        for name, path in {**pages, "candidate": reverse("review:candidate", args=[middle_pk])}.items():
            executed = [0]

            def count(
                execute: Any, sql: str, params: Any, many: bool, context: Any, executed: list[int] = executed
            ) -> Any:
                executed[0] += 1
                return execute(sql, params, many, context)

            with connection.execute_wrapper(count):
                assert client.get(path).status_code == 200
            runs = timed(lambda path=path: client.get(path), min(samples, 50))
            out[f"{name}_{target}_pending"] = {**_p(runs), "queries": executed[0]}
    for name in (*pages, "candidate"):
        out[f"{name}_ratio_p50"] = round(
            out[f"{name}_10000_pending"]["p50_ms"] / out[f"{name}_10_pending"]["p50_ms"], 2
        )
    out["inbox_ratio_p50"] = out["queue_ratio_p50"]
    return out


def bench_embed_writes(count: int, write: Callable[[str], Any], rounds: int = 1) -> dict[str, Any]:
    """Remember throughput (one client, one transaction each) with the embedding model off, with
    vectors embedded in the writer's transaction (``sync``) and after commit (``async``, the
    embedder thread running alongside), each into a fresh scope, in one run; for ``async`` also
    how long the embedder needed after the last remember, and its overall rate. With ``rounds``
    > 1 the three modes run again in turn (``count`` remembers each time, the embedder caught up
    after every ``async``), so that the machine's load swings reach every mode; the rates are
    over all rounds. Each round starts with the next mode (off, sync, async; then sync, async,
    off; ...), so that no mode always runs last: remembers slow down a little as the tables grow
    within a run, which with a fixed order counted against the last mode."""
    from django.test import override_settings

    from powercontext.search.vectors import embedding, pending

    if embedding.embedder() is None:
        return {"skipped": "the embedding model is unavailable"}
    corpus = Corpus(seed=5)
    results: dict[str, Any] = {"remembers": count, "rounds": rounds}
    modes = ("off", "sync", "async")
    seconds = dict.fromkeys(modes, 0.0)
    lags: list[float] = []
    run = uuid.uuid4().hex[:8]  # fresh scopes: a note already active in a scope is a no-op
    for round_ in range(rounds):
        shift = round_ % len(modes)
        for mode in modes[shift:] + modes[:shift]:
            scope = f"bench-embed-{mode}-{run}-{round_}"
            texts = [corpus.note() for _ in range(count)]
            model_off = embedding.unavailable() if mode == "off" else contextlib.nullcontext()
            with override_settings(POWERCONTEXT_EMBED_WRITES="sync" if mode == "off" else mode), model_off:
                started = time.perf_counter()
                for text in texts:
                    memory_remember(scope_id=scope, kind="note", text=text)
                seconds[mode] += time.perf_counter() - started
                if mode == "async":
                    seeded = time.perf_counter()
                    assert pending.wait_until_embedded(scope, 3600), "the embedder did not catch up"
                    lags.append(time.perf_counter() - seeded)
    total = count * rounds
    for mode in modes:
        row: dict[str, Any] = {"remembers_per_second": round(total / seconds[mode], 1)}
        if mode == "async":
            row["embed_lag_after_last_remember_s"] = round(statistics.mean(lags), 2)
            row["vectors_per_second_overall"] = round(total / (seconds[mode] + sum(lags)), 1)
        results[mode] = row
        write(str({f"embed_writes_{mode}": row}))
    off = results["off"]["remembers_per_second"]
    results["async_vs_off"] = round(results["async"]["remembers_per_second"] / off, 2)
    results["sync_vs_off"] = round(results["sync"]["remembers_per_second"] / off, 2)
    return results
