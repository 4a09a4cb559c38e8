"""The cost of request metrics: prepare and remember through the whole HTTP stack (middleware,
operation table, services) with ``POWERCONTEXT_METRICS`` on and off, interleaved in rounds so
that drift (caches, the growing Memory head) falls on both sides alike."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from typing import Any

from django.test import Client, override_settings

from powercontext.evaluation.bench.common import Corpus, percentile, timed
from powercontext.memory.services import memory_remember

SCOPE = "bench-metrics"
ROUNDS = 8


def _summary(on: list[float], off: list[float]) -> dict[str, float]:
    on_p50, off_p50 = statistics.median(on), statistics.median(off)
    on_p95, off_p95 = percentile(on, 0.95), percentile(off, 0.95)
    return {
        "on_p50_ms": round(on_p50, 3),
        "off_p50_ms": round(off_p50, 3),
        "ratio_p50": round(on_p50 / off_p50, 3),
        "on_p95_ms": round(on_p95, 3),
        "off_p95_ms": round(off_p95, 3),
        "ratio_p95": round(on_p95 / off_p95, 3),
    }


def bench_metrics(samples: int, seed_entries: int, write: Callable[[str], Any]) -> dict[str, Any]:
    corpus = Corpus(seed=11)
    for _ in range(seed_entries):
        memory_remember(scope_id=SCOPE, kind="note", text=corpus.note())
    client = Client()

    def remember() -> None:
        body = {"scope_id": SCOPE, "kind": "note", "text": corpus.note()}
        response = client.post("/v1/memory/remember", json.dumps(body), content_type="application/json")
        assert response.status_code == 200, response.content

    def prepare() -> None:
        body = {"scope_id": SCOPE, "query": corpus.query()}
        response = client.post("/v1/context/prepare", json.dumps(body), content_type="application/json")
        assert response.status_code == 200, response.content

    per_round = max(1, samples // ROUNDS)
    results: dict[str, Any] = {"samples_per_side": per_round * ROUNDS, "seed_entries": seed_entries}
    for name, operation in (("prepare", prepare), ("remember", remember)):
        timed(operation, per_round)  # warm-up
        on: list[float] = []
        off: list[float] = []
        for _ in range(ROUNDS):
            with override_settings(POWERCONTEXT_METRICS=True):
                on += timed(operation, per_round)
            with override_settings(POWERCONTEXT_METRICS=False):
                off += timed(operation, per_round)
        results[name] = _summary(on, off)
        write(json.dumps({"metrics_overhead": {name: results[name]}}))
    return results
