"""Benchmarks, measured in one run so that figures can be compared as ratios.

Seeds one scope through the real services (one transaction per remember) up to each size in
--sizes, and at each size measures remember latency, search latency (and prepare latency when
the prepare path exists), then a full index rebuild at the largest size, and peak memory.
Prints a table and writes JSON (--json). Use a throwaway database: scripts/bench.sh does.
"""

from __future__ import annotations

import json
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import connection

from powercontext import search
from powercontext.evaluation.bench.common import (
    SCOPE,
    Corpus,
    compare,
    interleaved,
    load_average,
    percentile,
    timed,
)
from powercontext.memory.selectors import memory_search
from powercontext.memory.services import memory_remember
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from powercontext.search.vectors import embedding, pending, vector_cache


class Command(BaseCommand):
    help = "Measure remember/search(/prepare) latency against Memory size, rebuild time, peak memory."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated entry counts")
        parser.add_argument("--samples", type=int, default=200, help="timed operations per measurement")
        parser.add_argument("--json", dest="json_path", help="also write results to this file")
        parser.add_argument(
            "--sections",
            default="store,embed_writes,builder,review,pipeline",
            help="comma-separated: store, embed_writes, builder, review, pipeline, metrics",
        )
        parser.add_argument(
            "--metrics-overhead",
            action="store_true",
            help="only the metrics section: prepare and remember over HTTP with metrics on vs off",
        )
        parser.add_argument(
            "--embed-writes", type=int, default=1000, help="remembers per mode in the embed_writes section"
        )
        parser.add_argument(
            "--embed-rounds",
            type=int,
            default=3,
            help="rounds of the three modes in the embed_writes section (each round starts with the next mode)",
        )
        parser.add_argument(
            "--pipeline-sessions", type=int, default=1000, help="captured sessions for the pipeline section"
        )
        parser.add_argument(
            "--experiences", type=int, default=10000, help="approved Experiences for the review section"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        sections = {s.strip() for s in options["sections"].split(",") if s.strip()}
        if options["metrics_overhead"]:
            sections = {"metrics"}
        results: dict[str, Any] = {"database": connection.vendor, "load_average_start": load_average()}
        if "metrics" in sections:
            from powercontext.evaluation.bench.metrics import bench_metrics

            results["metrics"] = bench_metrics(options["samples"], 2000, self.stdout.write)
        if "store" in sections:
            results["store"] = self.bench_store(options)
        if "embed_writes" in sections:
            from powercontext.evaluation.bench.sections import bench_embed_writes

            results["embed_writes"] = bench_embed_writes(
                options["embed_writes"], self.stdout.write, options["embed_rounds"]
            )
            results["embed_writes"]["load_average"] = load_average()
        if "builder" in sections:
            from powercontext.evaluation.bench.sections import bench_builder

            results["builder"] = bench_builder(options["samples"])
            self.stdout.write(json.dumps({"builder": results["builder"]}))
        if "review" in sections:
            from powercontext.evaluation.bench.sections import bench_review

            results["review"] = bench_review(options["samples"], options["experiences"], self.stdout.write)
        if "pipeline" in sections:
            from powercontext.evaluation.bench.pipeline import bench_pipeline

            results["pipeline"] = bench_pipeline(
                options["pipeline_sessions"], options["samples"], self.stdout.write
            )
        results["load_average_end"] = load_average()
        results["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        self.stdout.write(json.dumps(results, indent=2))
        if options["json_path"]:
            with open(options["json_path"], "w", encoding="utf-8") as handle:
                json.dump(results, handle, indent=2)

    def bench_store(self, options: dict[str, Any]) -> dict[str, Any]:
        sizes = sorted(int(s) for s in options["sizes"].split(","))
        samples = options["samples"]
        corpus = Corpus()
        queries = [corpus.query() for _ in range(samples)]
        results: dict[str, Any] = {"sizes": {}}
        seeded = 0
        prepare = _prepare_callable()
        for size in sizes:
            started = time.perf_counter()
            seed_count = max(0, size - seeded)
            while seeded < size:
                memory_remember(scope_id=SCOPE, kind="note", text=corpus.note())
                seeded += 1
            seed_seconds = time.perf_counter() - started
            # Time search and prepare against the finished index: let the embedder catch up.
            waited = time.perf_counter()
            if embedding.embedder() is not None and not pending.wait_until_embedded(SCOPE, 3600):
                raise RuntimeError("the embedder did not catch up")
            embed_wait_seconds = time.perf_counter() - waited
            remember = timed(
                lambda: memory_remember(scope_id=SCOPE, kind="note", text=corpus.note()), samples
            )
            seeded += samples
            if embedding.embedder() is not None:
                pending.wait_until_embedded(SCOPE, 3600)
            # Steady state, not a cold start: warm caches with other queries than the timed ones.
            for _ in range(samples // 2):
                memory_search(scope_id=SCOPE, query=corpus.query(), limit=10)
            search_queries = iter(queries * 2)
            searches = timed(
                lambda q=search_queries: memory_search(scope_id=SCOPE, query=next(q), limit=10), samples
            )
            row: dict[str, Any] = {
                "entries": seeded,
                "seed_seconds": round(seed_seconds, 2),
                "embed_wait_seconds": round(embed_wait_seconds, 2),
                "remember_p50_ms": round(statistics.median(remember), 3),
                "remember_p95_ms": round(percentile(remember, 0.95), 3),
                "search_p50_ms": round(statistics.median(searches), 3),
                "search_p95_ms": round(percentile(searches, 0.95), 3),
            }
            # Prepare ranks by the best mode (hybrid when the model loads): time it with query
            # vectors computed afresh, as for a new question, not from the query cache.
            model = embedding.embedder()
            if model is not None:
                model.forget_queries()
            prepare_queries = iter(queries * 2)
            prepares = timed(lambda q=prepare_queries: prepare(SCOPE, next(q)), samples)
            row["prepare_mode"] = search.best_mode()
            row["seed_remembers_per_second"] = round(seed_count / seed_seconds, 1) if seed_seconds else None
            row["prepare_p50_ms"] = round(statistics.median(prepares), 3)
            row["prepare_p95_ms"] = round(percentile(prepares, 0.95), 3)
            # The in-process vector cache this process holds after the prepares (the scope's
            # Memory matrix and Experience rows; POWERCONTEXT_VECTOR_CACHE_MB bounds it).
            row["vector_cache_bytes"] = vector_cache.cache_stats()["bytes"]
            row["hybrid_vs_fts"] = _hybrid_vs_fts(prepare, [corpus.query() for _ in range(samples)])
            results["sizes"][str(size)] = row
            self.stdout.write(json.dumps({str(size): row}))
        started = time.perf_counter()
        rebuilt = search.rebuild_index()
        results["rebuild_seconds"] = round(time.perf_counter() - started, 2)
        results["rebuild_rows"] = rebuilt
        small, large = results["sizes"][str(sizes[0])], results["sizes"][str(sizes[-1])]
        results["ratios"] = {
            f"{key}_{sizes[-1]}_vs_{sizes[0]}": round(large[key] / small[key], 2)
            for key in small
            if key.endswith("_ms") and small[key] > 0
        }
        self.stdout.write(json.dumps({"store": results}))
        return results


def _hybrid_vs_fts(prepare: Callable[[str, str], Any], queries: list[str]) -> dict[str, Any] | None:
    """Prepare by the best mode (hybrid) against full text alone (the model unavailable, as with
    ``POWERCONTEXT_EMBEDDINGS=off``: no query embedding, no similarity), interleaved query by
    query on new queries (each embedded afresh); None without the model."""
    model = embedding.embedder()
    if model is None:
        return None
    model.forget_queries()

    def fts(query: str) -> None:
        with embedding.unavailable():
            prepare(SCOPE, query)

    timings = interleaved(
        {"hybrid": lambda i: prepare(SCOPE, queries[i]), "fts": lambda i: fts(queries[i])}, len(queries)
    )
    return {**compare(timings, "hybrid", "fts"), "load_average": load_average()}


def _prepare_callable() -> Callable[[str, str], Any]:
    """The prepare path, measured next to search."""
    app = ScopedContextApplication()
    return lambda scope, query: app.prepare(PrepareRequest(scope_id=scope, query=query, max_bytes=8000))
