"""Prepare over HTTP against in process, and one app server against several (issue 35).

Against running servers on the database this process uses (``--url``, once per server; the
benchmark scope seeded as ``manage.py bench`` seeds it), in one run:

- latency: sequential, one client, interleaved request by request: ``/health/live`` and prepare
  on the first server, prepare on ``--compare`` (another build of the code on the same
  database, e.g. the previous commit) and prepare in this process (``ScopedContextApplication``
  without the audit buffer, on new queries, as an HTTP prepare gets them);
- throughput: ``--clients`` concurrent clients for ``--seconds`` in alternating rounds: all on the
  first server, then split evenly over every ``--url`` (and, with ``--compare``, all on it).

The load generator shares the machine with the servers: compare figures of one run as ratios,
and read them against ``cpu_count`` and the load averages reported with them.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from functools import partial
from typing import Any

import httpx
from django.core.management.base import BaseCommand, CommandParser

from powercontext.evaluation.bench.common import (
    SCOPE,
    Corpus,
    interleaved,
    load_average,
    percentile,
    run_clients,
)
from powercontext.prepare.application import PrepareRequest, ScopedContextApplication


def _throughput(urls: list[str], queries: list[str], clients: int, seconds: float) -> tuple[int, float, int]:
    """(requests answered 200, seconds, other answers) of ``clients`` clients, client ``n`` on
    ``urls[n % len(urls)]``, each asking its share of ``queries`` back to back."""
    deadline = time.perf_counter() + seconds
    counts, errors = [0] * clients, [0] * clients
    barrier = threading.Barrier(clients)

    def run(index: int) -> None:
        with httpx.Client(base_url=urls[index % len(urls)], timeout=30) as client:
            barrier.wait()
            i = index
            while time.perf_counter() < deadline:
                body = {"scope_id": SCOPE, "query": queries[i % len(queries)]}
                ok = client.post("/v1/context/prepare", json=body).status_code == 200
                counts[index] += ok
                errors[index] += not ok
                i += clients

    elapsed = run_clients(clients, run)
    return sum(counts), elapsed, sum(errors)


class Command(BaseCommand):
    help = "Prepare latency over HTTP vs in process, and throughput of one server vs several."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", action="append", required=True, help="a server (repeat for more)")
        parser.add_argument("--compare", help="a server running another build, to compare with --url")
        parser.add_argument("--samples", type=int, default=300)
        parser.add_argument("--clients", type=int, default=8)
        parser.add_argument("--seconds", type=float, default=5.0, help="length of each throughput round")
        parser.add_argument("--rounds", type=int, default=4, help="alternating rounds per variant")
        parser.add_argument("--json", dest="json_path")

    def handle(self, *args: Any, **options: Any) -> None:
        urls = [url.rstrip("/") for url in options["url"]]
        compare_url = options["compare"].rstrip("/") if options["compare"] else None
        corpus = Corpus()
        results: dict[str, Any] = {
            "cpu_count": os.cpu_count(),
            "servers": len(urls),
            "load_average_start": load_average(),
        }
        results["latency"] = self._latency(urls[0], compare_url, corpus, options["samples"])
        variants: dict[str, list[str]] = {"one_server": urls[:1]}
        if len(urls) > 1:
            variants["all_servers"] = urls
        if compare_url:
            variants["compare"] = [compare_url]
        results["throughput"] = self._rounds(variants, corpus, options)
        results["load_average_end"] = load_average()
        self.stdout.write(json.dumps(results, indent=2))
        if options["json_path"]:
            with open(options["json_path"], "w", encoding="utf-8") as handle:
                json.dump(results, handle, indent=2)

    @staticmethod
    def _latency(url: str, compare_url: str | None, corpus: Corpus, samples: int) -> dict[str, Any]:
        app = ScopedContextApplication()
        queries = [corpus.query() for _ in range(samples)]
        clients = {"server": httpx.Client(base_url=url, timeout=30)}
        if compare_url:
            clients["compare"] = httpx.Client(base_url=compare_url, timeout=30)

        def post(client: httpx.Client, i: int) -> None:
            body = {"scope_id": SCOPE, "query": queries[i], "max_bytes": 8000}
            if client.post("/v1/context/prepare", json=body).status_code != 200:
                raise RuntimeError("unexpected prepare status")

        def live(i: int) -> None:
            if clients["server"].get("/health/live").status_code != 200:
                raise RuntimeError("unexpected liveness status")

        def in_process(i: int) -> None:
            app.prepare(PrepareRequest(scope_id=SCOPE, query=queries[i], max_bytes=8000))

        calls = {"live": live, "in_process": in_process}
        calls.update({f"http_{name}": partial(post, client) for name, client in clients.items()})
        try:
            for _ in range(min(samples, 100)):  # steady state: warm connections and caches
                query = corpus.query()
                for client in clients.values():
                    client.get("/health/live")
                    client.post("/v1/context/prepare", json={"scope_id": SCOPE, "query": query})
                app.prepare(PrepareRequest(scope_id=SCOPE, query=query, max_bytes=8000))
            timings = interleaved(calls, samples)
        finally:
            for client in clients.values():
                client.close()
        out: dict[str, Any] = {"samples": samples}
        for name, values in timings.items():
            out[f"{name}_p50_ms"] = round(statistics.median(values), 3)
            out[f"{name}_p95_ms"] = round(percentile(values, 0.95), 3)
        out["http_server_minus_in_process_p50_ms"] = round(
            out["http_server_p50_ms"] - out["in_process_p50_ms"], 3
        )
        return out

    @staticmethod
    def _rounds(variants: dict[str, list[str]], corpus: Corpus, options: dict[str, Any]) -> dict[str, Any]:
        """Requests per second of each variant, summed over ``--rounds`` alternating rounds (each
        round on new queries, so no query vector comes from a cache)."""
        totals = {name: [0, 0.0, 0] for name in variants}
        for _ in range(max(1, options["rounds"])):
            for name, urls in variants.items():
                queries = [corpus.query() for _ in range(int(600 * options["seconds"]) + 100)]
                done, seconds, errors = _throughput(urls, queries, options["clients"], options["seconds"])
                totals[name][0] += done
                totals[name][1] += seconds
                totals[name][2] += errors
        out: dict[str, Any] = {"clients": options["clients"], "rounds": options["rounds"]}
        for name, (done, seconds, errors) in totals.items():
            out[f"{name}_rps"] = round(done / seconds, 1) if seconds else 0.0
            out[f"{name}_errors"] = errors
        one = out["one_server_rps"]
        for name in variants:
            if name != "one_server" and one:
                out[f"{name}_vs_one_server"] = round(out[f"{name}_rps"] / one, 2)
        return out
