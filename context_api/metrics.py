"""Prometheus metrics: ``GET /metrics`` (text format 0.0.4), for a scraper holding the operator
token.

Two kinds, chosen so that several gunicorn workers answer one consistent scrape:

- **Request metrics** (requests by route, method and status, latency histograms by route, 503s
  by cause, prepare items/bytes/empty) are counted in the process that served the request. With
  ``PROMETHEUS_MULTIPROC_DIR`` set (service mode under gunicorn: an empty directory, wiped at
  each start) ``prometheus_client`` keeps them in per-process files that every worker sums at
  scrape time; without it (one process: ``make run``, ``gunicorn -w 1``) they live in memory.
- **Cache figures** of each process (``powercontext_vector_cache_evictions`` by cache name,
  ``powercontext_vector_cache_bytes`` summed over live workers) are kept like request metrics,
  updated whenever an entry is put in the vector cache.
- **State gauges** (embed backlog, pipeline jobs by state and the oldest eligible session's lag,
  queue depth, worker heartbeats, rebuild in progress) are read from the database and the broker
  at scrape time (``context_api.operator``), so every worker reports the same values and
  nothing has to be aggregated. With the database unreachable the scrape still answers:
  ``powercontext_database_up 0``, the request metrics, the broker gauges and this process's
  last database reading (``powercontext_state_age_seconds`` says how old).

Labels are route *names*, methods, status codes, fixed causes, job states, queue names, cache
names and the operator's Celery node names: never a scope id, query, entry id or text.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from context_api import operator
from powercontext.prepare.builder import CONTENT_PREFIX, CONTENT_SUFFIX
from powercontext.search.vectors import vector_cache

logger = logging.getLogger("powercontext.metrics")

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUESTS = Counter(
    "powercontext_http_requests", "HTTP requests answered, by route name, method and status.",
    ["route", "method", "status"],
)  # fmt: skip
LATENCY = Histogram(
    "powercontext_http_request_duration_seconds", "Time to answer a request, by route name.",
    ["route"], buckets=LATENCY_BUCKETS,
)  # fmt: skip
UNAVAILABLE = Counter(
    "powercontext_http_unavailable", "503 answers, by cause (database, not_ready).", ["cause"]
)
PREPARES = Counter("powercontext_prepare", "Prepares answered (empty or not).")
PREPARE_EMPTY = Counter("powercontext_prepare_empty", "Prepares that answered no item.")
PREPARE_ITEMS = Histogram(
    "powercontext_prepare_items", "Items in a prepared context.", buckets=(0, 1, 2, 3, 4, 6, 8)
)
PREPARE_BYTES = Histogram(
    "powercontext_prepare_content_bytes", "content_bytes of a prepared context.",
    buckets=(0, 512, 1024, 2048, 4096, 8000, 16384, 32768),
)  # fmt: skip
FEEDBACK = Counter(
    "powercontext_feedback", "Feedback items recorded, by outcome (used, wrong, outdated).", ["outcome"]
)

VECTOR_CACHE_EVICTIONS = Counter(
    "powercontext_vector_cache_evictions",
    "Entries the in-process vector cache dropped to stay within POWERCONTEXT_VECTOR_CACHE_MB, by "
    "cache (memory, experience, the ranking's and feedback's per-scope state).",
    ["cache"],
)
VECTOR_CACHE_BYTES = Gauge(
    "powercontext_vector_cache_bytes",
    "Bytes the in-process vector caches hold, summed over the live worker processes.",
    multiprocess_mode="livesum",
)


def observe_vector_cache(evicted: list[str], held: int) -> None:
    """``vector_cache.on_put``'s listener: evictions by cache name (a fixed word), bytes held."""
    if not settings.POWERCONTEXT_METRICS:
        return
    for cache in evicted:
        VECTOR_CACHE_EVICTIONS.labels(cache).inc()
    VECTOR_CACHE_BYTES.set(held)


vector_cache.on_put(observe_vector_cache)

KNOWN_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})


def observe_request(route: str, method: str, status: int, seconds: float) -> None:
    """Called by the request middleware for every answer (``route`` is a route name)."""
    if not settings.POWERCONTEXT_METRICS:
        return
    method = method if method in KNOWN_METHODS else "other"
    REQUESTS.labels(route, method, str(status)).inc()
    LATENCY.labels(route).observe(seconds)
    if status == 503:
        UNAVAILABLE.labels("not_ready" if route == "get_readiness" else "database").inc()


def observe_prepare(prepared: dict[str, Any]) -> None:
    """Items, bytes and emptiness of one prepared context (counts only)."""
    if not settings.POWERCONTEXT_METRICS:
        return
    content = prepared.get("content")
    items = 0
    if content and content.startswith(CONTENT_PREFIX) and content.endswith(CONTENT_SUFFIX):
        try:
            items = len(
                json.loads(content[len(CONTENT_PREFIX) : len(content) - len(CONTENT_SUFFIX)])["items"]
            )
        except (ValueError, KeyError, TypeError):
            items = 0
    PREPARES.inc()
    if items == 0:
        PREPARE_EMPTY.inc()
    PREPARE_ITEMS.observe(items)
    PREPARE_BYTES.observe(int(prepared.get("content_bytes") or 0))


def observe_feedback(outcomes: Iterable[str]) -> None:
    """One count per feedback item recorded, labelled by its outcome (a fixed word)."""
    if not settings.POWERCONTEXT_METRICS:
        return
    for outcome in outcomes:
        FEEDBACK.labels(outcome).inc()


class StateCollector(Collector):
    """The operator snapshot as gauges, read at scrape time."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        state = operator.snapshot()
        yield _gauge(
            "powercontext_database_up",
            "1 when the database answered the scrape (0: the gauges below are this process's last reading).",
            float(state.database == "reachable"),
        )
        yield _gauge(
            "powercontext_broker_up",
            "1 when the broker answered the scrape.",
            float(state.broker == "reachable"),
        )
        yield _labelled_gauge(
            "powercontext_queue_depth", "Messages waiting in a broker queue.", "queue", state.queue_depth
        )
        if state.database_values_age_seconds is None:
            return  # the database is unreachable and this process never read it: nothing to show
        yield _gauge(
            "powercontext_state_age_seconds",
            "Seconds since the database gauges were read (0: at this scrape).",
            state.database_values_age_seconds,
        )
        yield _gauge(
            "powercontext_embed_backlog",
            "Entries and Experiences still without a vector.",
            state.embed_backlog,
        )
        yield _gauge(
            "powercontext_embed_vectors_stored",
            "Vectors stored so far (largest vector ids; rate() of it is the embedder's pace).",
            state.embed_vectors_stored,
        )
        jobs = _labelled_gauge(
            "powercontext_pipeline_jobs",
            "Pipeline Phase 1 jobs by state (eligible: waiting to be claimed).",
            "state",
            state.pipeline_jobs,
        )
        jobs.add_metric(["eligible"], state.pipeline_eligible_sessions)
        yield jobs
        yield _gauge(
            "powercontext_pipeline_lag_seconds",
            "Age of the newest source of the oldest session eligible for Phase 1 (0: none waiting).",
            state.pipeline_oldest_eligible_seconds or 0.0,
        )
        yield _labelled_gauge(
            "powercontext_worker_last_seen_seconds",
            "Seconds since a Celery worker's last heartbeat.",
            "worker",
            state.workers,
        )
        yield _gauge(
            "powercontext_workers_alive",
            "Workers with a heartbeat within two periods (one missed beat tolerated).",
            state.workers_alive,
        )
        yield _gauge(
            "powercontext_rebuild_in_progress",
            "1 while an index rebuild or verify runs.",
            float(state.rebuild_in_progress),
        )


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _labelled_gauge(
    name: str, documentation: str, label: str, values: Mapping[str, float]
) -> GaugeMetricFamily:
    """One sample per key of ``values`` (sorted), the key as the ``label`` value."""
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for key, value in sorted(values.items()):
        family.add_metric([key], value)
    return family


def _request_registries() -> Iterable[CollectorRegistry]:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return [registry]
    return [REGISTRY]


def metrics_view(request: HttpRequest) -> HttpResponse:
    """``GET /metrics``: request metrics of every worker plus the state gauges."""
    if not settings.POWERCONTEXT_OPERATOR_TOKEN or not operator.authorized(request):
        return JsonResponse(
            {
                "error": {
                    "code": "forbidden",
                    "message": "The monitoring token (POWERCONTEXT_OPERATOR_TOKEN) is required.",
                    "details": None,
                }
            },
            status=403,
        )
    state = CollectorRegistry()
    state.register(StateCollector())
    body = b"".join(generate_latest(registry) for registry in (*_request_registries(), state))
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
