"""Benchmark: what feedback costs prepare, and what recording it costs (issue 30).

Seeds three scopes with the same ``--entries`` notes (1,000) through the real services: one
with ``--rows`` feedback rows (100,000; ``powercontext.evaluation.bench.feedback``:
bulk-inserted in batches, then ``counters_rebuild_all``), one with none, and a control, also
with none. The control does exactly the work of ``none``: its ratio to ``none`` is how far apart
two equal variants come out in this run, the noise to read the feedback ratio against. Then, in
one run:

- prepare in process, the scopes interleaved query by query on the same prompts;
- with ``--url`` (a live gunicorn on the same database, as ``bench_http``): prepare over HTTP
  interleaved request by request; then ``--clients`` concurrent clients (8), each scope alone in
  ``--rounds`` rotating rounds, and the scopes mixed in one load (``mixed_throughput``) on the
  same prompts;
- ``POST /v1/context/feedback``, bodies of 1-3 cited items, mostly ``used``, each client with its
  own token: one client, then ``--clients`` back to back, then ``--clients`` paced (one call
  every ``--feedback-interval`` ms each); p50, p95, max. The server needs
  ``POWERCONTEXT_FEEDBACK_RATE_PER_MINUTE`` high enough (or 0): scripts/bench.sh starts it so; a
  429 counts as an error.

The figures to read are the ratios with feedback / without (p50 and throughput), each beside
the control's, and the feedback p95. Writes fresh scopes (``bench-fb-<run>-...``) and a user
with tokens: use a throwaway database (scripts/bench.sh does).
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import httpx
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection, transaction
from django.utils import timezone

from powercontext.core.models import MemoryEntryVersion
from powercontext.core.tokens import api_token_create
from powercontext.evaluation.bench.common import (
    Corpus,
    compare,
    interleaved,
    load_average,
    percentile,
    run_clients,
)
from powercontext.evaluation.bench.feedback import feedback_bodies, feedback_plan
from powercontext.evaluation.bench.http import mixed_throughput, prepare_throughput
from powercontext.evaluation.note_sets import memory_item_citations
from powercontext.feedback.models import MEMORY, Feedback, FeedbackCounter
from powercontext.feedback.prior import memory_target
from powercontext.feedback.selectors import policy, usage_for
from powercontext.feedback.services import counters_rebuild_all
from powercontext.memory.services import memory_remember
from powercontext.prepare import selection
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication
from powercontext.prepare.trace import HELD_BY_REPORTS
from powercontext.search.vectors import embedding, pending

BATCH = 5000
FEEDBACK, NONE, CONTROL = "feedback", "none", "control"


class Command(BaseCommand):
    help = "Prepare with 100,000 feedback rows vs none (p50, throughput) and feedback p95 at 8 clients."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", help="a live server on the same database (the HTTP sections)")
        parser.add_argument("--entries", type=int, default=1000)
        parser.add_argument("--rows", type=int, default=100_000, help="feedback rows in the one scope")
        parser.add_argument("--reporters", type=int, default=200)
        parser.add_argument("--days", type=int, default=365)
        parser.add_argument("--samples", type=int, default=300, help="timed prepares per scope")
        parser.add_argument("--clients", type=int, default=8)
        parser.add_argument(
            "--seconds", type=float, default=18.0, help="each scope alone: its throughput time"
        )
        parser.add_argument("--rounds", type=int, default=6, help="rotating throughput rounds per scope")
        parser.add_argument(
            "--mixed-seconds", type=float, default=48.0, help="the scopes' mixed throughput load, in all"
        )
        parser.add_argument(
            "--feedback-requests", type=int, default=250, help="feedback calls per client and phase"
        )
        parser.add_argument(
            "--feedback-interval",
            type=float,
            default=200.0,
            help="ms between one client's feedback calls in the paced phase",
        )
        parser.add_argument("--json", dest="json_path")

    def handle(self, *args: Any, **options: Any) -> None:
        run = uuid.uuid4().hex[:8]
        scopes = {
            FEEDBACK: f"bench-fb-{run}-feedback",
            NONE: f"bench-fb-{run}-none",
            CONTROL: f"bench-fb-{run}-control",
        }
        results: dict[str, Any] = {"database": connection.vendor, "load_average_start": load_average()}
        results["setup"] = self._seed(scopes, options)
        self._say({"setup": results["setup"]})
        corpus = Corpus(seed=17)
        queries = [corpus.query() for _ in range(options["samples"])]
        results["prior_active"] = self._prior_active(scopes[FEEDBACK], queries)
        results["in_process"] = self._in_process(scopes, queries)
        self._say({"in_process": results["in_process"]})
        if options["url"]:
            url = options["url"].rstrip("/")
            results["http"] = self._http(url, scopes, queries)
            self._say({"http": results["http"]})
            results["throughput"] = self._throughput(url, scopes, queries, options)
            self._say({"throughput": results["throughput"]})
            results["feedback_write"] = self._feedback_write(url, scopes[FEEDBACK], queries, options)
        results["load_average_end"] = load_average()
        self.stdout.write(json.dumps(results, indent=2))
        if options["json_path"]:
            with open(options["json_path"], "w", encoding="utf-8") as handle:
                json.dump(results, handle, indent=2)

    def _say(self, figures: dict[str, Any]) -> None:
        self.stderr.write(json.dumps(figures))

    @staticmethod
    def _seed(scopes: dict[str, str], options: dict[str, Any]) -> dict[str, Any]:
        corpus = Corpus(seed=13)
        started = time.perf_counter()
        for _ in range(options["entries"]):
            text = corpus.note()
            for scope_id in scopes.values():
                memory_remember(scope_id=scope_id, kind="note", text=text)
        if embedding.embedder() is not None:
            for scope_id in scopes.values():
                if not pending.wait_until_embedded(scope_id, 3600):
                    raise RuntimeError("the embedder did not catch up")
        seeded = time.perf_counter()
        scope_id = scopes[FEEDBACK]
        versions = list(
            MemoryEntryVersion.objects.filter(scope_id=scope_id)
            .order_by("pk")
            .values_list("pk", "entry_version_id", "created_revision")
        )
        plan = feedback_plan(
            items=len(versions), rows=options["rows"], reporters=options["reporters"], days=options["days"]
        )
        newest = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
        for start in range(0, len(plan), BATCH):
            rows = []
            for row in plan[start : start + BATCH]:
                pk, version_id, revision = versions[row.item]
                created = newest - timedelta(days=row.day) + timedelta(seconds=row.second)
                rows.append(
                    Feedback(
                        scope_id=scope_id,
                        target=memory_target(version_id),
                        family=MEMORY,
                        entry_version_id=pk,
                        cited_revision=revision,
                        outcome=row.outcome,
                        reporter=f"bench:{row.reporter}",
                        day=created.date(),
                        created_at=created,
                    )
                )
            with transaction.atomic():
                Feedback.objects.bulk_create(rows)
        inserted = time.perf_counter()
        counters = counters_rebuild_all(scope_id=scope_id)
        rebuilt = time.perf_counter()
        held = sum(
            1
            for usage in usage_for(scope_id, [memory_target(v) for _, v, _ in versions]).values()
            if policy().held(usage, MEMORY)
        )
        return {
            "entries_per_scope": len(versions),
            "feedback_rows": Feedback.objects.filter(scope_id=scope_id).count(),
            "counter_rows": counters,
            "held_items": held,
            "items_with_uses": FeedbackCounter.objects.filter(scope_id=scope_id, uses__gt=0).count(),
            "seed_seconds": round(seeded - started, 1),
            "insert_seconds": round(inserted - seeded, 1),
            "rebuild_seconds": round(rebuilt - inserted, 1),
        }

    @staticmethod
    def _prior_active(scope_id: str, queries: list[str]) -> dict[str, Any]:
        """How much of the feedback path the with-feedback scope's prepares take: hits with
        counters, and hits held, per prepare (so that the comparison measures the real work)."""
        with_usage = held = hits = 0
        for query in queries:
            found = selection.context_candidates(
                scope_id=scope_id, query=query, memory_limit=8, experience_limit=2
            )
            with_usage += len(found.usage)
            held += sum(1 for decision in found.dropped if decision.reason == HELD_BY_REPORTS)
            hits += len(found.memory_hits)
        prepares = len(queries) or 1
        return {
            "hits_with_counters_per_prepare": round(with_usage / prepares, 2),
            "held_per_prepare": round(held / prepares, 2),
            "memory_items_per_prepare": round(hits / prepares, 2),
        }

    @staticmethod
    def _in_process(scopes: dict[str, str], queries: list[str]) -> dict[str, Any]:
        app = ScopedContextApplication()

        def prepare(scope: str) -> Any:
            return lambda i: app.prepare(
                PrepareRequest(scope_id=scopes[scope], query=queries[i], max_bytes=8000)
            )

        for i in range(len(queries)):  # steady state: every query vector cached, the scopes warm
            for scope in scopes:
                prepare(scope)(i)
        timings = interleaved({scope: prepare(scope) for scope in scopes}, len(queries))
        return _with_control(timings)

    @staticmethod
    def _http(url: str, scopes: dict[str, str], queries: list[str]) -> dict[str, Any]:
        with httpx.Client(base_url=url, timeout=30) as client:

            def post(scope: str) -> Any:
                def call(i: int) -> None:
                    body = {"scope_id": scopes[scope], "query": queries[i], "max_bytes": 8000}
                    if client.post("/v1/context/prepare", json=body).status_code != 200:
                        raise RuntimeError("unexpected prepare status")

                return call

            for _ in range(2):  # warm both workers' caches (query vectors, the scopes' matrices)
                for i in range(len(queries)):
                    for scope in scopes:
                        post(scope)(i)
            timings = interleaved({scope: post(scope) for scope in scopes}, len(queries))
        return _with_control(timings)

    @staticmethod
    def _throughput(
        url: str, scopes: dict[str, str], queries: list[str], options: dict[str, Any]
    ) -> dict[str, Any]:
        """8-client throughput two ways: each scope alone, in ``--rounds`` rounds rotating which
        goes first (a scope's load meets whatever else the machine does at its moment), and the
        scopes mixed in one load for ``--mixed-seconds`` (``mixed_throughput``: each meets the
        same moments). The control's ratio to ``none`` is the noise of each way."""
        rounds = max(1, options["rounds"])
        seconds = options["seconds"] / rounds
        names = list(scopes)
        # Untimed, every scope at full concurrency first: the gunicorn threads the one-client
        # sections left idle open their database connections here (cold page caches), not in
        # the first timed round, which would always charge them to the scope measured first.
        for scope in names:
            prepare_throughput(url, queries, options["clients"], 1.0, scope_id=scopes[scope])
        totals = {scope: [0, 0.0, 0] for scope in names}  # requests, seconds, errors
        for number in range(rounds):
            for scope in names[number % len(names) :] + names[: number % len(names)]:
                run = prepare_throughput(url, queries, options["clients"], seconds, scope_id=scopes[scope])
                totals[scope][0] += run["throughput_requests"]
                totals[scope][1] += run["throughput_seconds"]
                totals[scope][2] += run["throughput_errors"]
        rps = {scope: (t[0] / t[1] if t[1] else 0.0) for scope, t in totals.items()}
        mixed = mixed_throughput(url, queries, options["clients"], options["mixed_seconds"], scopes)
        return {
            "clients": options["clients"],
            "rounds": rounds,
            **{f"{scope}_rps": round(rps[scope], 1) for scope in names},
            "feedback_vs_none": _ratio(rps[FEEDBACK], rps[NONE]),
            "control_vs_none": _ratio(rps[CONTROL], rps[NONE]),
            "errors": sum(t[2] for t in totals.values()),
            "mixed": {
                **{f"{scope}_rps": mixed[f"{scope}_rps"] for scope in names},
                "feedback_vs_none": _ratio(mixed[f"{FEEDBACK}_rps"], mixed[f"{NONE}_rps"]),
                "control_vs_none": _ratio(mixed[f"{CONTROL}_rps"], mixed[f"{NONE}_rps"]),
                "seconds": options["mixed_seconds"],
                "errors": mixed["errors"],
            },
            "load_average": load_average(),
        }

    def _feedback_write(
        self, url: str, scope_id: str, queries: list[str], options: dict[str, Any]
    ) -> dict[str, Any]:
        """``POST /v1/context/feedback`` latency: one client (the service time), then
        ``--clients`` clients back to back (the server saturated), then the same clients each
        sending one request every ``--feedback-interval`` ms (a load the server can carry: what
        agents that report once a turn produce, many times over). Each phase sends new bodies."""
        clients, requests = options["clients"], options["feedback_requests"]
        app = ScopedContextApplication()
        citations = list(
            {
                c["entry_version_id"]: c
                for query in queries
                for c in memory_item_citations(
                    app.prepare(PrepareRequest(scope_id=scope_id, query=query, max_bytes=8000)).content
                )
            }.values()
        )
        user = get_user_model().objects.create_user(username=f"bench-feedback-{uuid.uuid4().hex[:8]}")
        secrets = [api_token_create(user=user, name=f"bench client {n}")[1] for n in range(clients)]
        interval = options["feedback_interval"] / 1000
        out: dict[str, Any] = {"citations": len(citations)}
        for phase, (count, pace, seed) in {
            "one_client": (1, None, 100),
            "saturated": (clients, None, 200),
            "paced": (clients, interval, 300),
        }.items():
            bodies = [feedback_bodies(scope_id, citations, requests, seed=seed + n) for n in range(count)]
            out[phase] = _post_feedback(url, secrets[:count], bodies, pace)
            self._say({"feedback_write": {phase: out[phase]}})
        out["interval_ms"] = options["feedback_interval"]
        return out


def _ratio(numerator: float, denominator: float) -> float | None:
    return round(numerator / denominator, 3) if denominator else None


def _with_control(timings: dict[str, list[float]]) -> dict[str, Any]:
    """The with/without comparison, and the same between the two scopes without feedback: how
    far apart two variants that do the same work come out in this run (the noise)."""
    control = compare(timings, CONTROL, NONE)
    return {
        **compare(timings, FEEDBACK, NONE),
        "control_p50_ms": control["control_p50_ms"],
        "control_vs_none_p50": control["control_vs_none_p50"],
        "load_average": load_average(),
    }


WARM = 10  # untimed feedback calls per client before a phase


def _post_feedback(
    url: str, secrets: list[str], bodies: list[list[dict[str, Any]]], interval: float | None
) -> dict[str, Any]:
    """Client ``n`` (token ``secrets[n]``) posts ``bodies[n]`` (the first ``WARM`` untimed),
    back to back or one every ``interval`` seconds (start times staggered over the interval;
    a late request goes at once, the schedule is not stretched)."""
    clients = len(secrets)
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    recorded = [0] * clients
    barrier = threading.Barrier(clients)

    def run(index: int) -> None:
        headers = {"Authorization": f"Bearer {secrets[index]}"}
        with httpx.Client(base_url=url, timeout=30, headers=headers) as client:
            for body in bodies[index][:WARM]:
                client.post("/v1/context/feedback", json=body)
            barrier.wait()
            due = time.perf_counter() + (interval * index / clients if interval else 0.0)
            for body in bodies[index][WARM:]:
                if interval:
                    pause = due - time.perf_counter()
                    if pause > 0:
                        time.sleep(pause)  # pacing an open-loop client, not waiting for a condition
                    due += interval
                start = time.perf_counter()
                response = client.post("/v1/context/feedback", json=body)
                latencies[index].append((time.perf_counter() - start) * 1000)
                if response.status_code == 200:
                    recorded[index] += response.json()["recorded"]
                else:
                    errors[index] += 1

    elapsed = run_clients(clients, run)
    samples = [ms for client in latencies for ms in client]
    return {
        "clients": clients,
        "requests": len(samples),
        "items": sum(len(body["items"]) for client in bodies for body in client[WARM:]),
        "recorded_items": sum(recorded),
        "errors": sum(errors),
        "p50_ms": round(statistics.median(samples), 2),
        "p95_ms": round(percentile(samples, 0.95), 2),
        "max_ms": round(max(samples), 2),
        "requests_per_second": round(len(samples) / elapsed, 1),
        "load_average": load_average(),
    }
