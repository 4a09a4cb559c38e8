"""HTTP benchmark against a running server: prepare vs /health/live latency, throughput, and
MCP ``tools/call`` vs the same REST operation (search_memory, remember_memory).

With ``--fts-url`` (a second server on the same database with ``POWERCONTEXT_EMBEDDINGS=false``)
it also compares prepare latency and throughput with the model (hybrid) and without (full text
alone), alternating between the servers. With ``--cold-starts N`` it starts ``gunicorn
powercontext.wsgi -w 1`` N times from the working directory (so ``gunicorn.conf.py`` loads the
model at worker start), waits for ``/health/live`` and times the first prepare of each fresh
worker (and the second, for comparison).

Run by scripts/bench.sh against gunicorn serving the benchmark database. The load generator
shares the machine with the server, so compare figures from one run as ratios.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import httpx
from django.core.management.base import BaseCommand, CommandParser

from powercontext.evaluation.bench.common import SCOPE, Corpus, compare, interleaved, load_average, percentile
from powercontext.evaluation.bench.http import prepare_throughput


class Command(BaseCommand):
    help = "Measure prepare and liveness latency and prepare throughput against --url."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", required=True)
        parser.add_argument("--samples", type=int, default=300)
        parser.add_argument("--clients", type=int, default=8)
        parser.add_argument("--seconds", type=float, default=10.0, help="duration of the throughput run")
        parser.add_argument("--json", dest="json_path")
        parser.add_argument(
            "--fts-url", help="a server on the same database without the model, to compare hybrid with"
        )
        parser.add_argument(
            "--throughput-rounds", type=int, default=4, help="alternating rounds per server with --fts-url"
        )
        parser.add_argument("--cold-starts", type=int, default=0, help="fresh one-worker gunicorns to time")
        parser.add_argument("--cold-port", type=int, default=8799, help="their port")

    def handle(self, *args: Any, **options: Any) -> None:
        url, samples = options["url"].rstrip("/"), options["samples"]
        load_start = load_average()
        corpus = Corpus()
        queries = [corpus.query() for _ in range(samples)]
        with httpx.Client(base_url=url, timeout=30) as client:
            # Steady state: warm connections and caches with other queries than the timed ones.
            for _ in range(samples):
                client.get("/health/live")
                client.post("/v1/context/prepare", json={"scope_id": SCOPE, "query": corpus.query()})
            live = self._timed(lambda i: client.get("/health/live"), samples)
            prepare = self._timed(
                lambda i: client.post(
                    "/v1/context/prepare", json={"scope_id": SCOPE, "query": queries[i], "max_bytes": 8000}
                ),
                samples,
            )
        results: dict[str, Any] = {
            "live_p50_ms": round(statistics.median(live), 3),
            "prepare_p50_ms": round(statistics.median(prepare), 3),
            "prepare_p95_ms": round(percentile(prepare, 0.95), 3),
            "prepare_vs_live_p50": round(statistics.median(prepare) / statistics.median(live), 2),
        }
        results.update(prepare_throughput(url, queries, options["clients"], options["seconds"]))
        results.update(self._mcp_vs_rest(url, queries, samples))
        results["load_average_start"] = load_start
        results["load_average_end"] = load_average()
        if options["fts_url"]:
            results["hybrid_vs_fts"] = self._hybrid_vs_fts(
                url, options["fts_url"].rstrip("/"), corpus, options, samples
            )
        if options["cold_starts"]:
            results["cold_start"] = self._cold_starts(options["cold_starts"], options["cold_port"], corpus)
        self.stdout.write(json.dumps(results, indent=2))
        if options["json_path"]:
            with open(options["json_path"], "w", encoding="utf-8") as handle:
                json.dump(results, handle, indent=2)

    @staticmethod
    def _timed(call: Any, samples: int) -> list[float]:
        out = []
        for i in range(samples):
            start = time.perf_counter()
            response = call(i)
            out.append((time.perf_counter() - start) * 1000)
            if response.status_code != 200:
                raise RuntimeError(f"unexpected status {response.status_code}")
        return out

    @staticmethod
    def _mcp_vs_rest(url: str, queries: list[str], samples: int) -> dict[str, Any]:
        """p50 of an MCP tools/call against the same REST call on the same server, interleaved
        call by call so both see the same server state; plain JSON-RPC POSTs after one
        initialize (what an MCP client sends per call)."""
        headers = {"Accept": "application/json, text/event-stream"}
        with httpx.Client(base_url=url, timeout=30, headers=headers) as client:
            init = client.post(
                "/mcp",
                json={
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "bench_http", "version": "1"},
                    },
                },
            )
            version = init.json()["result"]["protocolVersion"]
            client.headers["MCP-Protocol-Version"] = version
            client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})

            def rest(path: str, body: dict[str, Any]) -> None:
                if client.post(path, json=body).status_code != 200:
                    raise RuntimeError(f"unexpected REST status for {path}")

            def tool(name: str, arguments: dict[str, Any]) -> None:
                message = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
                response = client.post("/mcp", json=message)
                if response.status_code != 200 or response.json()["result"]["isError"]:
                    raise RuntimeError(f"unexpected MCP answer for {name}: {response.text[:200]}")

            def search(i: int) -> dict[str, Any]:
                return {"scope_id": SCOPE, "query": queries[i % len(queries)]}

            def remember(i: int) -> dict[str, Any]:
                return {
                    "scope_id": "bench-mcp",
                    "kind": "note",
                    "text": f"benchmark note {i} {queries[i % len(queries)]}",
                }

            timings: dict[str, list[float]] = {k: [] for k in ("rs", "ms", "rr", "mr")}
            for i in range(samples // 5):  # warm up both paths
                rest("/v1/memory/search", search(i))
                tool("search_memory", search(i))
            for i in range(samples):
                calls: list[tuple[str, Callable[[], None]]] = [
                    ("rs", partial(rest, "/v1/memory/search", search(i))),
                    ("ms", partial(tool, "search_memory", search(i))),
                    ("rr", partial(rest, "/v1/memory/remember", remember(2 * i))),
                    ("mr", partial(tool, "remember_memory", remember(2 * i + 1))),
                ]
                for key, run in calls:
                    start = time.perf_counter()
                    run()
                    timings[key].append((time.perf_counter() - start) * 1000)
        p50 = {key: statistics.median(values) for key, values in timings.items()}
        return {
            "mcp_protocol_version": version,
            "rest_search_p50_ms": round(p50["rs"], 3),
            "mcp_search_p50_ms": round(p50["ms"], 3),
            "mcp_vs_rest_search_p50": round(p50["ms"] / p50["rs"], 2),
            "rest_remember_p50_ms": round(p50["rr"], 3),
            "mcp_remember_p50_ms": round(p50["mr"], 3),
            "mcp_vs_rest_remember_p50": round(p50["mr"] / p50["rr"], 2),
        }

    def _hybrid_vs_fts(
        self, url: str, fts_url: str, corpus: Corpus, options: dict[str, Any], samples: int
    ) -> dict[str, Any]:
        """Prepare over HTTP with the model (``url``) and without (``fts_url``): p50/p95 with one
        client, interleaved request by request on new queries, then requests per second with
        ``--clients`` clients in alternating rounds (hybrid first, then full text, ...), each
        ``--seconds`` / rounds long (on new queries, then on repeated ones); the figures sum
        over each server's rounds."""
        queries = [corpus.query() for _ in range(samples)]
        with (
            httpx.Client(base_url=url, timeout=30) as hybrid,
            httpx.Client(base_url=fts_url, timeout=30) as fts,
        ):

            def post(client: httpx.Client, i: int) -> None:
                body = {"scope_id": SCOPE, "query": queries[i], "max_bytes": 8000}
                if client.post("/v1/context/prepare", json=body).status_code != 200:
                    raise RuntimeError("unexpected prepare status")

            for _ in range(min(samples, 50)):  # warm both servers' connections and caches
                query = corpus.query()
                for client in (hybrid, fts):
                    client.post("/v1/context/prepare", json={"scope_id": SCOPE, "query": query})
            timings = interleaved({"hybrid": partial(post, hybrid), "fts": partial(post, fts)}, samples)
        out: dict[str, Any] = {"latency": compare(timings, "hybrid", "fts")}
        rounds = max(1, options["throughput_rounds"])
        seconds = options["seconds"] / rounds
        # New prompts throughout (none repeats, so no query vector comes from a cache), then the
        # timed queries above again (every query vector cached: what the plain throughput sees).
        out["throughput"] = self._alternating(url, fts_url, options["clients"], rounds, seconds, corpus, None)
        out["throughput_repeated_queries"] = self._alternating(
            url, fts_url, options["clients"], rounds, seconds, corpus, queries
        )
        out["load_average"] = load_average()
        return out

    def _alternating(
        self,
        url: str,
        fts_url: str,
        clients: int,
        rounds: int,
        seconds: float,
        corpus: Corpus,
        queries: list[str] | None,
    ) -> dict[str, Any]:
        """Requests per second of each server over ``rounds`` alternating rounds (``queries``, or
        new ones each round when None)."""
        totals = {"hybrid": [0, 0.0, 0], "fts": [0, 0.0, 0]}  # requests, seconds, errors
        for _ in range(rounds):
            for name, target in (("hybrid", url), ("fts", fts_url)):
                batch = queries or [corpus.query() for _ in range(int(1000 * seconds) + 100)]
                run = prepare_throughput(target, batch, clients, seconds)
                totals[name][0] += run["throughput_requests"]
                totals[name][1] += run["throughput_seconds"]
                totals[name][2] += run["throughput_errors"]
        rps = {name: (t[0] / t[1] if t[1] else 0.0) for name, t in totals.items()}
        return {
            "clients": clients,
            "rounds": rounds,
            "hybrid_rps": round(rps["hybrid"], 1),
            "fts_rps": round(rps["fts"], 1),
            "hybrid_vs_fts": round(rps["hybrid"] / rps["fts"], 2) if rps["fts"] else None,
            "errors": totals["hybrid"][2] + totals["fts"][2],
        }

    @staticmethod
    def _cold_starts(count: int, port: int, corpus: Corpus) -> dict[str, Any]:
        """Start a one-worker gunicorn ``count`` times (this process's environment and working
        directory), wait for ``/health/live``, time the first and the second prepare, stop it."""
        base = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"}
        command = [
            sys.executable,
            "-m",
            "gunicorn",
            "powercontext.wsgi",
            "-w",
            "1",
            "-b",
            f"127.0.0.1:{port}",
        ]
        first: list[float] = []
        second: list[float] = []
        ready: list[float] = []
        for _ in range(count):
            started = time.perf_counter()
            server = subprocess.Popen([*command, "--log-level", "warning"], env=env)
            try:
                with httpx.Client(base_url=base, timeout=30) as client:
                    while True:
                        if server.poll() is not None:
                            raise RuntimeError("gunicorn exited before it answered")
                        try:
                            if client.get("/health/live").status_code == 200:
                                break
                        except httpx.TransportError:
                            pass
                        if time.perf_counter() - started > 120:
                            raise RuntimeError("gunicorn did not answer /health/live in 120 s")
                        time.sleep(0.05)  # polling a starting server, not timing anything
                    ready.append((time.perf_counter() - started) * 1000)
                    for out in (first, second):
                        body = {"scope_id": SCOPE, "query": corpus.query(), "max_bytes": 8000}
                        start = time.perf_counter()
                        response = client.post("/v1/context/prepare", json=body)
                        out.append((time.perf_counter() - start) * 1000)
                        if response.status_code != 200:
                            raise RuntimeError(f"unexpected status {response.status_code}")
            finally:
                server.terminate()
                server.wait(30)
        return {
            "starts": count,
            "first_prepare_ms": [round(v, 1) for v in first],
            "first_prepare_max_ms": round(max(first), 1),
            "second_prepare_ms": [round(v, 1) for v in second],
            "start_to_live_ms": [round(v) for v in ready],
            "load_average": load_average(),
        }
